package revkv_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
)

func exportOf(t *testing.T, m vfs.FS, dir, prefix string) []byte {
	t.Helper()
	s, err := revkv.Open(dir, revkv.StringCodec(), revkv.WithFS(m), revkv.WithReadOnly())
	require.NoError(t, err)
	defer s.Close()
	var b bytes.Buffer
	require.NoError(t, s.Export(&b, prefix))
	return b.Bytes()
}

// historyBase writes a history with every kind of entry on dir: TTLs that
// expire, deletes, annotated Updates, non-UTF-8 keys and values, a time
// zone, a history cap and a compaction, checkpointing as it goes.
func historyBase(t *testing.T, m vfs.FS, dir string, opts ...revkv.Option) {
	clock := newClock(time.Date(2026, 11, 24, 14, 2, 0, 0, time.FixedZone("CET", 3600)))
	opts = append([]revkv.Option{revkv.WithFS(m), revkv.WithClock(clock.Now), revkv.WithCheckpointBytes(4 << 10)}, opts...)
	s, err := revkv.Open(dir, revkv.StringCodec(), opts...)
	require.NoError(t, err)
	for i := range 600 {
		clock.Add(time.Duration(i%3) * 700 * time.Millisecond)
		k := fmt.Sprintf("k%02d", i%23)
		switch i % 6 {
		case 0:
			_, err = s.PutTTL(k, fmt.Sprint("v", i), time.Second)
		case 1:
			_, err = s.Update(func(tx *revkv.Txn[string]) error {
				tx.Annotate("who", fmt.Sprint("user", i%4))
				tx.Annotate("why", "a \"quoted\" <reason>\n")
				if i%12 == 1 {
					tx.Annotate("bin\xff", "\x00\xfe") // not UTF-8: the export's base64 form
				}
				if err := tx.Put(k, "u"); err != nil {
					return err
				}
				return tx.Put("\xff"+k, "\x00\xfe")
			})
		case 2:
			if _, err = s.Delete(k); err != nil && strings.Contains(err.Error(), "not found") {
				err = nil
			}
		default:
			_, err = s.Put(k, strings.Repeat("é", i%9))
		}
		require.NoError(t, err)
		if i == 300 {
			require.NoError(t, s.Compact(s.Rev()-40))
		}
	}
	require.NoError(t, s.Close())
}

// TestExportImport: export, import, export gives the same bytes, and the
// imported directory answers as the first: digests, floor, every key's
// history and annotations; writing the same to both keeps their digests
// equal.
func TestExportImport(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []revkv.Option
	}{{"plain", nil}, {"cap", []revkv.Option{revkv.WithMaxHistory(3)}}, {"retention", []revkv.Option{revkv.WithRetention(20 * time.Second)}}} {
		t.Run(c.name, func(t *testing.T) {
			for _, window := range []int{1, 7, 1 << 20} { // a segment every entry, a few, one
				t.Run(fmt.Sprint("window=", window), func(t *testing.T) {
					defer revkv.SetImportWindow(window)()
					checkExportImport(t, c.opts)
				})
			}
		})
	}
}

func checkExportImport(t *testing.T, opts []revkv.Option) {
	m := vfs.NewMem()
	historyBase(t, m, "/a", opts...)
	a := exportOf(t, m, "/a", "")
	rev, err := revkv.Import("/b", revkv.StringCodec(), bytes.NewReader(a), revkv.WithFS(m))
	require.NoError(t, err)
	b := exportOf(t, m, "/b", "")
	if !bytes.Equal(a, b) {
		al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
		for i := range min(len(al), len(bl)) {
			if al[i] != bl[i] {
				t.Fatalf("export, import, export differ at line %d (of %d, %d):\n%s\n%s", i+1, len(al), len(bl), al[i], bl[i])
			}
		}
		t.Fatalf("export, import, export: %d lines, then %d", len(al), len(bl))
	}
	later := func() time.Time { return time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) }
	sa, err := revkv.Open("/a", revkv.StringCodec(), revkv.WithFS(m), revkv.WithClock(later))
	require.NoError(t, err)
	sb, err := revkv.Open("/b", revkv.StringCodec(), revkv.WithFS(m), revkv.WithClock(later))
	require.NoError(t, err)
	require.Equal(t, sa.Rev(), rev)
	require.Equal(t, sa.Floor(), sb.Floor())
	require.Equal(t, exportState(t, sa), exportState(t, sb))
	for i := range 5 {
		_, err := sa.Put(fmt.Sprint("k", i), "after")
		require.NoError(t, err)
		_, err = sb.Put(fmt.Sprint("k", i), "after")
		require.NoError(t, err)
	}
	_, da, _ := sa.Digest()
	_, db, _ := sb.Digest()
	require.Equal(t, da, db, "the chain goes on alike")
	require.NoError(t, sa.Close())
	require.NoError(t, sb.Close())
}

