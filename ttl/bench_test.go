package ttl

import (
	"fmt"
	"testing"
)

func BenchmarkAddRemove(b *testing.B) {
	x := New[int]()
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
		x.Add(keys[i], int64(i), i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i&(1<<16-1)]
		x.Remove(k, int64(i&(1<<16-1))+int64(i>>16)<<16)
		x.Add(k, int64(i&(1<<16-1))+int64(i>>16+1)<<16, i)
	}
}

// BenchmarkPopDue pops 2^16 due items; ns/op is per item.
func BenchmarkPopDue(b *testing.B) {
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	b.ReportAllocs()
	n := 0
	for n < b.N {
		b.StopTimer()
		x := New[int]()
		for i, k := range keys {
			x.Add(k, int64(i), i)
		}
		b.StartTimer()
		for n < b.N {
			if _, ok := x.PopDue(1 << 40); !ok {
				break
			}
			n++
		}
	}
}
