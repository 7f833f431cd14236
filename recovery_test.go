package revkv_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// The tests of this file damage logs: their stores are unsealed
// (WithMemory(-1)), so that Close leaves the log.

// logOf writes revisions 1..n to a new directory and returns it and its
// one log segment.
func logOf(t *testing.T, n int) (dir, seg string) {
	dir = t.TempDir()
	s, err := revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	require.NoError(t, err)
	for range n {
		_, err := s.Put("k", "a value of some length")
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	return dir, segs[0]
}

// TestRecoveryReportsTornTail: a byte flipped in the last record is a torn
// tail Open may cut (contract §7.6), but never in silence: Recovery says
// which file, where, how many bytes and from which revision, whether Open
// cut them, and a read-only Open reports them too.
func TestRecoveryReportsTornTail(t *testing.T) {
	dir, seg := logOf(t, 10)
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	b[len(b)-3] ^= 0x10
	require.NoError(t, os.WriteFile(seg, b, 0o644))

	s, err := revkv.Open(dir, revkv.StringCodec(), revkv.WithReadOnly(), revkv.WithMemory(-1))
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(9), s.Rev())
	r, ok := s.Recovery()
	require.True(t, ok, "a read-only Open reports the torn tail")
	require.Equal(t, seg, r.File)
	require.Equal(t, revkv.Revision(10), r.Rev)
	require.Equal(t, int64(len(b))-r.Offset, r.Bytes)
	require.Greater(t, r.Bytes, int64(0))
	require.False(t, r.Cut)
	require.False(t, r.Damaged)
	require.Contains(t, r.String(), "could have held revision 10 and later")
	require.Equal(t, revkv.Revision(10), r.Reads, "the flipped record reads as revision 10")
	require.Contains(t, r.String(), "reads as revisions 10 to 10")
	require.Contains(t, r.String(), "left in place")
	require.NoError(t, s.Close())

	s, err = revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	require.NoError(t, err)
	r2, ok := s.Recovery()
	require.True(t, ok)
	require.True(t, r2.Cut)
	require.Equal(t, r.Offset, r2.Offset)
	require.Equal(t, r.Bytes, r2.Bytes)
	require.Contains(t, r2.String(), "cut from the log")
	require.NoError(t, s.Close())
	st, err := os.Stat(seg)
	require.NoError(t, err)
	require.Equal(t, r.Offset, st.Size())

	s, err = revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	require.NoError(t, err)
	_, ok = s.Recovery()
	require.False(t, ok, "a log of whole records reports nothing")
	require.NoError(t, s.Close())

	m := revkv.New[string]()
	_, ok = m.Recovery()
	require.False(t, ok)
	require.NoError(t, m.Close())
}

// TestRecoveryReportsRepair: WithRepair cuts a damaged record with whole
// records after it and reports what it moved where.
func TestRecoveryReportsRepair(t *testing.T) {
	dir, seg := logOf(t, 10)
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	b[40] ^= 0x10 // the first record's payload: the nine after it are whole
	require.NoError(t, os.WriteFile(seg, b, 0o644))

	_, err = revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	require.ErrorIs(t, err, revkv.ErrCorrupt)
	s, err := revkv.Open(dir, revkv.StringCodec(), revkv.WithRepair(), revkv.WithMemory(-1))
	require.NoError(t, err)
	defer s.Close()
	r, ok := s.Recovery()
	require.True(t, ok)
	require.True(t, r.Damaged)
	require.True(t, r.Cut)
	require.Equal(t, revkv.Revision(1), r.Rev)
	require.Equal(t, []string{seg + ".damaged"}, r.Moved)
	require.Equal(t, int64(len(b))-r.Offset, r.Bytes)
	require.True(t, strings.HasPrefix(r.String(), seg+": "), r.String())
	require.Contains(t, r.String(), "moved to "+seg+".damaged")
}

// TestRecoveryTornShort: a record cut short (a crash mid-write) reads as
// nothing: Recovery names the first revision it could have held, and no
// reading of it.
func TestRecoveryTornShort(t *testing.T) {
	dir, seg := logOf(t, 3)
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(seg, b[:len(b)-5], 0o644))
	s, err := revkv.Open(dir, revkv.StringCodec(), revkv.WithReadOnly(), revkv.WithMemory(-1))
	require.NoError(t, err)
	defer s.Close()
	r, ok := s.Recovery()
	require.True(t, ok)
	require.Equal(t, revkv.Revision(3), r.Rev)
	require.Zero(t, r.Reads)
	require.NotContains(t, r.String(), "reads as")
}
