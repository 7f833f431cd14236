package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestZRankCacheDifferential runs random sorted-set writes against a
// server — every write path that changes a set's members, DEL, expiries
// of a few milliseconds, RENAME, COPY, the STORE commands into cached
// keys, SET over a set, FLUSHALL, MULTI/EXEC (committed, aborted by a
// queued error, aborted by WATCH) — and checks the answers of ZRANK,
// ZREVRANK, ZCOUNT, ZLEXCOUNT and ZRANGE/ZREVRANGE by rank, which come
// from the rank cache (zcache.go), against the same set read by a walk of
// its index (ZRANGEBYSCORE -inf +inf), with a model of each command here.
// Reads run alone (between two walks: an expiry in between skips the
// check), inside EXEC after the transaction's own writes, and at a past
// revision (REVKV.AT). It runs with the default cache, with one too
// small for the larger sets (eviction, and the walk for what does not
// fit), and with none (the walk alone); the cache must have served most
// reads and never have been inconsistent with a set.
func TestZRankCacheDifferential(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cache int64
	}{{"default", 0}, {"small", 60}, {"none", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr := startServer(t, config{zsetCache: tc.cache})
			cl := newClient(t, addr)
			conn := cl.Conn()
			defer conn.Close()
			other := newClient(t, addr)
			z := &zdiff{t: t, rng: rand.New(rand.NewPCG(7, uint64(tc.cache))), c: conn, other: other}
			z.fillBig()
			steps := 3000
			if testing.Short() {
				steps = 600
			}
			for i := range steps {
				z.step(i)
			}
			require.Zero(t, s.zsets.bad.Load(), "a tree disagreed with its set")
			if tc.cache >= 0 {
				require.Greater(t, s.zsets.hits.Load(), int64(steps/4), "the cache served the reads")
			} else {
				require.Zero(t, s.zsets.hits.Load()+s.zsets.builds.Load(), "no cache: every read walks")
			}
			t.Logf("checks %d (skipped %d), hits %d, builds %d", z.checks, z.skipped, s.zsets.hits.Load(), s.zsets.builds.Load())
			s.zsets.mu.Lock()
			total := int64(0)
			for _, e := range s.zsets.gens {
				total += int64(zsize(e.root))
			}
			require.Equal(t, s.zsets.total, total)
			require.LessOrEqual(t, total, s.zsets.max)
			s.zsets.mu.Unlock()
		})
	}
}

type zdiff struct {
	t               *testing.T
	rng             *rand.Rand
	c               *redis.Conn
	other           *redis.Client
	checks, skipped int
}

var zKeys = []string{"z0", "z1", "z2", "l0", "l1", "big"}

func (z *zdiff) pick(xs ...string) string { return xs[z.rng.IntN(len(xs))] }
func (z *zdiff) key() string              { return z.pick(zKeys...) }
func (z *zdiff) lex(k string) bool        { return k[0] == 'l' } // every score 0: ZLEXCOUNT by the tree

func (z *zdiff) member(k string) string {
	if k == "big" {
		return fmt.Sprintf("b%03d", z.rng.IntN(400))
	}
	return string(rune('a' + z.rng.IntN(12)))
}

func (z *zdiff) score(k string) string {
	if z.lex(k) {
		return "0"
	}
	if z.rng.IntN(12) == 0 {
		return z.pick("inf", "-inf", "-0", "1.5", "0")
	}
	return strconv.Itoa(z.rng.IntN(10) - 3)
}

func (z *zdiff) rank(k string) string {
	if k == "big" {
		return strconv.Itoa(z.rng.IntN(400) - 100)
	}
	return strconv.Itoa(z.rng.IntN(16) - 5)
}

func (z *zdiff) scoreBound() string {
	b := z.pick("-inf", "+inf", "-3", "-1", "0", "-0", "1", "2", "5", "1.5", "inf")
	if z.rng.IntN(3) == 0 {
		b = "(" + b
	}
	return b
}

func (z *zdiff) lexBound(k string) string {
	if z.rng.IntN(6) == 0 {
		return z.pick("-", "+")
	}
	return z.pick("[", "(") + z.member(k)
}

func (z *zdiff) do(args ...any) any { return do(z.c, args...) }

// fillBig makes "big" larger than zWalkMax at both ends, so that ranges in
// its middle build trees.
func (z *zdiff) fillBig() {
	args := []any{"zadd", "big"}
	for i := range 300 {
		args = append(args, i%37, fmt.Sprintf("b%03d", i))
	}
	z.do(args...)
}

