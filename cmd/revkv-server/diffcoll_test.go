package main

import (
	"fmt"
	"slices"
	"strings"
)

// The collection commands of TestDifferential: hashes, lists, sets and
// sorted sets, on the same eight keys as the strings' (so WRONGTYPE and
// overwrites come up), with few distinct members so that operations meet.

func (g *gen) member() string {
	if g.rng.IntN(20) == 0 {
		return g.pick("", "x y", "\x00", "9223372036854775808")
	}
	return g.pick("a", "b", "c", "d", "1", "2", "-3", "10")
}

func (g *gen) score() string {
	if g.rng.IntN(10) == 0 {
		return g.pick("inf", "-inf", "+inf", "nan", "x", "1e400", "0x10", " 1", "1.5e3", "-0")
	}
	return fmt.Sprint(g.rng.IntN(10) - 3)
}

func (g *gen) scoreBound() string {
	switch g.rng.IntN(6) {
	case 0:
		return g.pick("-inf", "+inf", "(1", "(x", "[1", "")
	case 1:
		return "(" + g.score()
	}
	return g.score()
}

func (g *gen) lexBound() string {
	switch g.rng.IntN(5) {
	case 0:
		return g.pick("-", "+", "x", "", "[")
	case 1:
		return "(" + g.member()
	}
	return "[" + g.member()
}

func (g *gen) index() string {
	if g.rng.IntN(8) == 0 {
		return g.edge()
	}
	return fmt.Sprint(g.rng.IntN(9) - 4)
}

func (g *gen) members(n int) []any {
	a := make([]any, 0, n)
	for range n {
		a = append(a, g.member())
	}
	return a
}

