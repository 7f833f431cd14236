package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/storage/mvcc"

	"github.com/revkv/revkv"
)

// prefixEnd is the end of etcd's range for a prefix (prefixes here end
// below 0xff).
func prefixEnd(p string) []byte {
	e := []byte(p)
	e[len(e)-1]++
	return e
}

// BenchmarkWatchIdle: Put cycling over 1,000 keys under "hot/" while n
// watchers wait on other prefixes: what idle watchers cost a writer.
// heap-B/watcher is the heap and stacks the watchers hold, each.
func BenchmarkWatchIdle(b *testing.B) {
	dropFixtures()
	for _, n := range []int{0, 1, 1000, 100_000} {
		b.Run(fmt.Sprintf("store=revkv/watchers=%d", n), func(b *testing.B) {
			s := revkv.New[[]byte](revkv.WithMaxHistory(8))
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			before := inUse()
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range s.Watch(ctx, fmt.Sprint("idle", i, "/"), 0) {
					}
				}()
			}
			waitWatchers(n)
			held := perWatcher(before, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Put(keys[i%hotKeys], values[i&1023])
			}
			b.StopTimer()
			b.ReportMetric(held, "heap-B/watcher")
			cancel()
			wg.Wait()
			s.Close()
		})
		b.Run(fmt.Sprintf("store=etcd/watchers=%d", n), func(b *testing.B) {
			e, w := newEtcdWatchable()
			defer e.Close()
			before := inUse()
			ws := w.NewWatchStream()
			for i := range n {
				p := fmt.Sprint("idle", i, "/")
				if _, err := ws.Watch(context.Background(), 0, []byte(p), prefixEnd(p), 0); err != nil {
					b.Fatal(err)
				}
			}
			held := perWatcher(before, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.Put(keys[i%hotKeys], values[i&1023])
			}
			b.StopTimer()
			b.ReportMetric(held, "heap-B/watcher")
			ws.Close()
		})
	}
}

func inUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

func perWatcher(before uint64, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(int64(inUse())-int64(before)) / float64(n)
}

// waitWatchers waits until about n goroutines are parked (the watchers).
func waitWatchers(n int) {
	for runtime.NumGoroutine() < n {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
}

// BenchmarkWatchDeliver: one writer puts b.N values under "hot/" while 1 or
// 100 watchers of "hot/" each receive all of them; events/s counts every
// event every watcher received.
func BenchmarkWatchDeliver(b *testing.B) {
	dropFixtures()
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("store=revkv/watchers=%d", n), func(b *testing.B) {
			// No history cap: a watcher that falls behind must find the
			// history it has not read yet (with a cap it would be trimmed
			// past it and get ErrCompacted, as it should).
			s := revkv.New[[]byte]()
			defer s.Close()
			from := s.Rev() + 1
			var wg sync.WaitGroup
			b.ResetTimer()
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got := 0
					for _, err := range s.Watch(context.Background(), "k", from) {
						if err != nil {
							b.Error(err)
							return
						}
						if got++; got == b.N {
							return
						}
					}
				}()
			}
			for i := 0; i < b.N; i++ {
				s.Put(keys[i%hotKeys], values[i&1023])
			}
			wg.Wait()
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
		})
		b.Run(fmt.Sprintf("store=etcd/watchers=%d", n), func(b *testing.B) {
			e, w := newEtcdWatchable()
			defer e.Close()
			var wg sync.WaitGroup
			var streams []mvcc.WatchStream
			for range n {
				ws := w.NewWatchStream()
				streams = append(streams, ws)
				if _, err := ws.Watch(context.Background(), 0, []byte("k"), prefixEnd("k"), 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for _, ws := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got := 0
					for r := range ws.Chan() {
						if got += len(r.Events); got >= b.N {
							return
						}
					}
				}()
			}
			for i := 0; i < b.N; i++ {
				e.Put(keys[i%hotKeys], values[i&1023])
			}
			wg.Wait()
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
			b.StopTimer()
			for _, ws := range streams {
				ws.Close()
			}
		})
	}
}

// BenchmarkWatchCatchUp: a watch from revision 1 over 1,000,000 revisions
// of 1,000 keys replays them; events/s.
func BenchmarkWatchCatchUp(b *testing.B) {
	dropFixtures()
	const revs = 1_000_000
	s := revkv.New[[]byte]()
	defer s.Close()
	for i := range revs {
		s.Put(keys[i%hotKeys], values[i&1023])
	}
	b.Run("store=revkv", func(b *testing.B) {
		for b.Loop() {
			got := 0
			for _, err := range s.Watch(context.Background(), "", 1) {
				if err != nil {
					b.Fatal(err)
				}
				if got++; got == revs {
					break
				}
			}
		}
		b.ReportMetric(float64(revs)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}
