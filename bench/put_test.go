package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/revkv/revkv"
)

// putRecord is the bytes a Put added to revkv's log in the last
// BenchmarkPutSyncNever/revkv: the size raw-write writes.
var putRecord = 64

// BenchmarkPutSyncNever: a Put under SyncNever (its record in the
// operating system's hands when it returns, not on stable storage), over
// 100,000 keys with the default options, against a raw write(2) of a
// record of the same size to an append-only file, in the same run. The
// contract's bound is a Put at most 2x the raw write. revkv runs first:
// it measures the bytes a Put logs ("log-B/put"), which raw-write then
// writes.
//
//	cd bench && go test -run='^$' -bench='^BenchmarkPutSyncNever$' -benchtime=1000000x -count=5 .
func BenchmarkPutSyncNever(b *testing.B) {
	b.Run("revkv", func(b *testing.B) {
		dir := b.TempDir()
		s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithSync(revkv.SyncNever))
		must(b, err)
		keys := wKeyNames()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := s.Put(keys[i%len(keys)], wValue); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		must(b, s.Close())
		putRecord = recordSize(b, keys)
		b.ReportMetric(float64(putRecord), "log-B/put")
	})
	b.Run("raw-write", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		must(b, err)
		defer f.Close()
		rec := make([]byte, putRecord)
		for b.Loop() {
			if _, err := f.Write(rec); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(putRecord), "log-B/put")
	})
}

// recordSize is the bytes a Put of W's adds to the log: 10,000 Puts to a
// new store, short of its first checkpoint, and the growth of its log, the
// room a mapped log allocates ahead (zeros at the end of its file) left
// out.
func recordSize(b *testing.B, keys []string) int {
	dir := b.TempDir()
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithSync(revkv.SyncNever))
	must(b, err)
	defer s.Close()
	size := func() int64 {
		es, err := os.ReadDir(dir)
		must(b, err)
		var n int64
		for _, e := range es {
			if filepath.Ext(e.Name()) == ".log" {
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				must(b, err)
				n += int64(len(bytes.TrimRight(data, "\x00")))
			}
		}
		return n
	}
	before := size()
	const n = 10_000
	for i := range n {
		_, err := s.Put(keys[i%len(keys)], wValue)
		must(b, err)
	}
	return int((size() - before) / n)
}

// wKeyNames are W's keys.
func wKeyNames() []string {
	keys := make([]string, wKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf(wKeyFmt, i)
	}
	return keys
}

// BenchmarkPutWhileSealing times each Put (SyncNever, one writer, W's
// keys and values) while the store seals in the background every 1 MiB
// logged (WithMemory(3 MiB)), and, in the same run, while it neither
// seals nor checkpoints (WithMemory(-1), no checkpoint): the contract
// bounds Put's p99.9 during seals at 2x its p99.9 without.
//
//	cd bench && go test -run='^$' -bench='^BenchmarkPutWhileSealing$' -benchtime=2000000x .
func BenchmarkPutWhileSealing(b *testing.B) {
	for _, mode := range []string{"quiet", "sealing"} {
		b.Run(mode, func(b *testing.B) {
			opts := []revkv.Option{revkv.WithSync(revkv.SyncNever), revkv.WithMemory(-1), revkv.WithCheckpointBytes(1 << 50)}
			if mode == "sealing" {
				opts = []revkv.Option{revkv.WithSync(revkv.SyncNever), revkv.WithMemory(3 << 20)}
			}
			dir := b.TempDir()
			s, err := revkv.Open(dir, revkv.BytesCodec(), opts...)
			must(b, err)
			defer s.Close()
			keys := wKeyNames()
			lat := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				if _, err := s.Put(keys[i%len(keys)], wValue); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
			slices.Sort(lat)
			q := func(p float64) float64 {
				return float64(lat[min(int(float64(len(lat))*p), len(lat)-1)].Nanoseconds()) / 1e3
			}
			b.ReportMetric(q(0.5), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(q(0.999), "p99.9-µs")
			b.ReportMetric(float64(len(segs)), "segments")
		})
	}
}
