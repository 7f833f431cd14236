package bench

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revkv/revkv"
)

// BenchmarkReadsWhileSyncing measures what a reader waits for while
// writers sync: 8 goroutines Put under SyncAlways on a directory, and the
// benchmark's loop reads, timing each call: Get; At(rev).Get with the
// view's Close; a Scan of ten keys; and Len. Each runs with the writers (sub-benchmark "writers=8")
// and without them ("writers=0"), in the same run. ns/op is the mean;
// the p50 and p99 metrics are what the contract's "no reader waits for
// an fsync" is about.
//
//	cd bench && go test -run='^$' -bench='^BenchmarkReadsWhileSyncing$' -benchtime=20000x .
func BenchmarkReadsWhileSyncing(b *testing.B) {
	for _, writers := range []int{0, 8} {
		for _, read := range []string{"Get", "At.Get", "Scan", "Len"} {
			b.Run(fmt.Sprintf("writers=%d/%s", writers, read), func(b *testing.B) {
				readsWhileSyncing(b, writers, read)
			})
		}
	}
}

func readsWhileSyncing(b *testing.B, writers int, read string) {
	s, err := revkv.Open(b.TempDir(), revkv.BytesCodec(), revkv.WithSync(revkv.SyncAlways))
	must(b, err)
	defer s.Close()
	const keys = 1000
	for i := range keys {
		_, err := s.Put(fmt.Sprintf("k/%04d", i), wValue)
		must(b, err)
	}
	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		wrote atomic.Int64
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if _, err := s.Put(fmt.Sprintf("k/%04d", (w*131+i)%keys), wValue); err != nil {
					b.Error(err)
					return
				}
				wrote.Add(1)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // the writers are syncing
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("k/%04d", i%keys)
		t0 := time.Now()
		switch read {
		case "Get":
			s.Get(key)
		case "Scan":
			for range s.Scan(key[:5]) {
			}
		case "Len":
			s.Len()
		default:
			v, err := s.At(s.Rev() - 1)
			must(b, err)
			v.Get(key)
			v.Close()
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(wrote.Load()), "puts")
}