// write draws one write.
func (z *zdiff) write() []any {
	k, k2 := z.key(), z.key()
	switch z.rng.IntN(20) {
	case 0, 1, 2, 3:
		a := []any{"zadd", k}
		for _, f := range []string{"nx", "xx", "gt", "lt", "ch", "incr"} {
			if z.rng.IntN(8) == 0 {
				a = append(a, f)
			}
		}
		for range 1 + z.rng.IntN(4) {
			a = append(a, z.score(k), z.member(k))
		}
		return a
	case 4:
		return []any{"zincrby", k, z.score(k), z.member(k)}
	case 5:
		return []any{"zrem", k, z.member(k), z.member(k)}
	case 6:
		return []any{z.pick("zpopmin", "zpopmax"), k, 1 + z.rng.IntN(3)}
	case 7:
		return []any{"zremrangebyrank", k, z.rank(k), z.rank(k)}
	case 8:
		return []any{"zremrangebyscore", k, z.scoreBound(), z.scoreBound()}
	case 9:
		return []any{"zremrangebylex", k, z.lexBound(k), z.lexBound(k)}
	case 10:
		if k == "big" && z.rng.IntN(4) > 0 {
			return []any{"zadd", k, z.score(k), z.member(k)}
		}
		return []any{z.pick("del", "unlink"), k}
	case 11:
		if k == "big" {
			return []any{"expire", k, 100}
		}
		return []any{"pexpire", k, 1 + z.rng.IntN(20)}
	case 12:
		if z.rng.IntN(2) == 0 {
			return []any{"persist", k}
		}
		return []any{"expire", k, 100}
	case 13:
		if k2 == "big" || k == "big" && z.rng.IntN(3) > 0 {
			return []any{"zadd", k, z.score(k), z.member(k)}
		}
		return []any{z.pick("rename", "copy"), k, k2}
	case 14:
		return []any{z.pick("zunionstore", "zinterstore", "zdiffstore"), k, 2, k2, z.key()}
	case 15:
		return []any{"zrangestore", k, k2, z.rank(k2), z.rank(k2)}
	case 16:
		if z.rng.IntN(40) == 0 {
			if z.rng.IntN(2) == 0 {
				return []any{"set", k, "v"}
			}
			return []any{"flushall"}
		}
		return []any{"zadd", k, z.score(k), z.member(k)}
	case 17:
		return []any{"zmpop", 2, k, k2, z.pick("min", "max"), "count", 1 + z.rng.IntN(3)}
	case 18:
		return []any{z.pick("bzpopmin", "bzpopmax"), k, k2, "0.01"}
	}
	return []any{"zadd", k, "xx", "ch", z.score(k), z.member(k)}
}

// reads draws the reads checked on key k.
func (z *zdiff) reads(k string) [][]any {
	var out [][]any
	for range 2 {
		out = append(out, []any{z.pick("zrank", "zrevrank"), k, z.member(k)})
	}
	out = append(out, []any{"zcount", k, z.scoreBound(), z.scoreBound()})
	out = append(out, []any{"zlexcount", k, z.lexBound(k), z.lexBound(k)})
	if z.rng.IntN(2) == 0 {
		out = append(out, []any{"zrange", k, z.rank(k), z.rank(k), "rev", "withscores"}[:4+z.rng.IntN(3)])
	} else {
		out = append(out, []any{"zrevrange", k, z.rank(k), z.rank(k), "withscores"}[:4+z.rng.IntN(2)])
	}
	return out
}

func (z *zdiff) step(i int) {
	k := z.key()
	switch z.rng.IntN(10) {
	case 0, 1, 2, 3:
		z.do(z.write()...)
	case 4, 5, 6: // reads alone, between two walks
		z.check(i, k)
	case 7: // in EXEC, after the transaction's own writes
		z.do("multi")
		w := 1 + z.rng.IntN(4)
		for range w {
			z.do(z.write()...)
		}
		reads := z.reads(k)
		z.do("zrangebyscore", k, "-inf", "+inf", "withscores")
		for _, r := range reads {
			z.do(r...)
		}
		if z.rng.IntN(3) == 0 {
			z.do(z.write()...) // a write after the reads: published with them
		}
		res, ok := z.do("exec").([]any)
		require.True(z.t, ok, "step %d: EXEC", i)
		z.compare(i, res[w], res[w], reads, res[w+1:w+1+len(reads)])
	case 8: // transactions that write nothing
		z.do(z.write()...)
		if z.rng.IntN(2) == 0 {
			z.do("multi")
			z.do(z.write()...)
			z.do("zadd", k) // refused: EXEC aborts
			require.Contains(z.t, z.do("exec"), "EXECABORT")
		} else {
			z.do("watch", k)
			moved := do(z.other, "zadd", k, z.score(k), fmt.Sprintf("w%d", i)) == int64(1) // a new member
			z.do("multi")
			z.do(z.write()...)
			if res := z.do("exec"); moved {
				require.Nil(z.t, res, "step %d: WATCH aborts", i)
			}
		}
		z.check(i, k)
	case 9: // at a past revision
		rev := z.do("revkv.rev")
		for range 3 {
			z.do(z.write()...)
		}
		at := func(args ...any) any { return z.do(append([]any{"revkv.at", "rev", rev}, args...)...) }
		before := at("zrangebyscore", k, "-inf", "+inf", "withscores")
		reads := z.reads(k)
		got := make([]any, len(reads))
		for j, r := range reads {
			got[j] = at(r...)
		}
		z.compare(i, before, at("zrangebyscore", k, "-inf", "+inf", "withscores"), reads, got)
	}
}

