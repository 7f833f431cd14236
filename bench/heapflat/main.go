// Heapflat measures contract §5.8: with a history cap set and the trimmer on, an
// endless write load over a fixed key set holds a flat heap.
//
//	cd bench && go run ./heapflat -cap=maxhistory
//	cd bench && go run ./heapflat -cap=retention
//
// It writes -writes random Puts and PutTTLs over -keys keys (64-byte values,
// a fresh one per write), with the trimmer and the expirer running, and after
// every -every writes it runs the GC and prints the live heap. The store reads
// a simulated clock that moves 1µs per write, so the retention window and the
// TTLs are measured in writes, the same on any machine; the goroutines tick
// on real time. It fails (exit 1) if the last sample is more than 10% above
// the sample at 3 million writes.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/revkv/revkv"
)

func main() {
	var (
		keys   = flag.Int("keys", 100_000, "distinct keys")
		writes = flag.Int("writes", 10_000_000, "writes in all")
		every  = flag.Int("every", 1_000_000, "writes between heap samples")
		cap    = flag.String("cap", "maxhistory", "maxhistory (WithMaxHistory(8)) or retention (WithRetention(200ms of simulated time))")
	)
	flag.Parse()

	var ticks atomic.Int64 // simulated nanoseconds since start
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return start.Add(time.Duration(ticks.Load())) }
	opts := []revkv.Option{
		revkv.WithClock(clock),
		revkv.WithTrimInterval(10 * time.Millisecond),
		revkv.WithExpiryInterval(10 * time.Millisecond),
	}
	switch *cap {
	case "maxhistory":
		opts = append(opts, revkv.WithMaxHistory(8))
	case "retention":
		opts = append(opts, revkv.WithRetention(200*time.Millisecond))
	default:
		fmt.Fprintf(os.Stderr, "heapflat: -cap must be maxhistory or retention, not %q\n", *cap)
		os.Exit(2)
	}
	s := revkv.New[[]byte](opts...)
	defer s.Close()

	names := make([]string, *keys)
	for i := range names {
		names[i] = fmt.Sprintf("k%07d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fmt.Printf("%s: %d keys, %d writes, %s/%s, GOMAXPROCS %d\n", *cap, *keys, *writes, runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	fmt.Printf("%12s %12s %10s %10s\n", "writes", "heap MiB", "revision", "floor")
	var at3M, last uint64
	began := time.Now()
	for w := 1; w <= *writes; w++ {
		ticks.Add(int64(time.Microsecond))
		k := names[rng.IntN(len(names))]
		v := make([]byte, 64)
		v[0] = byte(w)
		var err error
		if rng.IntN(4) == 0 {
			_, err = s.PutTTL(k, v, time.Duration(1+rng.IntN(50))*time.Millisecond)
		} else {
			_, err = s.Put(k, v)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "heapflat:", err)
			os.Exit(1)
		}
		if w%*every == 0 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			last = ms.HeapAlloc
			if w == 3_000_000 {
				at3M = last
			}
			fmt.Printf("%12d %12.1f %10d %10d\n", w, float64(last)/(1<<20), s.Rev(), s.Floor())
		}
	}
	fmt.Printf("%d writes in %v\n", *writes, time.Since(began).Round(time.Millisecond))
	if at3M > 0 {
		ratio := float64(last) / float64(at3M)
		fmt.Printf("last / at 3M writes = %.3f\n", ratio)
		if ratio > 1.10 {
			fmt.Println("FAIL: the heap did not level off")
			os.Exit(1)
		}
	}
}
