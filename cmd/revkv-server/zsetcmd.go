package main

import (
	"math"
	"strings"

	"github.com/revkv/revkv"
)

func init() {
	register(
		&command{name: "zadd", arity: -4, write: cmdZAdd},
		&command{name: "zincrby", arity: 4, write: cmdZIncrBy},
		&command{name: "zrem", arity: -3, write: cmdZRem},
		&command{name: "zcard", arity: 2, read: func(c *client, r reader, a [][]byte) { cardinality(c, r, a, tZset) }},
		&command{name: "zscore", arity: 3, read: cmdZScore},
		&command{name: "zmscore", arity: -3, read: cmdZMScore},
		&command{name: "zcount", arity: 4, read: func(c *client, r reader, a [][]byte) { zCountCmd(c, r, a, 's') }},
		&command{name: "zlexcount", arity: 4, read: func(c *client, r reader, a [][]byte) { zCountCmd(c, r, a, 'l') }},
		&command{name: "zrank", arity: 3, read: func(c *client, r reader, a [][]byte) { zRankCmd(c, r, a, false) }},
		&command{name: "zrevrank", arity: 3, read: func(c *client, r reader, a [][]byte) { zRankCmd(c, r, a, true) }},
		&command{name: "zrange", arity: -4, read: func(c *client, r reader, a [][]byte) { zRangeCmd(c, r.kv(), a, 0, false, false, nil) }},
		&command{name: "zrangebyscore", arity: -4, read: func(c *client, r reader, a [][]byte) { zRangeCmd(c, r.kv(), a, 's', false, false, nil) }},
		&command{name: "zrevrangebyscore", arity: -4, read: func(c *client, r reader, a [][]byte) { zRangeCmd(c, r.kv(), a, 's', true, false, nil) }},
		&command{name: "zrangebylex", arity: -4, read: func(c *client, r reader, a [][]byte) { zRangeCmd(c, r.kv(), a, 'l', false, false, nil) }},
		&command{name: "zrevrangebylex", arity: -4, read: func(c *client, r reader, a [][]byte) { zRangeCmd(c, r.kv(), a, 'l', true, false, nil) }},
		&command{name: "zrevrange", arity: -4, read: func(c *client, r reader, a [][]byte) { zRangeCmd(c, r.kv(), a, 'r', true, false, nil) }},
		&command{name: "zrangestore", arity: -5, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { zRangeCmd(c, tx, a[1:], 0, false, true, tx) }},
		&command{name: "zremrangebyscore", arity: 4, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { zRemRange(c, tx, a, 's') }},
		&command{name: "zremrangebyrank", arity: 4, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { zRemRange(c, tx, a, 'r') }},
		&command{name: "zremrangebylex", arity: 4, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { zRemRange(c, tx, a, 'l') }},
	)
}

// zaddFlags are ZADD's options.
type zaddFlags struct{ nx, xx, gt, lt, ch, incr bool }