// collCommand draws a collection command.
func (g *gen) collCommand() []any {
	k, k2 := g.key(), g.key()
	m := g.member()
	switch g.rng.IntN(43) {
	case 40: // random picks: compared by their shape (see randomShape)
		a := []any{g.pick("srandmember", "hrandfield", "zrandmember"), k}
		if g.rng.IntN(3) > 0 {
			a = append(a, g.pick("0", "1", "3", "-2", "-5", "x", "100"))
		}
		if len(a) == 3 && a[0] != "srandmember" && g.rng.IntN(2) == 0 {
			a = append(a, g.pick("withvalues", "withscores"))
		}
		return a
	case 41: // in one call (COUNT 100): the cursors of Redis's hash tables differ
		a := []any{g.pick("hscan", "sscan", "zscan"), k, "0", "count", "100"}
		if g.rng.IntN(3) == 0 {
			a = append(a, "match", g.pick("*", "a*", "[0-9]", "1"))
		}
		return a
	case 42: // not OBJECT: a string's encoding follows how Redis made it (embstr, raw), which revkv does not keep
		return []any{"type", k}
	case 0, 1:
		a := []any{g.pick("hset", "hmset"), k}
		for range 1 + g.rng.IntN(3) {
			a = append(a, g.member(), g.value())
		}
		return a
	case 2:
		return []any{g.pick("hget", "hexists", "hstrlen"), k, m}
	case 3:
		return append([]any{g.pick("hdel", "hmget"), k}, g.members(1+g.rng.IntN(3))...)
	case 4:
		return []any{g.pick("hlen", "hgetall", "hkeys", "hvals", "type", "object"), k}
	case 5:
		return []any{g.pick("hincrby", "hincrbyfloat", "hsetnx"), k, m, g.pick("1", "-2", "1.5", "x", "inf", "9223372036854775807")}
	case 6, 7:
		return append([]any{g.pick("lpush", "rpush", "lpushx", "rpushx"), k}, g.members(1+g.rng.IntN(3))...)
	case 8:
		a := []any{g.pick("lpop", "rpop"), k}
		if g.rng.IntN(2) == 0 {
			a = append(a, g.pick("0", "1", "2", "-1", "x"))
		}
		return a
	case 9:
		return []any{g.pick("lrange", "ltrim"), k, g.index(), g.index()}
	case 10:
		return []any{g.pick("lindex", "llen"), k, g.index()}[:2+g.rng.IntN(2)]
	case 11:
		return []any{"lset", k, g.index(), m}
	case 12:
		return []any{"lrem", k, g.index(), m}
	case 13:
		return []any{"linsert", k, g.pick("before", "after", "x"), m, g.member()}
	case 14:
		a := []any{"lpos", k, m}
		for range g.rng.IntN(3) {
			a = append(a, g.pick("rank", "count", "maxlen"), g.index())
		}
		return a
	case 15:
		return []any{"lmove", k, k2, g.pick("left", "right", "x"), g.pick("left", "right")}
	case 16:
		return []any{g.pick("rpoplpush", "smove"), k, k2, m}[:3+g.rng.IntN(2)]
	case 17:
		return []any{g.pick("lmpop", "zmpop"), g.pick("1", "2", "0", "x"), k, k2, g.pick("left", "right", "min", "max"), "count", g.pick("1", "3", "0")}[:5+2*g.rng.IntN(2)]
	case 18, 19:
		return append([]any{g.pick("sadd", "srem", "smismember"), k}, g.members(1+g.rng.IntN(3))...)
	case 20:
		return []any{g.pick("smembers", "scard", "sismember"), k, m}[:2+g.rng.IntN(2)]
	case 21:
		return append([]any{g.pick("sinter", "sunion", "sdiff")}, g.keys()...)
	case 22:
		return append([]any{g.pick("sinterstore", "sunionstore", "sdiffstore"), k}, g.keys()...)
	case 23:
		return append([]any{"sintercard", g.pick("1", "2", "0", "3")}, append(g.keys(), g.pick("limit", "1"), g.pick("1", "0", "-1"))...)
	case 24, 25:
		a := []any{"zadd", k}
		for range g.rng.IntN(3) {
			a = append(a, g.pick("nx", "xx", "gt", "lt", "ch", "incr"))
		}
		for range 1 + g.rng.IntN(3) {
			a = append(a, g.score(), g.member())
		}
		return a
	case 26:
		return []any{g.pick("zincrby", "zscore", "zrank", "zrevrank", "zrem"), k, g.score(), m}[:3+g.rng.IntN(2)]
	case 27:
		return append([]any{g.pick("zmscore", "zrem"), k}, g.members(1+g.rng.IntN(3))...)
	case 28:
		return []any{g.pick("zcard", "zcount"), k, g.scoreBound(), g.scoreBound()}[:2+2*g.rng.IntN(2)]
	case 29: // on keys of one score: lex ranges over several are undefined in Redis
		if g.rng.IntN(3) == 0 {
			return append([]any{"zadd", g.lexKey(), "0"}, g.member())
		}
		return []any{g.pick("zlexcount", "zrangebylex", "zrevrangebylex", "zremrangebylex"), g.lexKey(), g.lexBound(), g.lexBound()}
	case 30, 31:
		a := []any{g.pick("zrange", "zrangestore"), k}
		if a[0] == "zrangestore" {
			a = append(a, k2)
		}
		by := g.rng.IntN(3)
		switch by {
		case 0:
			a = append(a, g.index(), g.index())
		case 1:
			a = append(a, g.scoreBound(), g.scoreBound(), "byscore")
		case 2:
			a[1] = g.lexKey()
			a = append(a, g.lexBound(), g.lexBound(), "bylex")
		}
		for range g.rng.IntN(3) {
			switch g.rng.IntN(3) {
			case 0:
				a = append(a, "rev")
			case 1:
				a = append(a, "withscores")
			case 2:
				a = append(a, "limit", g.index(), g.index())
			}
		}
		return a
	case 32:
		a := []any{g.pick("zrangebyscore", "zrevrangebyscore", "zremrangebyscore"), k, g.scoreBound(), g.scoreBound()}
		if a[0] != "zremrangebyscore" && g.rng.IntN(2) == 0 {
			a = append(a, "withscores")
		}
		if a[0] != "zremrangebyscore" && g.rng.IntN(2) == 0 {
			a = append(a, "limit", g.index(), g.index())
		}
		return a
	case 33:
		return []any{g.pick("zrevrange", "zremrangebyrank"), k, g.index(), g.index(), "withscores"}[:4+g.rng.IntN(2)]
	case 34:
		return []any{g.pick("zpopmin", "zpopmax"), k, g.pick("1", "2", "0", "-1", "x")}[:2+g.rng.IntN(2)]
	case 35:
		keys := g.keys()
		a := []any{g.pick("zunion", "zinter", "zdiff", "zunionstore", "zinterstore", "zdiffstore")}
		if strings.HasSuffix(a[0].(string), "store") {
			a = append(a, k)
		}
		a = append(a, fmt.Sprint(len(keys)))
		a = append(a, keys...)
		if g.rng.IntN(2) == 0 {
			a = append(a, "weights")
			for range keys {
				a = append(a, g.pick("1", "2", "-1", "x", "inf"))
			}
		}
		if g.rng.IntN(2) == 0 {
			a = append(a, "aggregate", g.pick("sum", "min", "max", "x"))
		}
		if g.rng.IntN(2) == 0 {
			a = append(a, "withscores")
		}
		return a
	case 36:
		return append([]any{"zintercard", g.pick("1", "2", "0", "x")}, g.keys()...)
	case 37:
		return []any{g.pick("blpop", "brpop", "bzpopmin", "bzpopmax"), k, k2, g.pick("0.01", "-1", "x")}
	case 38:
		return []any{g.pick("del", "exists", "type", "rename", "copy"), k, k2}
	case 39:
		return []any{"scan", "0", "type", g.pick("string", "hash", "list", "set", "zset", "x"), "count", "100"} // one call: cursors differ
	}
	return nil
}

