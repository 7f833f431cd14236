package bench

import (
	"fmt"
	"testing"

	"github.com/revkv/revkv"
)

// BenchmarkDiff times Diff over the last 1,000 revisions of a store of n
// keys, each written once before them: its cost must follow the changes,
// not the keys. The first Diff, which builds the store's revision index,
// is not timed.
func BenchmarkDiff(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			s := revkv.New[[]byte]()
			defer s.Close()
			for i := range n {
				s.Put(keys[i], values[i&1023]) // n <= len(keys)
			}
			from := s.Rev()
			for i := range 1000 {
				s.Put(keys[(i*7919)%n], values[i&1023]) // 1,000 distinct keys
			}
			to := s.Rev()
			count := func() int {
				c := 0
				for _, err := range s.Diff("", from, to) {
					if err != nil {
						b.Fatal(err)
					}
					c++
				}
				return c
			}
			if c := count(); c != 1000 {
				b.Fatalf("%d keys changed, want 1000", c)
			}
			for b.Loop() {
				count()
			}
		})
	}
}
