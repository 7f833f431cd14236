package revkv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/wal"
)

// The in-package benchmarks of the hot paths; bench/ compares revkv with
// other stores on the full-size workloads.

const (
	benchKeys = 1 << 16
	benchMask = 1<<12 - 1
)

var (
	benchNames = func() []string {
		ks := make([]string, benchKeys)
		for i := range ks {
			ks[i] = fmt.Sprint("k", i)
		}
		return ks
	}()
	benchSeq = func() []int {
		rng := rand.New(rand.NewPCG(1, 2))
		s := make([]int, benchMask+1)
		for i := range s {
			s[i] = rng.IntN(benchKeys)
		}
		return s
	}()
	benchValue = make([]byte, 64)
)

func loadedStore(b *testing.B, opts ...revkv.Option) *revkv.Store[[]byte] {
	s := revkv.New[[]byte](opts...)
	b.Cleanup(func() { s.Close() })
	for _, k := range benchNames {
		if _, err := s.Put(k, benchValue); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkGet(b *testing.B) {
	s := loadedStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := s.Get(benchNames[benchSeq[i&benchMask]]); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkGetParallel(b *testing.B) {
	s := loadedStore(b)
	var worker atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(worker.Add(1)) * 7919
		for pb.Next() {
			s.Get(benchNames[benchSeq[i&benchMask]])
			i++
		}
	})
}

func BenchmarkPut(b *testing.B) {
	s := revkv.New[[]byte]()
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Put(benchNames[i&(benchKeys-1)], benchValue)
	}
}

func BenchmarkPutMaxHistory(b *testing.B) {
	s := revkv.New[[]byte](revkv.WithMaxHistory(8))
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Put(benchNames[i&1023], benchValue)
	}
}

// BenchmarkUpdateHot writes over 1,000 keys, so every write appends to a
// long log: the cost of history itself.
func BenchmarkUpdateHot(b *testing.B) {
	s := revkv.New[[]byte]()
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Put(benchNames[i%1000], benchValue)
	}
}

// BenchmarkHistoryMemory reports the live heap per revision (B/rev) of 1,000
// keys written 1,000 times each, the value shared: what the store itself keeps
// per revision of history.
func BenchmarkHistoryMemory(b *testing.B) {
	var per float64
	for range b.N {
		before := liveHeap()
		s := revkv.New[[]byte]()
		for range 1000 {
			for _, k := range benchNames[:1000] {
				s.Put(k, benchValue)
			}
		}
		per = float64(liveHeap()-before) / 1e6
		runtime.KeepAlive(s)
		s.Close()
	}
	b.ReportMetric(per, "B/rev")
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func BenchmarkPutTTL(b *testing.B) {
	s := revkv.New[[]byte]()
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.PutTTL(benchNames[i&(benchKeys-1)], benchValue, time.Hour)
	}
}

// history: 1,000 keys written 100 times each, 1µs apart.
func historyStore(b *testing.B) (*revkv.Store[[]byte], time.Time) {
	var tick atomic.Int64
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := revkv.New[[]byte](revkv.WithClock(func() time.Time { return start.Add(time.Duration(tick.Load()) * time.Microsecond) }))
	b.Cleanup(func() { s.Close() })
	for range 100 {
		for _, k := range benchNames[:1000] {
			tick.Add(1)
			s.Put(k, benchValue)
		}
	}
	return s, start
}

