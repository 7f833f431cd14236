package bench

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/revkv/revkv"
)

// The workload W(N) of issue "Years of history": N revisions of 16-byte
// values over 100,000 keys (revision i writes key k/%08d of i mod
// 100,000), written by Update batches of 1,000 under SyncNever, then
// Close, then Open in a fresh process.
var (
	wRevs   = flag.Int("w.revs", 1_000_000, "revisions BenchmarkHistoryW writes (a multiple of 1,000)")
	wReads  = flag.Int("w.reads", 20_000, "GetAt calls at random old revisions after BenchmarkHistoryW's Open")
	wDir    = flag.String("w.dir", "", "BenchmarkHistoryW writes W(N) here, or reuses it if it holds W(N) already (default: a temporary directory)")
	wCold   = flag.Bool("w.cold", false, "BenchmarkHistoryW drops the page cache before the Open (Linux, as root)")
	wMemory = flag.Int64("w.memory", 0, "BenchmarkHistoryW's WithMemory bound in bytes (0: not given, the default; -1: everything in memory)")
	wKill   = flag.Bool("w.kill", false, "BenchmarkHistoryW writes W(N) in a child process killed (SIGKILL) after its last write instead of closing the store: the Open then replays the log since the last checkpoint")
	wChange = flag.Bool("w.changes", false, "BenchmarkHistoryW's fresh process also streams Changes of every key from revision 1 to the end, and samples its resident set")
	wChild  = os.Getenv("REVKV_W_OPEN") // set in the fresh process that opens the directory
	wKeys   = 100_000
	wValue  = []byte("0123456789abcdef")
	wKeyFmt = "k/%08d"
)

// wOpened is what the fresh process measured after its Open.
type wOpened struct {
	OpenNs       int64   // Open's wall time
	HeapAfter    uint64  // live heap after Open and a GC
	RSSAfter     uint64  // resident set after Open
	GetAtP50Ns   int64   // GetAt at random old revisions
	GetAtP99Ns   int64   //
	RangeEntries int64   // one HistoryRange of a key to its end
	RangeRate    float64 // its entries a second
	RSSEnd       uint64  // resident set after the reads and the range
	Rev          int64
	// With -w.changes: Changes("", 1, Rev()) to the end, its rate, and the
	// largest resident set seen every 1 M entries of it.
	ChangesEntries int64
	ChangesRate    float64
	ChangesMaxRSS  uint64
}

// BenchmarkHistoryW writes W(N) (-w.revs) into a store on a directory,
// closes it, and opens it again in a fresh process, which reads it: the
// figures of a store's whole life at N revisions. Run with -benchtime=1x.
//
//	cd bench && go test -run='^$' -bench='^BenchmarkHistoryW$' -benchtime=1x -w.revs=10000000 .
func BenchmarkHistoryW(b *testing.B) {
	n := *wRevs
	dir := *wDir
	if dir == "" {
		dir = b.TempDir()
	}
	for b.Loop() {
		if _, err := os.Stat(dir + "/.w-" + strconv.Itoa(n)); err != nil || *wDir == "" {
			must(b, os.RemoveAll(dir))
			must(b, os.MkdirAll(dir, 0o755))
			start := time.Now()
			if *wKill {
				writeWKilled(b, dir, n)
			} else {
				writeW(b, dir, n)
			}
			took := time.Since(start)
			b.ReportMetric(float64(n)/took.Seconds()/1e6, "Mrev/s-write")
			must(b, os.WriteFile(dir+"/.w-"+strconv.Itoa(n), nil, 0o644))
		}
		b.ReportMetric(float64(dirSize(b, dir))/float64(n), "disk-B/rev")
		if *wCold {
			dropCaches(b)
		}
		o := openW(b, dir)
		b.ReportMetric(float64(o.OpenNs)/1e6, "open-ms")
		b.ReportMetric(float64(o.HeapAfter)/float64(n), "heap-B/rev")
		b.ReportMetric(float64(o.RSSAfter)/(1<<20), "rss-MiB")
		b.ReportMetric(float64(o.RSSEnd)/(1<<20), "rss-end-MiB")
		b.ReportMetric(float64(o.GetAtP50Ns)/1e3, "getat-p50-µs")
		b.ReportMetric(float64(o.GetAtP99Ns)/1e3, "getat-p99-µs")
		b.ReportMetric(o.RangeRate/1e6, "Mentries/s-range")
		if *wKill {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			var n int64
			for _, l := range logs {
				if fi, err := os.Stat(l); err == nil {
					n += fi.Size()
				}
			}
			b.ReportMetric(float64(n)/(1<<20), "log-MiB")
		}
		if *wChange {
			b.ReportMetric(o.ChangesRate/1e6, "Mentries/s-changes")
			b.ReportMetric(float64(o.ChangesMaxRSS)/(1<<20), "rss-changes-MiB")
		}
	}
}

