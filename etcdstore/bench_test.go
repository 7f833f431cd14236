package etcdstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revkv/revkv"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/revkv/revkv/etcdstore"
)

// The benchmarks compare the store with raw clientv3 on the same embedded
// one-member cluster (with fsync, as a real one would run). The targets:
// Put within 2x of a raw Put, Get and GetAt within 1.2x of a raw Get,
// History of 1,000 entries in one round trip, 64 concurrent writers at
// least half of raw clientv3's throughput.

func benchCluster(b *testing.B) (*clientv3.Client, *etcdstore.Store[[]byte]) {
	c := startCluster(b, 1, func(cfg *embed.Config) { cfg.UnsafeNoFsync = false })
	cli := c.client(b)
	s, err := etcdstore.Open(context.Background(), cli, "bench", revkv.BytesCodec())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return cli, s
}

var benchValue = make([]byte, 128)

func check(b *testing.B, err error) {
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkPut(b *testing.B) {
	cli, s := benchCluster(b)
	ctx := context.Background()
	b.Run("store=etcdstore", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_, err := s.Put(ctx, fmt.Sprint("k", i%1000), benchValue)
			check(b, err)
		}
	})
	b.Run("store=clientv3", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_, err := cli.Put(ctx, fmt.Sprint("raw/k", i%1000), string(benchValue))
			check(b, err)
		}
	})
}

func BenchmarkGet(b *testing.B) {
	cli, s := benchCluster(b)
	ctx := context.Background()
	_, err := s.Put(ctx, "k", benchValue)
	check(b, err)
	_, err = cli.Put(ctx, "raw/k", string(benchValue))
	check(b, err)
	b.Run("store=etcdstore", func(b *testing.B) {
		for b.Loop() {
			_, _, err := s.Get(ctx, "k")
			check(b, err)
		}
	})
	b.Run("op=GetAt/store=etcdstore", func(b *testing.B) {
		for b.Loop() {
			_, _, err := s.GetAt(ctx, "k", 1)
			check(b, err)
		}
	})
	b.Run("store=clientv3", func(b *testing.B) {
		for b.Loop() {
			_, err := cli.Get(ctx, "raw/k")
			check(b, err)
		}
	})
	// A read-only transaction of three reads: what GetAt sends.
	b.Run("op=Txn3/store=clientv3", func(b *testing.B) {
		for b.Loop() {
			_, err := cli.Txn(ctx).Then(clientv3.OpGet("raw/k"), clientv3.OpGet("raw/k1"), clientv3.OpGet("raw/k2")).Commit()
			check(b, err)
		}
	})
}

// BenchmarkHistory1000 reads the history of a key with 1,000 entries; the
// baseline is a raw range read of 1,000 keys of the same size.
func BenchmarkHistory1000(b *testing.B) {
	cli, s := benchCluster(b)
	ctx := context.Background()
	for i := range 1000 {
		_, err := s.Put(ctx, "hot", benchValue)
		check(b, err)
		_, err = cli.Put(ctx, fmt.Sprintf("raw/%04d", i), string(benchValue))
		check(b, err)
	}
	b.Run("store=etcdstore", func(b *testing.B) {
		for b.Loop() {
			h, err := s.History(ctx, "hot")
			check(b, err)
			if len(h) != 1000 {
				b.Fatal(len(h))
			}
		}
	})
	b.Run("store=clientv3", func(b *testing.B) {
		for b.Loop() {
			_, err := cli.Get(ctx, "raw/", clientv3.WithPrefix())
			check(b, err)
		}
	})
}

// BenchmarkWriters64 runs 64 goroutines writing their own keys; it reports
// writes per second.
func BenchmarkWriters64(b *testing.B) {
	cli, s := benchCluster(b)
	ctx := context.Background()
	run := func(b *testing.B, put func(key string) error) {
		var n atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for w := range 64 {
			wg.Go(func() {
				for i := 0; n.Add(1) <= int64(b.N); i++ {
					check(b, put(fmt.Sprint("w", w, "/", i%100)))
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
	}
	b.Run("store=etcdstore", func(b *testing.B) {
		run(b, func(key string) error { _, err := s.Put(ctx, key, benchValue); return err })
	})
	b.Run("store=clientv3", func(b *testing.B) {
		run(b, func(key string) error { _, err := cli.Put(ctx, "raw/"+key, string(benchValue)); return err })
	})
}