func BenchmarkGetAt(b *testing.B) {
	s, _ := historyStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := benchSeq[i&benchMask]
		if _, _, err := s.GetAt(benchNames[r%1000], revkv.Revision(1+r%100_000)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetAsOf(b *testing.B) {
	s, start := historyStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := benchSeq[i&benchMask]
		if _, _, err := s.GetAsOf(benchNames[r%1000], start.Add(time.Duration(1+r%100_000)*time.Microsecond)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanStep is the cost of one key yielded by Scan (ns/op per key).
func BenchmarkScanStep(b *testing.B) {
	s := loadedStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for n < b.N {
		for range s.Scan("") {
			if n++; n == b.N {
				break
			}
		}
	}
}

// BenchmarkPurgeExpired writes b.N keys with a TTL, lets them all expire,
// and times one PurgeExpired: ns/op is per expired key. A collection first
// keeps one out of the timed purge: with the heap the load leaves, one
// started inside it in some runs and not others, and the figure was bimodal.
func BenchmarkPurgeExpired(b *testing.B) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := revkv.New[[]byte](revkv.WithClock(func() time.Time { return time.Unix(0, clock.Load()) }))
	defer s.Close()
	for i := 0; i < b.N; i++ {
		s.PutTTL(fmt.Sprint("k", i), benchValue, time.Second)
	}
	clock.Add(int64(2 * time.Second))
	runtime.GC() // so that the purge's own allocations cannot set one off
	b.ReportAllocs()
	b.ResetTimer()
	if n := s.PurgeExpired(); n != b.N {
		b.Fatalf("purged %d of %d", n, b.N)
	}
}

// BenchmarkPurgeOnePercent keeps 2^20 keys with an hour's TTL and, for each
// op, untimed, gives a different 1% of them a TTL that runs out at once, then
// times one PurgeExpired; it reports ns per expired key (ns/expired), the
// figure bench/ compares with the all-expired case.
func BenchmarkPurgeOnePercent(b *testing.B) {
	const n, frac = 1 << 20, 100
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := revkv.New[[]byte](revkv.WithClock(func() time.Time { return time.Unix(0, clock.Load()) }))
	defer s.Close()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
		s.PutTTL(keys[i], benchValue, time.Hour)
	}
	var elapsed time.Duration
	expired := 0
	b.ResetTimer()
	for j := range b.N {
		b.StopTimer()
		for i := j % frac; i < n; i += frac {
			s.PutTTL(keys[i], benchValue, time.Nanosecond)
		}
		clock.Add(int64(time.Second))
		runtime.GC()
		b.StartTimer()
		t0 := time.Now()
		expired += s.PurgeExpired()
		elapsed += time.Since(t0)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(expired), "ns/expired")
}

// BenchmarkUpdate compares Update with single writes over 1,024 keys whose
// logs are capped (WithMaxHistory(8)), so every sub-benchmark runs in the
// same steady state whatever its b.N: one Put alone and in an Update, and
// eight Puts alone and in one Update (ns/key is per key written).
func BenchmarkUpdate(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch int
		txn   bool
	}{{"Put", 1, false}, {"Update1", 1, true}, {"Put8", 8, false}, {"Update8", 8, true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := revkv.New[[]byte](revkv.WithMaxHistory(8))
			defer s.Close()
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				if !bc.txn {
					for range bc.batch {
						s.Put(benchNames[k&1023], benchValue)
						k++
					}
					continue
				}
				s.Update(func(tx *revkv.Txn[[]byte]) error {
					for range bc.batch {
						tx.Put(benchNames[k&1023], benchValue)
						k++
					}
					return nil
				})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(k), "ns/key")
		})
	}
}

