package segment

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// cachedSegment is a segment opened in a cache, with the entries it holds.
type cachedSegment struct {
	r  *Reader
	es []Entry // in (key, revision) order
}

// cachedSegments writes n random segments and opens them in c.
func cachedSegments(t *testing.T, c *Cache, n int) []cachedSegment {
	out := make([]cachedSegment, n)
	for i := range out {
		rng := rand.New(rand.NewPCG(uint64(i), 21))
		es := randomEntries(rng, 300)
		file := build(t, es, 300, 128)
		r, err := c.Open(bytes.NewReader(file), int64(len(file)))
		require.NoError(t, err)
		out[i] = cachedSegment{r, es}
	}
	return out
}

// newest is key's newest entry at or below rev in es, by brute force.
func newest(es []Entry, key string, rev int64) (Entry, bool) {
	var found Entry
	ok := false
	for _, e := range es {
		if e.Key == key && e.Rev <= rev {
			found, ok = e, true
		}
	}
	return found, ok
}

// askRandom asks s a random point read and a random time, and checks the
// answers against its entries.
func askRandom(t *testing.T, rng *rand.Rand, s cachedSegment) {
	e := s.es[rng.IntN(len(s.es))]
	rev := rng.Int64N(302)
	got, ok, err := s.r.Get(e.Key, rev)
	require.NoError(t, err)
	want, wantOK := newest(s.es, e.Key, rev)
	require.Equal(t, wantOK, ok, "Get(%q, %d)", e.Key, rev)
	if ok {
		require.Equal(t, want.Rev, got.Rev)
		require.Equal(t, want.Value, got.Value)
	}
	sec, nsec, err := s.r.TimeOf(e.Rev)
	require.NoError(t, err)
	require.Equal(t, [2]int64{e.Sec, int64(e.Nsec)}, [2]int64{sec, int64(nsec)})
}

// TestCacheBound: readers sharing a cache answer exactly whatever it has
// let go, and the indexes it holds stay within its budget, or are one
// index that alone passes it.
func TestCacheBound(t *testing.T) {
	probe := cachedSegments(t, NewCache(-1), 1)[0].r
	require.NoError(t, probe.Load())
	one := probe.IndexBytes()
	require.Positive(t, one)
	for _, budget := range []int64{0, one * 5 / 2, -1} {
		t.Run(fmt.Sprint("budget=", budget), func(t *testing.T) {
			c := NewCache(budget)
			segs := cachedSegments(t, c, 8)
			rng := rand.New(rand.NewPCG(5, 6))
			for range 3000 {
				askRandom(t, rng, segs[rng.IntN(len(segs))])
				held, n := c.Held()
				var sum int64
				for _, s := range segs {
					sum += s.r.IndexBytes()
				}
				require.Equal(t, sum, held, "the cache counts what its readers hold")
				if budget >= 0 {
					require.True(t, held <= budget || n == 1, "%d bytes in %d indexes, budget %d", held, n, budget)
				}
			}
			if _, n := c.Held(); budget < 0 {
				require.Equal(t, len(segs), n, "no bound: every index stays")
			}
		})
	}
}

// TestCacheScanKeepsNothing: a read of a whole segment (Revisions, All,
// Times) does not load its index into the cache, so a stream over many
// segments holds one index at a time; a point read does.
func TestCacheScanKeepsNothing(t *testing.T) {
	c := NewCache(-1)
	s := cachedSegments(t, c, 1)[0]
	n := 0
	for _, err := range s.r.Revisions(1, 300) {
		require.NoError(t, err)
		n++
	}
	for _, err := range s.r.All() {
		require.NoError(t, err)
	}
	for _, err := range s.r.Times(1) {
		require.NoError(t, err)
	}
	require.Equal(t, len(s.es), n)
	held, loaded := c.Held()
	require.Zero(t, held)
	require.Zero(t, loaded)
	askRandom(t, rand.New(rand.NewPCG(1, 1)), s)
	held, loaded = c.Held()
	require.Equal(t, s.r.IndexBytes(), held)
	require.Equal(t, 1, loaded)

	c.Forget(s.r)
	held, loaded = c.Held()
	require.Zero(t, held)
	require.Zero(t, loaded)
	require.Zero(t, s.r.IndexBytes())
	askRandom(t, rand.New(rand.NewPCG(1, 2)), s) // read again
}

// TestCacheConcurrent: questions on readers of one small cache, from
// several goroutines at once, with streams among them, all answer exactly
// while the cache lets indexes go under them (run with -race).
func TestCacheConcurrent(t *testing.T) {
	probe := cachedSegments(t, NewCache(-1), 1)[0].r
	require.NoError(t, probe.Load())
	c := NewCache(probe.IndexBytes() * 2)
	segs := cachedSegments(t, c, 6)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for i := range 400 {
				s := segs[rng.IntN(len(segs))]
				if i%50 == 0 {
					n := 0
					for _, err := range s.r.Revisions(1, 300) {
						require.NoError(t, err)
						n++
					}
					require.Equal(t, len(s.es), n)
					continue
				}
				askRandom(t, rng, s)
				if i%97 == 0 {
					c.Forget(s.r)
				}
			}
		})
	}
	wg.Wait()
}