func isWrongType(v any) bool {
	if err, ok := v.(error); ok {
		return err.Error() == errWrongType
	}
	s, ok := v.(string)
	return ok && s == "error: "+errWrongType
}

// check reads k alone and compares.
func (z *zdiff) check(i int, k string) {
	before := z.do("zrangebyscore", k, "-inf", "+inf", "withscores")
	reads := z.reads(k)
	got := make([]any, len(reads))
	for j, r := range reads {
		got[j] = z.do(r...)
	}
	z.compare(i, before, z.do("zrangebyscore", k, "-inf", "+inf", "withscores"), reads, got)
}

// compare checks got against the model over the walk, if the set did not
// change between before and after (an expiry).
func (z *zdiff) compare(i int, before, after any, reads [][]any, got []any) {
	if fmt.Sprint(before) != fmt.Sprint(after) {
		z.skipped++
		return
	}
	if isWrongType(before) || before == nil {
		z.skipped++
		return
	}
	walk := before.([]any)
	els := make([]zel, 0, len(walk)/2)
	for j := 0; j < len(walk); j += 2 {
		s, err := strconv.ParseFloat(walk[j+1].(string), 64)
		require.NoError(z.t, err)
		els = append(els, zel{walk[j].(string), s})
	}
	for j, r := range reads {
		want := zmodel(els, r)
		require.Equal(z.t, fmt.Sprint(want), fmt.Sprint(got[j]), "step %d: %v on %v", i, r, walk)
	}
	z.checks++
}

// zmodel answers a read from the set's members in order, as Redis (and
// the walk the tree replaced) does.
func zmodel(els []zel, r []any) any {
	arg := func(j int) string { return fmt.Sprint(r[j]) }
	switch r[0] {
	case "zrank", "zrevrank":
		j := slices.IndexFunc(els, func(e zel) bool { return e.member == arg(2) })
		switch {
		case j < 0:
			return nil
		case r[0] == "zrevrank":
			return int64(len(els) - 1 - j)
		}
		return int64(j)
	case "zcount":
		lo, _ := parseScoreBound([]byte(arg(2)))
		hi, _ := parseScoreBound([]byte(arg(3)))
		n := int64(0)
		for _, e := range els {
			if lo.aboveMin(e.score) && hi.belowMax(e.score) {
				n++
			}
		}
		return n
	case "zlexcount": // the walk: from the first score's member min, on past other scores, to the first past max
		lo, _ := parseLexBound([]byte(arg(2)))
		hi, _ := parseLexBound([]byte(arg(3)))
		if len(els) == 0 {
			return int64(0)
		}
		j := 0
		if lo.inf == 0 {
			from := encodeScore(els[0].score) + lo.s
			for j < len(els) && encodeScore(els[j].score)+els[j].member < from {
				j++
			}
		}
		n := int64(0)
		for ; j < len(els); j++ {
			if !lo.aboveMin(els[j].member) {
				continue
			}
			if !hi.belowMax(els[j].member) {
				break
			}
			n++
		}
		return n
	}
	rev := r[0] == "zrevrange" || slices.Contains(r, any("rev"))
	withScores := slices.Contains(r, any("withscores"))
	start, _ := strconv.Atoi(arg(2))
	stop, _ := strconv.Atoi(arg(3))
	n := len(els)
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	out := []any{}
	if start > stop || start >= n {
		return out
	}
	stop = min(stop, n-1)
	order := slices.Clone(els)
	if rev {
		slices.Reverse(order)
	}
	for _, e := range order[start : stop+1] {
		out = append(out, e.member)
		if withScores {
			out = append(out, string(formatScore(e.score)))
		}
	}
	return out
}

