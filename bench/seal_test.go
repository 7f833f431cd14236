package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revkv/revkv"
)

// BenchmarkCheckpointWhileSyncing times a sealing store's Checkpoint (a
// seal of what was written since the last one, its eviction from memory,
// a snapshot) over W's 100,000 keys while 8 SyncAlways writers Put
// beside it. The eviction takes the group commit's lock a batch of keys
// at a time, and under SyncAlways a drain holds that lock through its
// fsync: this measures what that costs a checkpoint. ns/op is per
// Checkpoint; puts/s is the writers' rate meanwhile.
func BenchmarkCheckpointWhileSyncing(b *testing.B) {
	s, err := revkv.Open(b.TempDir(), revkv.BytesCodec(), revkv.WithSync(revkv.SyncAlways),
		revkv.WithMemory(1<<40), revkv.WithCheckpointBytes(1<<50))
	must(b, err)
	defer s.Close()
	keys := wKeyNames()
	for i := 0; i < len(keys); i += 1000 {
		_, err := s.Update(func(tx *revkv.Txn[[]byte]) error {
			for _, k := range keys[i : i+1000] {
				tx.Put(k, wValue)
			}
			return nil
		})
		must(b, err)
	}
	must(b, s.Checkpoint())
	var stop atomic.Bool
	var puts atomic.Int64
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }() // before Close, if a Checkpoint fails
	for w := range 8 {
		wg.Go(func() {
			for i := w; !stop.Load(); i += 8 {
				if _, err := s.Put(keys[(i*7919)%len(keys)], wValue); err != nil {
					panic(fmt.Sprint("a writer: ", err))
				}
				puts.Add(1)
			}
		})
	}
	time.Sleep(200 * time.Millisecond) // something to seal in the first one
	start, before := time.Now(), puts.Load()
	for b.Loop() {
		must(b, s.Checkpoint())
	}
	took, n := time.Since(start), puts.Load()-before
	b.ReportMetric(float64(n)/took.Seconds(), "puts/s")
	b.ReportMetric(float64(n)/float64(b.N), "puts/checkpoint")
}