// lexKey is a sorted set whose members all score 0.
func (g *gen) lexKey() string { return g.pick("lex0", "lex1") }

func (g *gen) keys() []any {
	a := []any{}
	for range 1 + g.rng.IntN(3) {
		a = append(a, g.key())
	}
	return a
}

// randomShape prints a random pick's reply by its shape: nil, one
// element, or how many (and, with values or scores, in pairs).
func randomShape(v any) string {
	switch v := v.(type) {
	case []any:
		return fmt.Sprintf("%d elements", len(v))
	case string:
		return "one element"
	}
	return fmt.Sprintf("%#v", v)
}

// scanReply prints a one-call HSCAN, SSCAN or ZSCAN: its cursor, then its
// elements (in pairs but for SSCAN) sorted.
func scanReply(name string, v any) string {
	r, ok := v.([]any)
	if !ok || len(r) != 2 {
		return fmt.Sprintf("%#v", v)
	}
	n := 2
	if name == "sscan" {
		n = 1
	}
	return fmt.Sprint(r[0], " ", sortedReply(r[1], n))
}

// unordered are the collection commands whose replies come in no order in
// Redis (a hash table's): compared sorted. Pairs (HGETALL) sort by pair.
var unordered = map[string]int{"hkeys": 1, "hvals": 1, "smembers": 1, "sinter": 1, "sunion": 1,
	"sdiff": 1, "hgetall": 2}

// sortedReply prints v's elements (in groups of n) sorted.
func sortedReply(v any, n int) string {
	xs, ok := v.([]any)
	if !ok {
		return fmt.Sprintf("%#v", v)
	}
	var groups []string
	for i := 0; i+n <= len(xs); i += n {
		groups = append(groups, fmt.Sprint(xs[i:i+n]))
	}
	slices.Sort(groups)
	return fmt.Sprint(groups)
}
