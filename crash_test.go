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

var crashesFlag = flag.Int("crashes", 3, "kill -9 cycles of TestCrash (skipped under -short)")

// crashKey is the key revision r writes in TestCrash: every revision's key
// and value follow from its number, so a reopened store can be checked
// revision by revision.
func crashKey(r int64) string { return fmt.Sprint("k", r%37) }

// TestCrash runs a child process that writes as fast as it can under
// SyncAlways (single Puts, and Updates of three keys), printing every
// revision acknowledged, and kills it with SIGKILL at a random moment, over
// and over on one directory. After each kill the directory must open with
// every acknowledged revision, and hold exactly the revisions 1..Rev(): no
// gap, no torn entry, no batch in part, every value the one written. Then
// the same with four writer goroutines sharing syncs (TestCrashConcurrent).
//
// Under SyncInterval and SyncNever a write returns before its records are
// handed to the operating system (the flusher writes them a moment later,
// and at least every WithSyncInterval: 100 ms here), so a killed process
// may lose the writes of that last moment: every revision acknowledged
// more than the interval (plus a margin for a loaded machine) before the
// kill must be there; their children run long enough that some must, and
// the test fails if none ever had to. What those modes lose at a power
// cut is TestSyncIntervalLoss's.
func TestCrash(t *testing.T) {
	if dir := os.Getenv("REVKV_CRASH_CHILD"); dir != "" {
		crashChild(dir, os.Getenv("REVKV_CRASH_SYNC"))
		return
	}
	if testing.Short() || *crashesFlag == 0 {
		t.Skip("kill -9 cycles: run without -short")
	}
	for _, mode := range []string{"always", "interval", "never"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			// A child runs 100-500 ms; under the async modes 800-1,500 ms,
			// well past the loss allowed at the kill (crashInterval +
			// crashMargin), so that what it wrote first had to survive.
			runFor := [2]int{100, 500}
			if mode != "always" {
				runFor = [2]int{800, 1500}
			}
			checked := int64(0) // the most revisions that had to survive a kill
			for cycle := range *crashesFlag {
				// acked is the last revision acknowledged; sure, the last
				// one that must survive (under SyncAlways, the same).
				var acked, sure int64
				var acks []timedAck
				killChild(t, rng, runFor, "TestCrash", []string{"REVKV_CRASH_CHILD=" + dir, "REVKV_CRASH_SYNC=" + mode}, func(line string) {
					if r, ok := strings.CutPrefix(line, "ack "); ok {
						acked, _ = strconv.ParseInt(r, 10, 64)
						acks = append(acks, timedAck{acked, time.Now()})
					}
				})
				killed := time.Now()
				sure = acked
				if mode != "always" {
					sure = 0
					for _, a := range acks {
						if killed.Sub(a.at) > crashInterval+crashMargin {
							sure = a.rev
						}
					}
				}
				s, err := revkv.Open(dir, revkv.StringCodec())
				require.NoError(t, err, "cycle %d", cycle)
				require.GreaterOrEqual(t, int64(s.Rev()), sure, "cycle %d: every revision acknowledged in time survives", cycle)
				checkCrashHistory(t, s)
				t.Logf("cycle %d: %d acknowledged, %d recovered (%d acknowledged lost, %d had to survive)", cycle, acked, s.Rev(), max(0, acked-int64(s.Rev())), sure)
				require.NoError(t, s.Close())
				checked = max(checked, sure)
			}
			require.Positive(t, checked, "some acknowledged revision had to survive a kill")
		})
	}
}

// crashInterval is the WithSyncInterval of TestCrash's child; crashMargin,
// how late a tick of the flusher may be on a loaded machine.
const crashInterval, crashMargin = 100 * time.Millisecond, 400 * time.Millisecond

// timedAck is a revision the child acknowledged, and when the parent read it
// (at or after the child acknowledged it).
type timedAck struct {
	rev int64
	at  time.Time
}

// killChild runs test in a child process of this binary with env set,
// hands each line it prints to line, and kills it with SIGKILL after a
// random runFor[0] to runFor[1] milliseconds.
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
	sync := map[string]revkv.SyncMode{"always": revkv.SyncAlways, "interval": revkv.SyncInterval, "never": revkv.SyncNever}[mode]
	s, err := revkv.Open(dir, revkv.StringCodec(), revkv.WithCheckpointBytes(256<<10), revkv.WithSync(sync), revkv.WithSyncInterval(crashInterval))
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		next := int64(s.Rev()) + 1
		var rev revkv.Revision
		if i%4 == 0 {
			rev, err = s.Update(func(tx *revkv.Txn[string]) error {
				for j := range int64(3) {
					if err := tx.Put(crashKey(next+j), fmt.Sprint(next)); err != nil {
						return err
					}
				}
				return nil
			})
		} else {
			rev, err = s.Put(crashKey(next), fmt.Sprint(next))
		}
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
// (their syncs shared): after each SIGKILL every revision a writer was told
// of is there, revisions are 1..Rev() once each, and each writer's writes
// are there as a prefix of its sequence, values intact.
func TestCrashConcurrent(t *testing.T) {
	if dir := os.Getenv("REVKV_CRASH_CONCURRENT"); dir != "" {
		crashConcurrentChild(dir)
		return
	}
	if testing.Short() || *crashesFlag == 0 {
		t.Skip("kill -9 cycles: run without -short")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for cycle := range *crashesFlag {
		acked := map[string]int{} // writer → its last acknowledged sequence number
		killChild(t, rng, [2]int{100, 500}, "TestCrashConcurrent", []string{"REVKV_CRASH_CONCURRENT=" + dir}, func(line string) {
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
			require.GreaterOrEqual(t, last[w], i, "cycle %d: writer %s's acknowledged write %d survives", cycle, w, i)
		}
		t.Logf("cycle %d: %d revisions, acknowledged %v", cycle, s.Rev(), acked)
		require.NoError(t, s.Close())
	}
}

func crashConcurrentChild(dir string) {
	s, err := revkv.Open(dir, revkv.StringCodec(), revkv.WithCheckpointBytes(256<<10))
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
