package revkv_test

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

var killCycles = flag.Int("kill-cycles", 3, "kill -9 cycles per sync mode of TestCrash and TestCrashConcurrent (skipped under -short)")

// crashModes are the sync modes the kill -9 tests run in, by the name the
// child is given.
var crashModes = map[string]revkv.SyncMode{"always": revkv.SyncAlways, "interval": revkv.SyncInterval, "never": revkv.SyncNever, "sealed": revkv.SyncAlways}

// crashOptions are the child's options in a mode: "sealed" is SyncAlways
// with history sealed every few KiB, so that kills land in seals.
func crashOptions(mode string) []revkv.Option {
	opts := []revkv.Option{revkv.WithCheckpointBytes(256 << 10), revkv.WithSync(crashModes[mode]), revkv.WithSyncInterval(100 * time.Millisecond)}
	if mode == "sealed" {
		opts = append(opts, revkv.WithMemory(16<<10))
	}
	return opts
}

// crashKey is the key revision r writes in TestCrash: every revision's key
// and value follow from its number, so a reopened store can be checked
// revision by revision.
func crashKey(r int64) string { return fmt.Sprint("k", r%37) }

// writeNext writes the store's next revision r (crashKey(r) = r), or with
// three the next three in one Update (each = r), and returns the last.
func writeNext(s *revkv.Store[string], three bool) (revkv.Revision, error) {
	next := int64(s.Rev()) + 1
	if !three {
		return s.Put(crashKey(next), fmt.Sprint(next))
	}
	return s.Update(func(tx *revkv.Txn[string]) error {
		for j := range int64(3) {
			if err := tx.Put(crashKey(next+j), fmt.Sprint(next)); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestCrash runs a child process that writes as fast as it can (single
// Puts, and Updates of three keys), printing every revision acknowledged,
// and kills it with SIGKILL at a random moment, over and over on one
// directory, in each sync mode. After each kill the directory must open
// with every acknowledged revision, and hold exactly the revisions
// 1..Rev(): no gap, no torn entry, no batch in part, every value the one
// written. A kill is a crash of the process alone: the operating system
// keeps what was handed to it, so no mode may lose an acknowledged write
// (what SyncInterval and SyncNever lose at a power cut is
// TestSyncIntervalLoss's and TestCrashAtEveryOperation's). Then the same
// with four writer goroutines sharing drains (TestCrashConcurrent).
func TestCrash(t *testing.T) {
	if dir := os.Getenv("REVKV_CRASH_CHILD"); dir != "" {
		crashChild(dir, os.Getenv("REVKV_CRASH_SYNC"))
		return
	}
	if testing.Short() || *killCycles == 0 {
		t.Skip("kill -9 cycles: run without -short")
	}
	for _, mode := range []string{"always", "interval", "never", "sealed"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			lost := 0
			for cycle := range *killCycles {
				var acked int64 // the last revision acknowledged
				killChild(t, rng, [2]int{100, 500}, "TestCrash", []string{"REVKV_CRASH_CHILD=" + dir, "REVKV_CRASH_SYNC=" + mode}, func(line string) {
					if r, ok := strings.CutPrefix(line, "ack "); ok {
						acked, _ = strconv.ParseInt(r, 10, 64)
					}
				})
				s, err := revkv.Open(dir, revkv.StringCodec())
				require.NoError(t, err, "cycle %d", cycle)
				checkCrashHistory(t, s)
				if int64(s.Rev()) < acked {
					lost++
					t.Errorf("cycle %d: %d acknowledged, %d recovered: %d acknowledged writes lost", cycle, acked, s.Rev(), acked-int64(s.Rev()))
				}
				require.NoError(t, s.Close())
			}
			t.Logf("%s: %d kill -9 cycles, %d lost acknowledged writes", mode, *killCycles, lost)
		})
	}
}

// killChild runs test in a child process of this binary with env set,
// hands each line it prints to line, and kills it with SIGKILL after a
// random runFor[0] to runFor[1] milliseconds; the lines it printed before
// it died are handed on too.
func killChild(t *testing.T, rng *rand.Rand, runFor [2]int, test string, env []string, line func(string)) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v=false")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(out)
	deadline := time.Now().Add(time.Duration(runFor[0]+rng.Intn(runFor[1]-runFor[0])) * time.Millisecond)
	for lines.Scan() {
		line(lines.Text())
		if time.Now().After(deadline) {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	for lines.Scan() { // what it printed before it died was acknowledged too
		line(lines.Text())
	}
	cmd.Wait()
}

func checkCrashHistory(t *testing.T, s *revkv.Store[string]) {
	var all []revkv.Entry[string]
	for k := range 37 {
		all = append(all, s.History(fmt.Sprint("k", k))...)
	}
	slices.SortFunc(all, func(a, b revkv.Entry[string]) int { return int(a.Rev - b.Rev) })
	require.Len(t, all, int(s.Rev()), "revisions 1..Rev(), each once")
	for i, e := range all {
		r := int64(i + 1)
		require.Equal(t, revkv.Revision(r), e.Rev)
		require.Equal(t, crashKey(r), e.Key)
		// A batch's three revisions carry its first revision as value.
		first, err := strconv.ParseInt(e.Value, 10, 64)
		require.NoError(t, err)
		require.True(t, first == r || first >= r-2 && first < r, "revision %d holds %q", r, e.Value)
		if first != r { // inside a batch: the whole batch is there
			require.GreaterOrEqual(t, int64(s.Rev()), first+2, "batch at %d in part", first)
		}
	}
}

func crashChild(dir, mode string) {
	s, err := revkv.Open(dir, revkv.StringCodec(), crashOptions(mode)...)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		rev, err := writeNext(s, i%4 == 0)
		if err != nil {
			fmt.Fprintln(w, "error:", err)
			w.Flush()
			os.Exit(1)
		}
		fmt.Fprintln(w, "ack", rev)
		w.Flush()
	}
}

// TestCrashConcurrent is TestCrash with four goroutines writing at once
// (sharing drains), in each sync mode: after each SIGKILL every write a
// writer was told of is there, revisions are 1..Rev() once each, and each
// writer's writes are there as a prefix of its sequence, values intact.
func TestCrashConcurrent(t *testing.T) {
	if dir := os.Getenv("REVKV_CRASH_CONCURRENT"); dir != "" {
		crashConcurrentChild(dir, os.Getenv("REVKV_CRASH_SYNC"))
		return
	}
	if testing.Short() || *killCycles == 0 {
		t.Skip("kill -9 cycles: run without -short")
	}
	for _, mode := range []string{"always", "interval", "never", "sealed"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			lost := 0
			for cycle := range *killCycles {
				acked := map[string]int{} // writer → its last acknowledged sequence number
				killChild(t, rng, [2]int{100, 500}, "TestCrashConcurrent", []string{"REVKV_CRASH_CONCURRENT=" + dir, "REVKV_CRASH_SYNC=" + mode}, func(line string) {
					var w string
					var i int
					if n, _ := fmt.Sscanf(line, "ack %s %d", &w, &i); n == 2 {
						acked[w] = i
					}
				})
				s, err := revkv.Open(dir, revkv.StringCodec())
				require.NoError(t, err, "cycle %d", cycle)
				var all []revkv.Entry[string]
				for k := range s.Scan("") {
					all = append(all, s.History(k)...)
				}
				slices.SortFunc(all, func(a, b revkv.Entry[string]) int { return int(a.Rev - b.Rev) })
				require.Len(t, all, int(s.Rev()), "revisions 1..Rev(), each once")
				last := map[string]int{}
				for i, e := range all {
					require.Equal(t, revkv.Revision(i+1), e.Rev)
					var w string
					var seq int
					_, err := fmt.Sscanf(e.Value, "%s %d", &w, &seq)
					require.NoError(t, err, "revision %d holds %q", e.Rev, e.Value)
					require.Equal(t, fmt.Sprint(w, "/", seq%7), e.Key)
					prev, seen := last[w]
					if !seen {
						prev = -1
					}
					require.Greater(t, seq, prev, "writer %s in order", w)
					last[w] = seq
				}
				for w, i := range acked {
					if got, ok := last[w]; !ok || got < i {
						lost++
						t.Errorf("cycle %d: writer %s's acknowledged write %d is lost (recovered up to %d)", cycle, w, i, got)
					}
				}
				require.NoError(t, s.Close())
			}
			t.Logf("%s: %d kill -9 cycles, %d with lost acknowledged writes", mode, *killCycles, lost)
		})
	}
}

func crashConcurrentChild(dir, mode string) {
	s, err := revkv.Open(dir, revkv.StringCodec(), crashOptions(mode)...)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	// Each writer goes on from its last sequence number in the store.
	start := map[string]int{}
	for k := range s.Scan("") {
		for _, e := range s.History(k) {
			var w string
			var seq int
			fmt.Sscanf(e.Value, "%s %d", &w, &seq)
			start[w] = max(start[w], seq+1)
		}
	}
	var mu sync.Mutex // guards stdout
	for w := range 4 {
		name := fmt.Sprint("w", w)
		go func() {
			for i := start[name]; ; i++ {
				if _, err := s.Put(fmt.Sprint(name, "/", i%7), fmt.Sprint(name, " ", i)); err != nil {
					fmt.Println("error:", err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Println("ack", name, i)
				mu.Unlock()
			}
		}()
	}
	select {}
}
