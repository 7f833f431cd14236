package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// zcheck verifies t's sizes, order and weight balance, and returns its keys.
func zcheck(t *testing.T, n *znode) []string {
	var keys []string
	var walk func(n *znode) int
	walk = func(n *znode) int {
		if n == nil {
			return 0
		}
		sl := walk(n.l)
		keys = append(keys, n.key)
		sr := walk(n.r)
		require.Equal(t, sl+sr+1, n.n, "size of %q", n.key)
		if sl+sr > 1 {
			require.LessOrEqual(t, sl, zdelta*sr, "balance at %q", n.key)
			require.LessOrEqual(t, sr, zdelta*sl, "balance at %q", n.key)
		}
		return n.n
	}
	walk(n)
	require.True(t, slices.IsSorted(keys))
	require.Len(t, slices.Compact(slices.Clone(keys)), len(keys))
	return keys
}

// TestZTreeAgainstSortedSlice: random inserts and deletes keep the tree
// ordered, counted and balanced; its ranks, selections and rank ranges
// agree with a sorted slice; and every older version stays as it was.
func TestZTreeAgainstSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var root *znode
	var want []string
	type version struct {
		root *znode
		keys []string
	}
	var versions []version
	for i := range 20000 {
		k := fmt.Sprintf("%04d", rng.IntN(3000))
		j, found := slices.BinarySearch(want, k)
		if rng.IntN(5) < 3 {
			root = zinsert(root, k)
			if !found {
				want = slices.Insert(want, j, k)
			}
		} else {
			root = zdelete(root, k)
			if found {
				want = slices.Delete(want, j, j+1)
			}
		}
		if i%500 == 0 {
			require.Equal(t, want, zcheck(t, root))
			versions = append(versions, version{root, slices.Clone(want)})
		}
		if len(want) > 0 && i%7 == 0 {
			r := rng.IntN(len(want))
			require.Equal(t, want[r], zat(root, r))
			require.Equal(t, r, zbefore(root, want[r]))
			i, ok := zfind(root, want[r])
			require.True(t, ok)
			require.Equal(t, r, i)
			_, ok = zfind(root, want[r]+"\x00")
			require.False(t, ok)
			require.Equal(t, r+1, zbefore(root, want[r]+"\x00"), "a key between")
			a := rng.IntN(len(want))
			b := a + rng.IntN(len(want)-a)
			var got []string
			zranks(root, 0, a, b, func(k string) bool { got = append(got, k); return true })
			require.Equal(t, want[a:b+1], got)
		}
	}
	for _, v := range versions {
		require.Equal(t, v.keys, zcheck(t, v.root), "an older version changed")
	}
	built := zbuild(want)
	require.Equal(t, want, zcheck(t, built))
	for _, k := range want[:100] { // a built tree takes inserts and deletes too
		built = zdelete(built, k)
	}
	require.Equal(t, want[100:], zcheck(t, built))
}
