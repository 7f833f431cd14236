package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// t0 is the fixture's first revision's time.
var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a test clock that stands still until set: a revision's time does
// not depend on how often the store reads the clock.
type clock struct{ now time.Time }

func (c *clock) read() time.Time { return c.now }

// fixture writes the test data directory, unsealed, and closes it. Its
// history, with the clock advancing from t0 (UTC):
//
//	rev  time    what
//	1    +0s     put config/a=v1
//	2    +1s     put config/b=blue
//	3    +2s     put session/x=tok, TTL 5s (expires at +7s)
//	4    +3s     put config/a=v2
//	5    +4s     put bin/blob=ff 00 01 (not UTF-8: base64)
//	6    +5s     delete config/b
//	7    +7s     expire session/x (written by the Update at +15s)
//	8    +15s    put config/a=v3       } one Update, annotated
//	9    +15s    put config/c=new      } who=alice why="rotate key"
//	-            compact 3, checkpoint (a snapshot at 9; the log after it)
//	10   +16s    put session/long=keep, expires 2200-01-01 (live)
//	11   +17s    put "key with space"="multi\nline"
//	12   +18s    put session/y=soon, TTL 1s (expired by now, not yet written)
//
// Live now: bin/blob, config/a, config/c, key with space, session/long.
func fixture(t *testing.T) string {
	t.Helper()
	return fixtureWith(t, revkv.WithMemory(-1)) // unsealed: Close leaves the log
}

// sealedFixture is fixture written with the default memory bound: its
// checkpoint seals revisions 1 to 9 and Close seals the rest, so that
// the directory holds two segments and a snapshot of the newest entries.
func sealedFixture(t *testing.T) string {
	t.Helper()
	return fixtureWith(t)
}

func fixtureWith(t *testing.T, opts ...revkv.Option) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	clk := &clock{now: t0}
	s, err := revkv.Open(dir, revkv.BytesCodec(), append(opts, revkv.WithClock(clk.read))...)
	require.NoError(t, err)
	at := func(d time.Duration) { clk.now = t0.Add(d) }
	put := func(k, v string) {
		_, err := s.Put(k, []byte(v))
		require.NoError(t, err)
	}
	put("config/a", "v1")
	at(time.Second)
	put("config/b", "blue")
	at(2 * time.Second)
	_, err = s.PutTTL("session/x", []byte("tok"), 5*time.Second)
	require.NoError(t, err)
	at(3 * time.Second)
	put("config/a", "v2")
	at(4 * time.Second)
	put("bin/blob", "\xff\x00\x01")
	at(5 * time.Second)
	_, err = s.Delete("config/b")
	require.NoError(t, err)
	at(15 * time.Second)
	rev, err := s.Update(func(tx *revkv.Txn[[]byte]) error {
		tx.Annotate("who", "alice")
		tx.Annotate("why", "rotate key")
		require.NoError(t, tx.Put("config/a", []byte("v3")))
		return tx.Put("config/c", []byte("new"))
	})
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(9), rev)
	require.NoError(t, s.Compact(3))
	require.NoError(t, s.Checkpoint())
	at(16 * time.Second)
	_, err = s.PutExpiresAt("session/long", []byte("keep"), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	at(17 * time.Second)
	put("key with space", "multi\nline")
	at(18 * time.Second)
	_, err = s.PutTTL("session/y", []byte("soon"), time.Second)
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(12), s.Rev())
	require.NoError(t, s.Close())
	return dir
}

// fresh returns a directory a store was opened on and closed, with nothing
// written.
func fresh(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fresh")
	s, err := revkv.Open(dir, revkv.BytesCodec())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	return dir
}

// damaged returns a directory whose log has a flipped byte in its middle,
// with whole records after it: corrupt, not a torn tail.
func damaged(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "damaged")
	// A fixed clock: the records' sizes, and so the byte the damage hits
	// (inside a record, not its length), are the same at every run.
	at := time.Date(2026, 11, 24, 14, 2, 0, 123456789, time.UTC)
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithMemory(-1), revkv.WithClock(func() time.Time { return at })) // unsealed: the damage is in its log
	require.NoError(t, err)
	for i := range 50 {
		_, err := s.Put(fmt.Sprintf("k%02d", i), []byte("value"))
		require.NoError(t, err)
	}
	require.NoError(t, s.Sync())
	require.NoError(t, s.Close())
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(logs[0], b, 0o644))
	return dir
}

// hold opens dir and keeps it open (locked) until the test ends.
func hold(t *testing.T, dir string) {
	t.Helper()
	s, err := revkv.Open(dir, revkv.BytesCodec())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
}

// result is what one run of the tool did.
type result struct {
	code           int
	stdout, stderr string
}

// runTool runs the tool in process with args and stdin.
func runTool(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// ok runs the tool and requires it to succeed, saying nothing on stderr.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := runTool(t, "", args...)
	require.Equal(t, 0, r.code, "revkv %q: %s", args, r.stderr)
	require.Empty(t, r.stderr)
	return r.stdout
}

// hashDir is the contents of every file under dir, by path: a directory
// whose bytes changed, or that gained or lost a file, hashes differently.
func hashDir(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = sha256.Sum256(b)
		return err
	})
	if !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	return out
}
