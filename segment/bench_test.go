package segment

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// wSegment builds the segment of W(n)'s revisions [1, n]: 16-byte values
// over 100,000 keys, revision i writing key k/%08d of i mod 100,000, a
// millisecond apart.
func wSegment(b *testing.B, n int) []byte {
	const keys = 100_000
	es := make([]Entry, 0, n)
	for k := range min(keys, n) {
		for rev := int64(k + 1); rev <= int64(n); rev += keys {
			ns := 1_700_000_000_000_000_000 + rev*1_000_000
			es = append(es, Entry{Key: fmt.Sprintf("k/%08d", k), Rev: rev, Sec: ns / 1e9, Nsec: int32(ns % 1e9), Op: Put, Value: []byte("0123456789abcdef")})
		}
	}
	return build(b, es, int64(n), 0) // one entry a revision: build adds their times
}

// BenchmarkGet is a point read at a random key and revision of W(1 M)'s
// segment in memory (the page cache's case): the block read, its check
// and its decoding. It reports the segment's bytes per revision and its
// index's.
func BenchmarkGet(b *testing.B) {
	const n = 1_000_000
	file := wSegment(b, n)
	r, err := Open(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := r.Get(fmt.Sprintf("k/%08d", rng.IntN(100_000)), 100_000+rng.Int64N(n-100_000)); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
	b.ReportMetric(float64(len(file))/n, "disk-B/rev")
	b.ReportMetric(float64(r.IndexBytes())/n, "index-B/rev")
}

// BenchmarkRevisions reads W(1 M)'s segment in revision order: ns/op is
// per entry.
func BenchmarkRevisions(b *testing.B) {
	const n = 1_000_000
	file := wSegment(b, n)
	r, err := Open(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	got := 0
	for got < b.N {
		for _, err := range r.Revisions(1, n) {
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