// writeWKilled writes W(n) into dir in a child process (this test binary,
// running TestHistoryWWriteKilled), which kills itself after its last
// write, as kill -9 would: the log since the last checkpoint is left to
// replay.
func writeWKilled(b *testing.B, dir string, n int) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryWWriteKilled$", "-test.count=1", "-w.revs="+strconv.Itoa(n), "-w.memory="+strconv.FormatInt(*wMemory, 10))
	cmd.Env = append(os.Environ(), "REVKV_W_KILLED="+dir)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		b.Fatalf("the writer was to die of SIGKILL: %v", err)
	}
}

// TestHistoryWWriteKilled is writeWKilled's child; it does nothing unless
// REVKV_W_KILLED names a directory.
func TestHistoryWWriteKilled(t *testing.T) {
	dir := os.Getenv("REVKV_W_KILLED")
	if dir == "" {
		t.Skip("BenchmarkHistoryW -w.kill runs it")
	}
	s, err := revkv.Open(dir, revkv.BytesCodec(), wOptions(revkv.WithSync(revkv.SyncNever))...)
	must(t, err)
	for i := 0; i < *wRevs; i += 1000 {
		_, err := s.Update(func(tx *revkv.Txn[[]byte]) error {
			for j := i; j < i+1000; j++ {
				tx.Put(fmt.Sprintf(wKeyFmt, j%wKeys), wValue)
			}
			return nil
		})
		must(t, err)
	}
	// Every write is in the operating system's hands; a checkpoint may be
	// under way, as it may be at any kill.
	must(t, syscall.Kill(os.Getpid(), syscall.SIGKILL))
	select {}
}

// writeW writes W(n) into dir and closes the store.
func writeW(b *testing.B, dir string, n int) {
	s, err := revkv.Open(dir, revkv.BytesCodec(), wOptions(revkv.WithSync(revkv.SyncNever))...)
	must(b, err)
	for i := 0; i < n; i += 1000 {
		_, err := s.Update(func(tx *revkv.Txn[[]byte]) error {
			for j := i; j < i+1000; j++ {
				tx.Put(fmt.Sprintf(wKeyFmt, j%wKeys), wValue)
			}
			return nil
		})
		must(b, err)
	}
	must(b, s.Close())
}

// wOptions adds -w.memory's WithMemory to opts.
func wOptions(opts ...revkv.Option) []revkv.Option {
	if *wMemory != 0 {
		opts = append(opts, revkv.WithMemory(*wMemory))
	}
	return opts
}

// openW runs the Open in a fresh process (this test binary, running
// TestHistoryWOpen) and returns what it measured.
func openW(b *testing.B, dir string) wOpened {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryWOpen$", "-test.count=1", "-w.reads="+strconv.Itoa(*wReads), "-w.memory="+strconv.FormatInt(*wMemory, 10), "-w.changes="+strconv.FormatBool(*wChange))
	cmd.Env = append(os.Environ(), "REVKV_W_OPEN="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("the fresh process's Open: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if js, ok := strings.CutPrefix(line, "W-OPENED "); ok {
			var o wOpened
			must(b, json.Unmarshal([]byte(js), &o))
			return o
		}
	}
	b.Fatalf("the fresh process printed no figures:\n%s", out)
	return wOpened{}
}

