package revkv_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
)

// TestExportEveryTime: a store whose clock gives a time RFC 3339 cannot
// write exactly (an offset that is not whole minutes, as New York's
// -4:56:02 in 1850; a year before 1; a year after 9999) exports, imports
// to the same digests, exports again to the same bytes, and every digest
// is recomputed from the export's lines alone, as the package doc says.
func TestExportEveryTime(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"local mean time", time.Date(1850, 6, 1, 12, 0, 0, 5, ny)},
		{"a fixed zone of seconds", time.Date(2024, 3, 1, 12, 0, 0, 0, time.FixedZone("LMT", -(4*3600+56*60+2)))},
		{"before year 1", time.Date(-5, 3, 1, 12, 0, 0, 7, time.UTC)},
		{"year 1", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"after year 9999", time.Date(12024, 3, 1, 12, 0, 0, 9, time.UTC)},
		{"ordinary", time.Date(2024, 3, 1, 12, 0, 0, 9, time.FixedZone("CET", 3600))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			s, err := revkv.Open("/a", revkv.StringCodec(), revkv.WithFS(fs), revkv.WithClock(func() time.Time { return tc.at }))
			require.NoError(t, err)
			_, err = s.Put("k", "v")
			require.NoError(t, err)
			_, err = s.Update(func(tx *revkv.Txn[string]) error {
				tx.Annotate("who", "ana")
				return tx.Put("k", "w")
			})
			require.NoError(t, err)
			e, _ := s.GetEntry("k")
			require.True(t, e.Time.Equal(tc.at) || tc.at.Year() < 1, "the store keeps the clock's instant: %v", e.Time)
			head, want, err := s.Digest()
			require.NoError(t, err)
			var out bytes.Buffer
			require.NoError(t, s.Export(&out, ""))
			require.NoError(t, s.Close())

			recomputeDigests(t, out.String(), want)

			_, err = revkv.Import("/b", revkv.StringCodec(), bytes.NewReader(out.Bytes()), revkv.WithFS(fs))
			require.NoError(t, err, "%s", out.String())
			s2, err := revkv.Open("/b", revkv.StringCodec(), revkv.WithFS(fs))
			require.NoError(t, err)
			defer s2.Close()
			h2, got, err := s2.Digest()
			require.NoError(t, err)
			require.Equal(t, head, h2)
			require.Equal(t, want, got)
			e2, _ := s2.GetEntry("k")
			require.True(t, e2.Time.Equal(e.Time), "%v, %v", e2.Time, e.Time)
			require.Equal(t, e.Time.Location().String(), e2.Time.Location().String())
			var again bytes.Buffer
			require.NoError(t, s2.Export(&again, ""))
			require.Equal(t, out.String(), again.String(), "export, import, export: the same bytes")
		})
	}
}

// recomputeDigests recomputes D(r) of every line of an export from the
// line alone, by the encoding the package doc gives, and checks each
// against the line's digest and the last against want.
func recomputeDigests(t *testing.T, export string, want [32]byte) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(export), "\n")
	var d [32]byte
	for _, line := range lines[1:] {
		var l struct {
			Rev         int64             `json:"rev"`
			Time        string            `json:"time"`
			Key         string            `json:"key"`
			Op          string            `json:"op"`
			Value       *string           `json:"value"`
			ExpiresAt   string            `json:"expires_at"`
			Annotations map[string]string `json:"annotations"`
			Digest      string            `json:"digest"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		sec, nsec := docTime(t, l.Time)
		var b []byte
		b = binary.BigEndian.AppendUint64(b, uint64(l.Rev))
		b = binary.BigEndian.AppendUint32(b, uint32(len(l.Key)))
		b = append(b, l.Key...)
		b = append(b, map[string]byte{"put": 1, "delete": 2, "expire": 3}[l.Op])
		b = binary.BigEndian.AppendUint64(b, uint64(sec))
		b = binary.BigEndian.AppendUint32(b, uint32(nsec))
		b = append(b, 0)
		b = binary.BigEndian.AppendUint64(b, 0)
		v := ""
		if l.Value != nil {
			v = *l.Value
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(l.Annotations)))
		for k, v := range l.Annotations { // one note in these stores
			b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
			b = append(b, k...)
			b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
			b = append(b, v...)
		}
		d = sha256.Sum256(append(d[:], b...))
		require.Equal(t, l.Digest, hex.EncodeToString(d[:]), "revision %d, recomputed from %s", l.Rev, line)
	}
	require.Equal(t, want, d)
}

// docTime reads a time of an export as the package doc says: "@" Unix
// seconds "." 9 digits of nanoseconds, or RFC 3339.
func docTime(t *testing.T, s string) (sec int64, nsec int32) {
	t.Helper()
	if rest, ok := strings.CutPrefix(s, "@"); ok {
		a, b, _ := strings.Cut(rest, ".")
		var err error
		sec, err = strconv.ParseInt(a, 10, 64)
		require.NoError(t, err, s)
		n, err := strconv.ParseInt(b, 10, 32)
		require.NoError(t, err, s)
		require.Len(t, b, 9, s)
		return sec, int32(n)
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err, s)
	return tm.Unix(), int32(tm.Nanosecond())
}