// BenchmarkOpenPut writes to a store on a directory, in each sync mode, from
// one goroutine and from 16 (where writers share a write and a sync), beside
// the limits of the disk itself, measured in the same run: a write(2) of a
// record-sized buffer to a plain file (what every mode does before a write
// returns), and the same with an fsync (what SyncAlways adds). ns/op is per
// write.
func BenchmarkOpenPut(b *testing.B) {
	record := wal.FrameSize(len(wal.AppendBatch(nil, wal.Batch{{Key: benchNames[0], Rev: 1 << 20, Sec: 1_700_000_000, Value: benchValue}})))
	for _, limit := range []string{"write", "write+fsync"} {
		b.Run("limit="+limit, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, record)
			for b.Loop() {
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				if limit == "write+fsync" {
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	for _, m := range []struct {
		name string
		mode revkv.SyncMode
	}{{"always", revkv.SyncAlways}, {"interval", revkv.SyncInterval}, {"never", revkv.SyncNever}} {
		for _, par := range []int{1, 16} {
			b.Run(fmt.Sprintf("sync=%s/writers=%d", m.name, par), func(b *testing.B) {
				s, err := revkv.Open(b.TempDir(), revkv.BytesCodec(), revkv.WithSync(m.mode))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				var n atomic.Int64
				b.SetParallelism(par)
				if par == 1 {
					for b.Loop() {
						s.Put(benchNames[n.Add(1)&(benchKeys-1)], benchValue)
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						s.Put(benchNames[n.Add(1)&(benchKeys-1)], benchValue)
					}
				})
			})
		}
	}
}

// BenchmarkPutWatched is Put over 1,024 capped keys under "k" with no
// watcher, with 100 watchers waiting on other prefixes, and with one
// watcher following the written prefix: what watchers cost a writer.
func BenchmarkPutWatched(b *testing.B) {
	for _, bc := range []struct {
		name         string
		others, same int
	}{{"watchers=0", 0, 0}, {"others=100", 100, 0}, {"same=1", 0, 1}} {
		b.Run(bc.name, func(b *testing.B) {
			s := revkv.New[[]byte](revkv.WithMaxHistory(8))
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			watch := func(prefix string) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range s.Watch(ctx, prefix, 0) {
					}
				}()
			}
			for i := range bc.others {
				watch(fmt.Sprint("other", i, "/"))
			}
			for range bc.same {
				watch("k")
			}
			time.Sleep(10 * time.Millisecond) // let them wait
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				s.Put(benchNames[k&1023], benchValue)
				k++
			}
			b.StopTimer()
			cancel()
			s.Close()
			wg.Wait()
		})
	}
}

// BenchmarkOpenRecover opens a directory holding 1,000,000 revisions over
// 100,000 keys (64-byte values), all in the log, half in a snapshot, or
// all in one, and reports revisions recovered per second and bytes on disk
// per revision.
func BenchmarkOpenRecover(b *testing.B) {
	const revs, keys = 1_000_000, 100_000
	for _, snap := range []string{"none", "half", "all"} {
		b.Run("snapshot="+snap, func(b *testing.B) {
			dir := b.TempDir()
			s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithSync(revkv.SyncNever), revkv.WithCheckpointBytes(1<<40))
			if err != nil {
				b.Fatal(err)
			}
			for i := range revs {
				if snap == "half" && i == revs/2 {
					if err := s.Checkpoint(); err != nil {
						b.Fatal(err)
					}
				}
				s.Put(benchNames[i%keys%benchKeys], benchValue)
			}
			if snap == "all" {
				if err := s.Checkpoint(); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			var size int64
			des, _ := os.ReadDir(dir)
			for _, de := range des {
				if info, err := de.Info(); err == nil {
					size += info.Size()
				}
			}
			b.ResetTimer()
			for b.Loop() {
				s, err := revkv.Open(dir, revkv.BytesCodec())
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if s.Rev() != revs {
					b.Fatal("recovered", s.Rev())
				}
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(revs)*float64(b.N)/b.Elapsed().Seconds(), "revs/s")
			b.ReportMetric(float64(size)/revs, "disk-B/rev")
		})
	}
}

// BenchmarkCheckpointStall is a checkpoint of 1 M revisions under
// SyncNever while a writer goes on: the writer's longest Put, in
// milliseconds, is what the checkpoint holds writers up.
func BenchmarkCheckpointStall(b *testing.B) {
	s, err := revkv.Open(b.TempDir(), revkv.BytesCodec(), revkv.WithSync(revkv.SyncNever), revkv.WithCheckpointBytes(1<<40))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range 1_000_000 {
		s.Put(benchNames[i%benchKeys], benchValue)
	}
	var worst time.Duration
	for b.Loop() {
		var stop atomic.Bool
		done := make(chan time.Duration)
		go func() {
			var w time.Duration
			for i := 0; !stop.Load(); i++ {
				t0 := time.Now()
				s.Put(benchNames[i%benchKeys], benchValue)
				w = max(w, time.Since(t0))
			}
			done <- w
		}()
		time.Sleep(20 * time.Millisecond) // the writer is under way
		if err := s.Checkpoint(); err != nil {
			b.Fatal(err)
		}
		stop.Store(true)
		worst = max(worst, <-done)
	}
	b.ReportMetric(float64(worst)/1e6, "worst-put-ms")
}