// exportState is what an import must reproduce, as the store answers it.
func exportState(t *testing.T, s *revkv.Store[string]) string {
	var b strings.Builder
	rev, d, err := s.Digest()
	require.NoError(t, err)
	fmt.Fprintf(&b, "%d %x floor %d len %d\n", rev, d, s.Floor(), s.Len())
	for r := revkv.Revision(0); r <= rev; r++ {
		d, err := s.DigestAt(r)
		n, nerr := s.Annotations(r)
		if nerr != nil && r < s.Floor()-1 { // a digest DigestAt need not answer (nor refuse)
			d, err = [32]byte{}, nil
		}
		fmt.Fprintf(&b, "%d %x %v %v %v\n", r, d, sentinelOf(err), n, sentinelOf(nerr))
	}
	for i := range 23 {
		for _, k := range []string{fmt.Sprintf("k%02d", i), fmt.Sprintf("\xffk%02d", i)} {
			for _, e := range s.History(k) {
				fmt.Fprintf(&b, "%q %v %d %v %v %q\n", k, e.Op, e.Rev, e.Time, e.ExpiresAt, e.Value)
			}
			for r := revkv.Revision(0); r <= rev; r += 7 {
				v, ok, err := s.GetAt(k, r)
				fmt.Fprintf(&b, "%d %q %v %v|", r, v, ok, sentinelOf(err))
			}
		}
	}
	return b.String()
}

// TestImportRefuses: what Import must not take, and that it then leaves the
// directory as it was.
func TestImportRefuses(t *testing.T) {
	m := vfs.NewMem()
	historyBase(t, m, "/a")
	good := exportOf(t, m, "/a", "")
	lines := strings.SplitAfter(string(good), "\n")
	mid := len(lines) / 2
	for name, data := range map[string]string{
		"empty":                 "",
		"no header":             strings.Join(lines[1:], ""),
		"prefix":                string(exportOf(t, m, "/a", "k0")),
		"cut short":             strings.Join(lines[:mid], ""),
		"a value changed":       strings.Replace(string(good), `"value":"v`, `"value":"w`, 1),
		"a time changed":        strings.Replace(string(good), `.7+01:00"`, `.700000001+01:00"`, 1),
		"a note changed":        strings.Replace(string(good), `"who":"user3"`, `"who":"user5"`, 1),
		"a binary note changed": strings.Replace(string(good), `"Ymlu/w==":"`, `"Ymlu/g==":"`, 1),
		"a line dropped":        strings.Join(append(append([]string{}, lines[:mid]...), lines[mid+1:]...), ""),
		"lines swapped":         strings.Join(append(append(append([]string{}, lines[:mid]...), lines[mid+1], lines[mid]), lines[mid+2:]...), ""),
		"not json":              lines[0] + "{\"rev\":\n",
		"floor off":             strings.Replace(string(good), `"floor":`, `"floor":1`, 1),
		"a digest changed":      strings.Replace(string(good), `"digest":"`, `"digest":"0`, 1),
		// Not in the chain, so checked on its own: a revision before the key's first.
		"dropped past its entry": lines[0] + strings.Replace(lines[1], "{", `{"dropped":4611686018427387904,`, 1) + strings.Join(lines[2:], ""),
		"dropped negative":       lines[0] + strings.Replace(lines[1], "{", `{"dropped":-1,`, 1) + strings.Join(lines[2:], ""),
	} {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, string(good), data, "the case changes nothing")
			_, err := revkv.Import("/new", revkv.StringCodec(), strings.NewReader(data), revkv.WithFS(m))
			require.Error(t, err)
			_, lerr := m.List("/new")
			require.Error(t, lerr, "a failed import leaves no directory behind")
		})
	}
	m.MkdirAll("/full")
	m.WriteFile("/full/x", []byte("keep"))
	_, err := revkv.Import("/full", revkv.StringCodec(), bytes.NewReader(good), revkv.WithFS(m))
	require.ErrorContains(t, err, "not empty")
	require.Equal(t, "keep", string(m.Bytes("/full/x")))
	names, _ := m.List("/full")
	require.Equal(t, []string{"x"}, names)
}

