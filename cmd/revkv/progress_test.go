package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// fakeTime is a clock that moves only when told.
type fakeTime struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeTime) read() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// TestProgressIsRateLimited: the line is written at most every 200 ms, not
// before 200 ms of the run have passed (a short run shows nothing), each
// time over the last one, and erased at the end.
func TestProgressIsRateLimited(t *testing.T) {
	var w bytes.Buffer
	clk := &fakeTime{now: t0}
	p := newProgress(&w, "exporting", clk.read)
	p.report(1)
	clk.add(199 * time.Millisecond)
	p.report(2)
	require.Empty(t, w.String(), "nothing before 200 ms")
	clk.add(time.Millisecond)
	p.report(3)
	require.Equal(t, "\r\x1b[Kexporting: revision 3", w.String())
	clk.add(150 * time.Millisecond)
	p.report(4)
	require.Equal(t, "\r\x1b[Kexporting: revision 3", w.String(), "at most every 200 ms")
	clk.add(50 * time.Millisecond)
	p.report(5)
	p.done()
	require.Equal(t, "\r\x1b[Kexporting: revision 3\r\x1b[Kexporting: revision 5\r\x1b[K", w.String())
	p.done()
	require.True(t, strings.HasSuffix(w.String(), "5\r\x1b[K"), "erased once")

	w.Reset()
	p.next("importing", 40)
	p.report(10)
	clk.add(time.Second)
	p.report(10)
	p.done()
	require.Equal(t, "\r\x1b[Kimporting: revision 10 of 40 (25%)\r\x1b[K", w.String(), "a new stage starts its own 200 ms")

	var none *progress // what a run whose stderr is not a terminal has
	none.report(1)
	none.next("x", 1)
	none.done()
}

// TestProgressOnlyOnATerminal: progress goes to stderr only when it is a
// character device; a pipe, a buffer or a file gets none.
func TestProgressOnlyOnATerminal(t *testing.T) {
	require.False(t, isTerminal(&bytes.Buffer{}))
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer f.Close()
	require.False(t, isTerminal(f))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.False(t, isTerminal(w))
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer devNull.Close()
	if fi, err := devNull.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		require.True(t, isTerminal(devNull), "a character device")
	} else {
		// A machine whose /dev/null something replaced with a file (one
		// of ours was, once, by something outside this repository).
		t.Logf("%s is not a character device here: not checked", os.DevNull)
	}

	dir := fixture(t)
	require.Equal(t, 0, run([]string{"--dir", dir, "scan"}, strings.NewReader(""), &bytes.Buffer{}, f))
	st, err := f.Stat()
	require.NoError(t, err)
	require.Zero(t, st.Size(), "no progress on a file")
	require.Nil(t, newCLI(nil, f, f).progress("x"))
}

// bigStore writes revisions revisions (in Updates of 1,000 puts, so
// that it takes few syncs) into a new directory.
func bigStore(t *testing.T, revisions int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "big")
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithMemory(-1)) // unsealed: Open replays its log
	require.NoError(t, err)
	for i := 0; i < revisions; i += 1000 {
		_, err := s.Update(func(tx *revkv.Txn[[]byte]) error {
			for j := range min(1000, revisions-i) {
				if err := tx.Put(fmt.Sprintf("key/%04d", j), []byte(strconv.Itoa(i+j))); err != nil {
					return err
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	return dir
}

// TestProgressShown runs export, import, verify and info with stderr taken
// for a terminal and a clock that moves a second each time it is read, so
// that every report is shown: stderr gets the progress lines, each erased
// at the end, and stdout only the output. It needs WithProgress to call
// back (a stub until the audit functions land) at least once in the
// 100,000 revisions of each run.
func TestProgressShown(t *testing.T) {
	dir := bigStore(t, 100_000)
	runTerm := func(stdin string, stdoutTerm bool, args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		c := newCLI(strings.NewReader(stdin), &out, &errOut)
		c.stderrTerm, c.stdoutTerm = true, stdoutTerm
		clk := &fakeTime{now: t0}
		c.now = func() time.Time { clk.add(time.Second); return clk.read() }
		code = c.run(args)
		return code, out.String(), errOut.String()
	}
	code, exported, stderr := runTerm("", false, "--dir", dir, "export")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, ok(t, "--dir", dir, "export"), exported, "progress only on stderr")
	require.Contains(t, stderr, "\r\x1b[Kreading "+dir+": revision ")
	require.Contains(t, stderr, "\r\x1b[Kexporting: revision ")
	require.Contains(t, stderr, " of 100000 (")
	require.True(t, strings.HasSuffix(stderr, "\r\x1b[K"), "the line is erased: %q", stderr)

	dst := filepath.Join(t.TempDir(), "copy")
	code, _, stderr = runTerm(exported, false, "--dir", dst, "import")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "\r\x1b[Kimporting into "+dst+": revision ")
	require.True(t, strings.HasSuffix(stderr, "\r\x1b[K"), "%q", stderr)

	for _, cmd := range []string{"verify", "info"} {
		code, out, stderr := runTerm("", false, "--dir", dir, cmd)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, ok(t, "--dir", dir, cmd), out)
		require.Contains(t, stderr, "\r\x1b[Kreading "+dir+": revision ")
		require.True(t, strings.HasSuffix(stderr, "\r\x1b[K"), "%q", stderr)
	}

	// With stdout a terminal too, export shows no progress: it would be
	// written over the export.
	code, _, stderr = runTerm("", true, "--dir", dir, "export")
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stderr)
}
