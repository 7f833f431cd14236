package bench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/google/btree"
)

// BenchmarkKeyLayout measures, in bytes a key, the heap that the parts of
// a key's in-memory layout take, over the keys that redis-benchmark's
// fill leaves (1 M SETs over -r 1000000: 632 k distinct 16-byte keys):
// the index map with today's slot, the map with a slot that would also
// hold a one-entry key's revision and time, and the ordered tree of
// pointers (today) or of the keys themselves. bench/README's "Memory per
// key" adds them up. The time a run takes means nothing.
func BenchmarkKeyLayout(b *testing.B) {
	dropFixtures() // their gigabytes would only slow the collections
	r := rand.New(rand.NewPCG(1, 2))
	seen := make(map[string]bool)
	var distinct []string
	for range 1000000 {
		k := fmt.Sprintf("key:%012d", r.IntN(1000000))
		if !seen[k] {
			seen[k] = true
			distinct = append(distinct, k)
		}
	}
	seen = nil
	// The index slot today: the latest value, its deadline, the log.
	type slot struct {
		value    []byte
		deadline int64
		kl       *int
	}
	// A slot that keeps a one-entry key whole: the entry's revision,
	// time, zone, op and TTL flag beside it.
	type leanSlot struct {
		slot
		rev, sec int64
		nsec     int32
		zone     uint16
		op, ttl  uint8
	}
	logs := make([]*int, len(distinct))
	for i := range logs {
		logs[i] = new(int)
		*logs[i] = i
	}
	r.Shuffle(len(logs), func(i, j int) { logs[i], logs[j] = logs[j], logs[i] })
	parts := []struct {
		name string
		fill func() any
	}{
		{"map-slot=today", func() any {
			m := make(map[string]slot)
			for _, k := range distinct {
				m[k] = slot{}
			}
			return m
		}},
		{"map-slot=one-entry", func() any {
			m := make(map[string]leanSlot)
			for _, k := range distinct {
				m[k] = leanSlot{}
			}
			return m
		}},
		{"tree=pointers", func() any {
			t := btree.NewG(32, func(a, b *int) bool { return *a < *b })
			for _, p := range logs {
				t.ReplaceOrInsert(p)
			}
			return t
		}},
		{"tree=keys", func() any {
			t := btree.NewOrderedG[string](32)
			for _, k := range distinct {
				t.ReplaceOrInsert(k)
			}
			return t
		}},
	}
	for _, p := range parts {
		b.Run(p.name, func(b *testing.B) {
			var perKey float64
			for b.Loop() {
				before := heapBytes()
				held := p.fill()
				perKey = float64(heapBytes()-before) / float64(len(distinct))
				runtime.KeepAlive(held)
			}
			b.ReportMetric(perKey, "B/key")
		})
	}
	runtime.KeepAlive(distinct)
	runtime.KeepAlive(logs)
}