// TestHistoryWOpen is BenchmarkHistoryW's fresh process; it does nothing
// unless REVKV_W_OPEN names a directory.
func TestHistoryWOpen(t *testing.T) {
	if wChild == "" {
		t.Skip("BenchmarkHistoryW runs it")
	}
	// The package's own globals (the cold-read buffer and the like) are
	// on the heap before the Open: only what the Open adds counts.
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	s, err := revkv.Open(wChild, revkv.BytesCodec(), wOptions(revkv.WithReadOnly())...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := wOpened{OpenNs: time.Since(start).Nanoseconds(), Rev: int64(s.Rev())}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	o.HeapAfter, o.RSSAfter = ms.HeapAlloc-min(before.HeapAlloc, ms.HeapAlloc), rss()
	if p := os.Getenv("REVKV_W_HEAPPROFILE"); p != "" { // where the heap after Open goes
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		must(t, pprof.WriteHeapProfile(f))
		must(t, f.Close())
	}

	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, *wReads)
	for i := range lat {
		rev := revkv.Revision(1 + rng.Int64N(o.Rev))
		key := fmt.Sprintf(wKeyFmt, rng.IntN(wKeys))
		t0 := time.Now()
		if _, _, err := s.GetAt(key, rev); err != nil {
			t.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		o.GetAtP50Ns, o.GetAtP99Ns = lat[len(lat)/2].Nanoseconds(), lat[len(lat)*99/100].Nanoseconds()
	}
	t0 := time.Now()
	for _, err := range s.HistoryRange(fmt.Sprintf(wKeyFmt, 7), 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		o.RangeEntries++
	}
	o.RangeRate = float64(o.RangeEntries) / time.Since(t0).Seconds()
	debug.FreeOSMemory()
	o.RSSEnd = rss()
	if *wChange {
		t0 := time.Now()
		for _, err := range s.Changes("", 1, revkv.Revision(o.Rev)) {
			if err != nil {
				t.Fatal(err)
			}
			if o.ChangesEntries++; o.ChangesEntries%1_000_000 == 0 {
				o.ChangesMaxRSS = max(o.ChangesMaxRSS, rss())
			}
		}
		o.ChangesRate = float64(o.ChangesEntries) / time.Since(t0).Seconds()
		if o.ChangesEntries != o.Rev {
			t.Fatalf("Changes from 1 yielded %d entries of %d", o.ChangesEntries, o.Rev)
		}
	}
	js, _ := json.Marshal(o)
	fmt.Printf("W-OPENED %s\n", js)
}

// rss returns the process's resident set, from /proc/self/status (0 where
// there is none).
func rss() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkHistoryRange streams one key's whole history of -w.range
// entries: ns/op is per entry, and B/op shows the stream's memory does not
// grow with the history. "memory" holds it in a store made by New;
// "sealed" in a store on a directory with the default memory budget,
// closed and opened again, so that all but the newest entry are read from
// the segments.
//
//	cd bench && go test -run='^$' -bench='^BenchmarkHistoryRange$' -benchmem -w.range=10000000 .
func BenchmarkHistoryRange(b *testing.B) {
	n := *wRange
	fill := func(s *revkv.Store[[]byte]) {
		for i := 0; i < n; i += 1000 {
			_, err := s.Update(func(tx *revkv.Txn[[]byte]) error {
				for range 1000 {
					tx.Put("k", wValue)
				}
				return nil
			})
			must(b, err)
		}
	}
	b.Run("memory", func(b *testing.B) {
		s := revkv.New[[]byte]()
		defer s.Close()
		fill(s)
		streamRange(b, s)
	})
	b.Run("sealed", func(b *testing.B) {
		dir := b.TempDir()
		s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithSync(revkv.SyncNever))
		must(b, err)
		fill(s)
		must(b, s.Close())
		s, err = revkv.Open(dir, revkv.BytesCodec(), revkv.WithSync(revkv.SyncNever))
		must(b, err)
		defer s.Close()
		streamRange(b, s)
	})
}

// streamRange yields b.N entries of key k's history, from its start again
// as often as it takes.
func streamRange(b *testing.B, s *revkv.Store[[]byte]) {
	b.ReportAllocs()
	b.ResetTimer()
	got := 0
	for got < b.N {
		for _, err := range s.HistoryRange("k", 0, 0) {
			if err != nil {
				b.Fatal(err)
			}
			if got++; got == b.N {
				break
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mentries/s")
}

var wRange = flag.Int("w.range", 1_000_000, "entries of the key BenchmarkHistoryRange streams (a multiple of 1,000)")

// BenchmarkVerifySealed re-hashes every sealed entry of the W(N) directory
// -w.dir names (what `revkv verify` does after Open), against SHA-256 alone
// over as many links of the same size: W's link is the digest before (32
// bytes) and a 16-byte put of a 10-byte key, 100 bytes (package chain).
func BenchmarkVerifySealed(b *testing.B) {
	if *wDir == "" {
		b.Skip("give -w.dir a W(N) directory")
	}
	s, err := revkv.Open(*wDir, revkv.BytesCodec(), revkv.WithReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n int64
	b.Run("op=verify", func(b *testing.B) {
		for b.Loop() {
			if n, err = s.VerifySealed(nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrev/s")
	})
	b.Run("op=sha256-raw", func(b *testing.B) {
		link := make([]byte, 100)
		for b.Loop() {
			for range n {
				d := sha256.Sum256(link)
				copy(link, d[:])
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrev/s")
	})
}