// sentinelOf returns the sentinel err wraps, so that errors with other
// details compare.
func sentinelOf(err error) error {
	for _, s := range []error{revkv.ErrCompacted, revkv.ErrFutureRevision} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// TestImportFaults fails each file operation of an import in turn, and
// cuts the power at each: a failed Import leaves no directory behind, and
// what a crash leaves is refused by Open, or is empty, or is the whole
// store; never a part of it that Open takes for a store.
func TestImportFaults(t *testing.T) {
	src := vfs.NewMem()
	historyBase(t, src, "/a")
	data := exportOf(t, src, "/a", "")
	defer revkv.SetImportWindow(50)() // several segments
	clean := vfs.NewMem()
	_, err := revkv.Import("/b", revkv.StringCodec(), bytes.NewReader(data), revkv.WithFS(clean))
	require.NoError(t, err)
	ops := clean.Ops()
	want := exportOf(t, clean, "/b", "")
	// The segments without the snapshot that says how far the history
	// goes: damage, not an empty store.
	names, err := clean.List("/b")
	require.NoError(t, err)
	cut := vfs.NewMem()
	for _, n := range names {
		if !strings.HasSuffix(n, ".snap") {
			cut.WriteFile("/b/"+n, clean.Bytes("/b/"+n))
		}
	}
	_, err = revkv.Open("/b", revkv.StringCodec(), revkv.WithFS(cut), revkv.WithReadOnly())
	require.ErrorIs(t, err, revkv.ErrCorrupt)
	for k := 1; k <= ops; k++ {
		m := vfs.NewMem()
		n := 0
		m.SetFault(func(vfs.Op, string) error {
			if n++; n == k {
				return errors.New("injected")
			}
			return nil
		})
		_, err := revkv.Import("/b", revkv.StringCodec(), bytes.NewReader(data), revkv.WithFS(m))
		require.Error(t, err, "operation %d of %d failed", k, ops)
		_, lerr := m.List("/b")
		require.Error(t, lerr, "operation %d of %d failed: a failed import leaves no directory behind", k, ops)

		m = vfs.NewMem()
		m.CrashAfter(k-1, rand.New(rand.NewPCG(uint64(k), 0))) // at operation k
		revkv.Import("/b", revkv.StringCodec(), bytes.NewReader(data), revkv.WithFS(m))
		crashed := m.Crashed()
		s, err := revkv.Open("/b", revkv.StringCodec(), revkv.WithFS(crashed), revkv.WithReadOnly())
		switch {
		case err != nil:
			require.True(t, errors.Is(err, revkv.ErrCorrupt) || errors.Is(err, fs.ErrNotExist), "a power cut at operation %d of %d: %v", k, ops, err)
		case s.Rev() == 0:
			s.Close()
			_, err := crashed.ReadFile("/b/MANIFEST")
			require.Error(t, err, "a power cut at operation %d of %d: an empty store with segments", k, ops)
		default:
			s.Close()
			require.Equal(t, string(want), string(exportOf(t, crashed, "/b", "")), "a power cut at operation %d of %d", k, ops)
		}
	}
}

// TestImportStopsAtTheBadLine: Import answers at a line it cannot take,
// without waiting for the rest of a stream that is still coming, and
// removes the directories it made.
func TestImportStopsAtTheBadLine(t *testing.T) {
	m := vfs.NewMem()
	historyBase(t, m, "/a")
	lines := strings.SplitAfter(string(exportOf(t, m, "/a", "")), "\n")
	r, w := io.Pipe()
	defer w.Close()
	go func() {
		io.WriteString(w, lines[0]+lines[1]+"not json\n") // and then nothing, for ever
	}()
	done := make(chan error, 1)
	go func() {
		_, err := revkv.Import("/x/y/db", revkv.StringCodec(), r, revkv.WithFS(m))
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "line 3")
	case <-time.After(10 * time.Second):
		w.CloseWithError(errors.New("the test gave up"))
		<-done
		t.Fatal("Import waited for more of the stream after a bad line")
	}
	_, err := m.List("/x")
	require.ErrorIs(t, err, fs.ErrNotExist, "the directories Import made are gone")
}
