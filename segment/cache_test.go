package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"runtime"
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
	_, err := s.r.Meta()
	require.NoError(t, err)
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
	askRandom(t, rand.New(rand.NewPCG(1, 2)), s) // read again, for the question alone
	held, loaded = c.Held()
	require.Zero(t, held, "a forgotten reader's index is not kept again")
	require.Zero(t, loaded)
}

// TestCacheForgetBeforeAdmit: a Forget between a question's load of the
// index and its admission still leaves nothing in the cache.
func TestCacheForgetBeforeAdmit(t *testing.T) {
	c := NewCache(-1)
	s := cachedSegments(t, c, 1)[0]
	s.r.mu.Lock()
	ix, err := s.r.loadIndex()
	require.NoError(t, err)
	s.r.ix.Store(ix) // as index does, before admit
	c.Forget(s.r)
	c.admit(s.r, ix)
	s.r.mu.Unlock()
	held, loaded := c.Held()
	require.Zero(t, held)
	require.Zero(t, loaded)
	require.Zero(t, s.r.IndexBytes())
}

// sameSegments writes n segments of the same entries, whose indexes are
// the same size, and opens them in c.
func sameSegments(t *testing.T, c *Cache, n int) []cachedSegment {
	es := randomEntries(rand.New(rand.NewPCG(8, 8)), 300)
	file := build(t, es, 300, 128)
	out := make([]cachedSegment, n)
	for i := range out {
		r, err := c.Open(bytes.NewReader(file), int64(len(file)))
		require.NoError(t, err)
		out[i] = cachedSegment{r, es}
	}
	return out
}

// TestCacheClock: with room for two indexes, the one a question used
// since the hand last passed stays, and the one not asked again goes.
func TestCacheClock(t *testing.T) {
	probe := sameSegments(t, NewCache(-1), 1)[0].r
	require.NoError(t, probe.Load())
	c := NewCache(2 * probe.IndexBytes())
	segs := sameSegments(t, c, 3)
	rng := rand.New(rand.NewPCG(3, 3))
	a, b, cc := segs[0], segs[1], segs[2]
	askRandom(t, rng, a)
	askRandom(t, rng, b)
	askRandom(t, rng, cc) // the hand clears A's and B's marks, and lets A go
	require.Zero(t, a.r.IndexBytes())
	askRandom(t, rng, b) // marks B again
	askRandom(t, rng, a) // the hand clears C's mark, passes B's, and lets C go
	require.Positive(t, a.r.IndexBytes())
	require.Positive(t, b.r.IndexBytes(), "B was asked since the hand passed it")
	require.Zero(t, cc.r.IndexBytes())
}

// TestCacheEvictMidQuestion: a question goes on with the index it
// started with when the cache lets that index go under it.
func TestCacheEvictMidQuestion(t *testing.T) {
	c := NewCache(-1)
	s := cachedSegments(t, c, 1)[0]
	key := s.es[0].Key
	var want []int64
	for _, e := range s.es {
		if e.Key == key {
			want = append(want, e.Rev)
		}
	}
	next, stop := iter.Pull2(s.r.History(key, 1, 300))
	defer stop()
	var got []int64
	for {
		e, err, ok := next()
		if !ok {
			break
		}
		require.NoError(t, err)
		got = append(got, e.Rev)
		c.Forget(s.r)
	}
	require.Equal(t, want, got)
}

// TestTimeIndexCountForged: a footer whose range is forged (its checksum
// redone) near the top of int64, with an index whose time-block count
// matches it (checksum redone too), is ErrCorrupt: never a panic, and
// never an array made of that count.
func TestTimeIndexCountForged(t *testing.T) {
	bad := func(what string) error { return fmt.Errorf("%w: %s", ErrCorrupt, what) }
	for _, last := range []int64{math.MaxInt64, 1 << 40} {
		sr := &Reader{footer: Footer{First: 1, Last: last, TimesFrom: 1}}
		wrapped := (last + timesPerBlock - 1) / timesPerBlock // where rounding up overflows
		exact := last / timesPerBlock
		if last%timesPerBlock != 0 {
			exact++
		}
		for _, n := range []uint64{uint64(wrapped), uint64(exact)} {
			raw := append(binary.AppendUvarint(nil, n), make([]byte, 64)...)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := sr.decodeTimeIndex(&index{}, &decoder{b: raw}, headerSize, bad)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, ErrCorrupt, "Last %d, count %d", last, n)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "Last %d, count %d", last, n)
		}
	}
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
	held, n := c.Held()
	var sum int64
	for _, s := range segs {
		sum += s.r.IndexBytes()
	}
	require.Equal(t, sum, held)
	seen := map[*Reader]bool{}
	for _, r := range c.loaded {
		require.False(t, seen[r], "a reader loaded twice")
		seen[r] = true
	}
	require.Len(t, seen, n)
}