// TestZRankCacheConcurrent: clients write and query two sets at once
// (trees built by readers race with writes that commit meanwhile; go test
// -race checks the locking); after each round, every member's rank and a
// few counts are checked against a walk of the index.
func TestZRankCacheConcurrent(t *testing.T) {
	s, addr := startServer(t, config{})
	ctx := context.Background()
	rounds, ops := 6, 300
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		done := make(chan error, 4)
		for w := range 4 {
			go func() {
				c := newClient(t, addr)
				rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for range ops {
					k := []string{"y0", "y1"}[rng.IntN(2)]
					m := fmt.Sprint("m", rng.IntN(150))
					var err error
					switch rng.IntN(6) {
					case 0, 1:
						err = c.ZAdd(ctx, k, redis.Z{Score: float64(rng.IntN(20)), Member: m}).Err()
					case 2:
						err = c.ZRem(ctx, k, m).Err()
					case 3:
						err = c.ZRank(ctx, k, m).Err()
					case 4:
						err = c.ZCount(ctx, k, "3", "(12").Err()
					default:
						err = c.ZRange(ctx, k, 70, 80).Err()
					}
					if err != nil && err != redis.Nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
		}
		for range 4 {
			require.NoError(t, <-done)
		}
		c := newClient(t, addr)
		for _, k := range []string{"y0", "y1"} {
			walk := c.ZRangeByScore(ctx, k, &redis.ZRangeBy{Min: "-inf", Max: "+inf"}).Val()
			for rank, m := range walk {
				require.Equal(t, int64(rank), c.ZRank(ctx, k, m).Val(), "round %d: %s %s", round, k, m)
			}
			n := len(c.ZRangeByScore(ctx, k, &redis.ZRangeBy{Min: "3", Max: "(12"}).Val())
			require.Equal(t, int64(n), c.ZCount(ctx, k, "3", "(12").Val())
		}
	}
	require.Zero(t, s.zsets.bad.Load())
}

// TestZRankCacheLatePublish: commits publish their trees after the store's
// lock is let go, so a tree of an older revision can land in the cache
// after a later commit dropped its successor (a reader's build can too).
// Such a tree is stale; a read or a write must not take it up.
func TestZRankCacheLatePublish(t *testing.T) {
	s, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "zadd", "k", 1, "a", 2, "b")
	require.Equal(t, int64(0), do(c, "zrank", "k", "a")) // built
	gen := decodeMeta("k", must(s.store.GetEntry("k"))).gen
	rev := must(s.store.GetEntry("k")).Rev
	s.zsets.mu.Lock()
	old := s.zsets.gens[gen].root
	s.zsets.mu.Unlock()
	do(c, "zadd", "k", 3, "a") // the tree follows: b, a
	s.zsets.drop(gen, math.MaxInt64)
	s.zsets.put(gen, rev, old) // the late one: a, b (as many members)
	do(c, "zadd", "k", 0, "d")
	require.Equal(t, []any{"d", "b", "a"}, do(c, "zrange", "k", 0, -1))
	require.Equal(t, int64(2), do(c, "zrank", "k", "a"))
	require.Equal(t, int64(1), do(c, "zcount", "k", "2", "(3"))
	require.Zero(t, s.zsets.bad.Load())
}

func must[T any](v T, ok bool) T {
	if !ok {
		panic("missing")
	}
	return v
}

// TestZRankCacheConfig: CONFIG SET zset-rank-cache-members bounds the
// cache at once (0 empties it); the answers stay right either way.
func TestZRankCacheConfig(t *testing.T) {
	s, addr := startServer(t, config{zsetCache: 1000})
	c := newClient(t, addr)
	require.Equal(t, []any{"zset-rank-cache-members", "1000"}, do(c, "config", "get", "zset-rank-cache-members"))
	for i := range 300 {
		do(c, "zadd", "k", i, fmt.Sprint("m", i))
	}
	require.Equal(t, int64(150), do(c, "zrank", "k", "m150"))
	require.Equal(t, int64(300), cached(s))
	require.Contains(t, do(c, "config", "set", "zset-rank-cache-members", "-1"), "error")
	require.Equal(t, "OK", do(c, "config", "set", "zset-rank-cache-members", "0"))
	require.Zero(t, cached(s))
	require.Equal(t, int64(151), do(c, "zrank", "k", "m151")) // walked
	require.Zero(t, cached(s))
	require.Equal(t, "OK", do(c, "config", "set", "zset-rank-cache-members", "299"))
	require.Equal(t, int64(152), do(c, "zrank", "k", "m152")) // too large: walked
	do(c, "zrem", "k", "m0")
	require.Equal(t, int64(151), do(c, "zrank", "k", "m152")) // fits now
	require.Equal(t, int64(299), cached(s))
}

// cached is how many members the cache holds.
func cached(s *server) int64 {
	s.zsets.mu.Lock()
	defer s.zsets.mu.Unlock()
	return s.zsets.total
}