func cmdZAdd(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	var f zaddFlags
	i := 2
flags:
	for ; i < len(a); i++ {
		switch strings.ToUpper(string(a[i])) {
		case "NX":
			f.nx = true
		case "XX":
			f.xx = true
		case "GT":
			f.gt = true
		case "LT":
			f.lt = true
		case "CH":
			f.ch = true
		case "INCR":
			f.incr = true
		default:
			break flags
		}
	}
	els := len(a) - i
	switch {
	case els == 0 || els%2 != 0:
		c.w.Error(errSyntax)
		return
	case f.nx && f.xx:
		c.w.Error("ERR XX and NX options at the same time are not compatible")
		return
	case f.nx && (f.gt || f.lt) || f.gt && f.lt:
		c.w.Error("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	case f.incr && els > 2:
		c.w.Error("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, 0, els/2)
	for j := i; j < len(a); j += 2 {
		s, ok := parseScore(a[j])
		if !ok {
			c.w.Error(errNotFloat)
			return
		}
		scores = append(scores, s)
	}
	m := load(c, tx, string(a[1]), tZset)
	if m == nil {
		return
	}
	added, changed := 0, 0
	var incrResult *float64
	for k, s := range scores {
		member := string(a[i+2*k+1])
		cur, had := m.zScore(tx, member)
		if f.incr && had {
			s += cur
			if math.IsNaN(s) {
				c.w.Error("ERR resulting score is not a number (NaN)")
				return
			}
		}
		if had && (f.nx || f.gt && s <= cur || f.lt && s >= cur) || !had && f.xx {
			continue
		}
		if f.incr {
			incrResult = &s
		}
		if !had {
			added++
		} else if s != cur {
			changed++
		}
		m.zSet(tx, member, s)
	}
	if added+changed > 0 {
		m.save(tx)
	}
	switch {
	case f.incr && incrResult == nil:
		c.w.Null()
	case f.incr:
		c.w.Double(formatScore(*incrResult))
	case f.ch:
		c.w.Int(int64(added + changed))
	default:
		c.w.Int(int64(added))
	}
}

func cmdZIncrBy(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	cmdZAdd(c, tx, [][]byte{a[0], a[1], []byte("INCR"), a[2], a[3]})
}

func cmdZRem(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	m := load(c, tx, string(a[1]), tZset)
	if m == nil {
		return
	}
	n := 0
	for _, x := range a[2:] {
		if m.zDel(tx, string(x)) {
			n++
		}
	}
	if n > 0 {
		m.save(tx)
	}
	c.w.Int(int64(n))
}

func cmdZScore(c *client, r reader, a [][]byte) {
	k := r.kv()
	if m := load(c, k, string(a[1]), tZset); m != nil {
		if s, ok := m.zScore(k, string(a[2])); ok {
			c.w.Double(formatScore(s))
		} else {
			c.w.Null()
		}
	}
}

func cmdZMScore(c *client, r reader, a [][]byte) {
	k := r.kv()
	m := load(c, k, string(a[1]), tZset)
	if m == nil {
		return
	}
	c.w.Array(len(a) - 2)
	for _, x := range a[2:] {
		if s, ok := m.zScore(k, string(x)); ok {
			c.w.Double(formatScore(s))
		} else {
			c.w.Null()
		}
	}
}

// parseBounds reads a score ('s') or lex ('l') range into q.
func parseBounds(c *client, q *zquery, min, max []byte) bool {
	var ok1, ok2 bool
	if q.by == 's' {
		q.min, ok1 = parseScoreBound(min)
		q.max, ok2 = parseScoreBound(max)
		if !ok1 || !ok2 {
			c.w.Error(errScoreRange)
			return false
		}
		return true
	}
	q.lmin, ok1 = parseLexBound(min)
	q.lmax, ok2 = parseLexBound(max)
	if !ok1 || !ok2 {
		c.w.Error(errLexRange)
		return false
	}
	return true
}

func zCountCmd(c *client, r reader, a [][]byte, by byte) {
	q := zquery{by: by}
	if !parseBounds(c, &q, a[2], a[3]) {
		return
	}
	k := r.kv()
	if m := load(c, k, string(a[1]), tZset); m != nil {
		c.w.Int(m.zCount(k, q))
	}
}

func zRankCmd(c *client, r reader, a [][]byte, rev bool) {
	k := r.kv()
	m := load(c, k, string(a[1]), tZset)
	if m == nil {
		return
	}
	if rank, ok := m.zRank(k, string(a[2]), rev); ok {
		c.w.Int(rank)
	} else {
		c.w.Null()
	}
}

// zRangeCmd is ZRANGE (by 0: BYSCORE, BYLEX and REV among the options),
// ZRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGE... (by and rev fixed), and with
// tx ZRANGESTORE (a is then shifted: a[0] the destination).
func zRangeCmd(c *client, r kv, a [][]byte, by byte, rev, store bool, tx *revkv.Txn[[]byte]) {
	q := zquery{by: by, rev: rev, limit: -1}
	auto := by == 0
	if auto {
		q.by = 'r'
	}
	withScores, limited := false, false
	for i := 4; i < len(a); i++ {
		switch opt := strings.ToUpper(string(a[i])); {
		case opt == "WITHSCORES" && !store:
			withScores = true
		case opt == "LIMIT" && i+2 < len(a):
			off, ok1 := parseInt(a[i+1])
			lim, ok2 := parseInt(a[i+2])
			if !ok1 || !ok2 {
				c.w.Error(errNotInt)
				return
			}
			q.offset, q.limit, limited = off, lim, lim != -1 // Redis refuses a rank range's LIMIT by its count alone
			i += 2
		case auto && q.by == 'r' && opt == "BYSCORE": // once, as Redis
			q.by = 's'
		case auto && q.by == 'r' && opt == "BYLEX":
			q.by = 'l'
		case auto && !q.rev && opt == "REV":
			q.rev = true
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if withScores && q.by == 'l' {
		c.w.Error("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return
	}
	if limited && q.by == 'r' {
		c.w.Error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return
	}
	lo, hi := a[2], a[3]
	if q.rev && q.by != 'r' {
		lo, hi = hi, lo
	}
	if q.by == 'r' {
		var ok1, ok2 bool
		q.start, ok1 = parseInt(lo)
		q.stop, ok2 = parseInt(hi)
		if !ok1 || !ok2 {
			c.w.Error(errNotInt)
			return
		}
	} else if !parseBounds(c, &q, lo, hi) {
		return
	}
	m := load(c, r, string(a[1]), tZset)
	if m == nil {
		return
	}
	els := m.zRange(r, q)
	if !store {
		zReply(c, els, withScores)
		return
	}
	storeZset(c, tx, string(a[0]), els)
	c.w.Int(int64(len(els)))
}

// storeZset replaces dst by a sorted set of els (none: dst is deleted).
func storeZset(c *client, tx *revkv.Txn[[]byte], dst string, els []zel) {
	del(tx, dst)
	m := &meta{key: dst, typ: tZset, lim: &c.srv.limits, zc: &c.srv.zsets, zt: c.ztx}
	for _, z := range els {
		m.zSet(tx, z.member, z.score)
	}
	m.save(tx)
}

func zRemRange(c *client, tx *revkv.Txn[[]byte], a [][]byte, by byte) {
	q := zquery{by: by, limit: -1}
	if by == 'r' {
		var ok1, ok2 bool
		q.start, ok1 = parseInt(a[2])
		q.stop, ok2 = parseInt(a[3])
		if !ok1 || !ok2 {
			c.w.Error(errNotInt)
			return
		}
	} else if !parseBounds(c, &q, a[2], a[3]) {
		return
	}
	m := load(c, tx, string(a[1]), tZset)
	if m == nil {
		return
	}
	els := m.zRange(tx, q)
	for _, z := range els {
		m.zDel(tx, z.member)
	}
	if len(els) > 0 {
		m.save(tx)
	}
	c.w.Int(int64(len(els)))
}
