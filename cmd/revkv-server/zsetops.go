package main

import (
	"math"
	"slices"
	"strings"

	"github.com/revkv/revkv"
)

func init() {
	register(
		&command{name: "zpopmin", arity: -2, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { zPopCmd(c, tx, a, false) }},
		&command{name: "zpopmax", arity: -2, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { zPopCmd(c, tx, a, true) }},
		&command{name: "zmpop", arity: -4, write: cmdZMPop},
		&command{name: "zunion", arity: -3, read: func(c *client, r reader, a [][]byte) { zSetOp(c, r.kv(), a, opUnion, nil) }},
		&command{name: "zinter", arity: -3, read: func(c *client, r reader, a [][]byte) { zSetOp(c, r.kv(), a, opInter, nil) }},
		&command{name: "zdiff", arity: -3, read: func(c *client, r reader, a [][]byte) { zSetOp(c, r.kv(), a, opDiff, nil) }},
		&command{name: "zunionstore", arity: -4, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { zSetOp(c, tx, a, opUnion, tx) }},
		&command{name: "zinterstore", arity: -4, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { zSetOp(c, tx, a, opInter, tx) }},
		&command{name: "zdiffstore", arity: -4, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { zSetOp(c, tx, a, opDiff, tx) }},
		&command{name: "zintercard", arity: -3, read: cmdZInterCard},
		&command{name: "zrandmember", arity: -2, read: cmdZRandMember},
		&command{name: "zscan", arity: -3, read: func(c *client, r reader, a [][]byte) { scanElements(c, r, a, tZset) }},
	)
}

// zPop removes up to count members from the bottom (or the top, max).
func (m *meta) zPop(tx *revkv.Txn[[]byte], count int64, max bool) []zel {
	q := zquery{by: 'r', start: 0, stop: count - 1, rev: max}
	els := m.zRange(tx, q)
	for _, z := range els {
		m.zDel(tx, z.member)
	}
	if len(els) > 0 {
		m.save(tx)
	}
	return els
}

const errPositive = "ERR value is out of range, must be positive"

// optionalCount is a pop's optional COUNT, a[2]: def without one; a
// negative or non-integer one is Redis's error, written to c (false).
func optionalCount(c *client, a [][]byte, def int64) (int64, bool) {
	if len(a) != 3 {
		return def, true
	}
	n, ok := parseInt(a[2])
	if !ok || n < 0 {
		c.w.Error(errPositive)
		return 0, false
	}
	return n, true
}

// zPopCmd: ZPOPMIN/ZPOPMAX key [count].
func zPopCmd(c *client, tx *revkv.Txn[[]byte], a [][]byte, max bool) {
	if len(a) > 3 {
		c.w.Error(errSyntax)
		return
	}
	count, ok := optionalCount(c, a, 1)
	if !ok {
		return
	}
	m := load(c, tx, string(a[1]), tZset)
	if m == nil {
		return
	}
	if count == 0 {
		c.w.Array(0)
		return
	}
	els := m.zPop(tx, count, max)
	if len(a) == 2 && c.w.RESP3() { // RESP3 without a count: [member, score], as Redis
		c.w.Array(2 * len(els))
		for _, z := range els {
			c.w.BulkString(z.member)
			c.w.Double(formatScore(z.score))
		}
		return
	}
	zReply(c, els, true)
}

// mpopArgs parses [ZL]MPOP's numkeys key... <where> [COUNT n] from a[at].
func mpopArgs(c *client, a [][]byte, at int, where ...string) (keys [][]byte, dir int, count int64, ok bool) {
	n, ok := parseInt(a[at])
	if !ok || n <= 0 || n > math.MaxInt32 {
		c.w.Error("ERR numkeys should be greater than 0")
		return nil, 0, 0, false
	}
	if n > int64(len(a)-at-2) {
		c.w.Error(errSyntax)
		return nil, 0, 0, false
	}
	keys = a[at+1 : at+1+int(n)]
	rest := a[at+1+int(n):]
	dir = slices.Index(where, strings.ToUpper(string(rest[0])))
	if dir < 0 {
		c.w.Error(errSyntax)
		return nil, 0, 0, false
	}
	count = 1
	seen := false
	for i := 1; i < len(rest); i += 2 {
		if seen || !strings.EqualFold(string(rest[i]), "COUNT") || i+1 >= len(rest) {
			c.w.Error(errSyntax)
			return nil, 0, 0, false
		}
		v, ok := parseInt(rest[i+1])
		if !ok || v <= 0 {
			c.w.Error("ERR count should be greater than 0")
			return nil, 0, 0, false
		}
		count, seen = v, true
	}
	return keys, dir, count, true
}

// zmpopFirst pops from the first non-empty sorted set of keys: its key and
// members, or ok with no key. WRONGTYPE is answered and done is false.
func zmpopFirst(c *client, tx *revkv.Txn[[]byte], keys [][]byte, max bool, count int64) (key string, els []zel, done bool) {
	for _, k := range keys {
		m := loadSource(c, tx, string(k), tZset)
		if m == nil {
			return "", nil, false
		}
		if m.n > 0 {
			return m.key, m.zPop(tx, count, max), true
		}
	}
	return "", nil, true
}

func zmpopReply(c *client, key string, els []zel) {
	if key == "" {
		c.w.NullArray()
		return
	}
	c.w.Array(2)
	c.w.BulkString(key)
	c.w.Array(len(els))
	for _, z := range els {
		c.w.Array(2)
		c.w.BulkString(z.member)
		c.w.Double(formatScore(z.score))
	}
}

func cmdZMPop(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	keys, dir, count, ok := mpopArgs(c, a, 1, "MIN", "MAX")
	if !ok {
		return
	}
	if key, els, ok := zmpopFirst(c, tx, keys, dir == 1, count); ok {
		zmpopReply(c, key, els)
	}
}

// zsetsOf reads the sorted sets (or sets, each member's score 1, as Redis
// takes them) of keys; a missing key is empty.
func zsetsOf(c *client, r kv, keys [][]byte) ([]map[string]float64, [][]zel, bool) {
	maps := make([]map[string]float64, len(keys))
	lists := make([][]zel, len(keys))
	for i, k := range keys {
		e, ok := r.GetEntry(string(k))
		if !ok {
			maps[i] = map[string]float64{}
			continue
		}
		if !isMeta(e.Value) || e.Value[len(metaMagic)] != tZset && e.Value[len(metaMagic)] != tSet {
			c.w.Error(errWrongType)
			return nil, nil, false
		}
		m := decodeMeta(string(k), e)
		maps[i] = make(map[string]float64, m.n)
		if m.typ == tSet {
			m.each(r, tSet, func(el string, _ []byte) bool {
				maps[i][el] = 1
				lists[i] = append(lists[i], zel{el, 1})
				return true
			})
			continue
		}
		m.zAsc(r, math.Inf(-1), func(z zel) bool {
			maps[i][z.member] = z.score
			lists[i] = append(lists[i], z)
			return true
		})
	}
	return maps, lists, true
}

// zSetOp is ZUNION, ZINTER, ZDIFF (numkeys key... [WEIGHTS w...]
// [AGGREGATE SUM|MIN|MAX] [WITHSCORES]) and with tx their STORE forms
// (destination numkeys key...).
func zSetOp(c *client, r kv, a [][]byte, op int, tx *revkv.Txn[[]byte]) {
	at := 1
	if tx != nil {
		at = 2
	}
	name := strings.ToLower(string(a[0]))
	n, ok := parseInt(a[at])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if n < 1 {
		c.w.Error("ERR at least 1 input key is needed for '" + name + "' command")
		return
	}
	if n > int64(len(a)-at-1) {
		c.w.Error(errSyntax)
		return
	}
	keys := a[at+1 : at+1+int(n)]
	maps, lists, ok := zsetsOf(c, r, keys) // before the options, as Redis
	if !ok {
		return
	}
	weights := make([]float64, n)
	for i := range weights {
		weights[i] = 1
	}
	agg, withScores := "SUM", false
	rest := a[at+1+int(n):]
	for i := 0; i < len(rest); i++ {
		switch opt := strings.ToUpper(string(rest[i])); {
		case opt == "WEIGHTS" && op != opDiff && i+int(n) < len(rest):
			for j := range weights {
				w, ok := parseScore(rest[i+1+j])
				if !ok {
					c.w.Error("ERR weight value is not a float")
					return
				}
				weights[j] = w
			}
			i += int(n)
		case opt == "AGGREGATE" && op != opDiff && i+1 < len(rest):
			agg = strings.ToUpper(string(rest[i+1]))
			if agg != "SUM" && agg != "MIN" && agg != "MAX" {
				c.w.Error(errSyntax)
				return
			}
			i++
		case opt == "WITHSCORES" && tx == nil:
			withScores = true
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	out := zCombine(maps, lists, weights, agg, op)
	if tx == nil {
		zReply(c, out, withScores)
		return
	}
	storeZset(c, tx, string(a[1]), out)
	c.w.Int(int64(len(out)))
}

// zCombine computes a union, intersection or difference of sorted sets,
// ordered by score then member.
func zCombine(maps []map[string]float64, lists [][]zel, weights []float64, agg string, op int) []zel {
	weigh := func(s, w float64) float64 {
		v := s * w
		if math.IsNaN(v) { // 0 * inf: Redis counts it 0
			return 0
		}
		return v
	}
	combine := func(x, y float64) float64 {
		switch agg {
		case "MIN":
			return min(x, y)
		case "MAX":
			return max(x, y)
		}
		v := x + y
		if math.IsNaN(v) { // inf + -inf
			return 0
		}
		return v
	}
	acc := map[string]float64{}
	switch op {
	case opUnion:
		for i, l := range lists {
			for _, z := range l {
				s := weigh(z.score, weights[i])
				if cur, ok := acc[z.member]; ok {
					s = combine(cur, s)
				}
				acc[z.member] = s
			}
		}
	case opInter:
	members:
		for _, z := range lists[0] {
			s := weigh(z.score, weights[0])
			for i := 1; i < len(maps); i++ {
				o, ok := maps[i][z.member]
				if !ok {
					continue members
				}
				s = combine(s, weigh(o, weights[i]))
			}
			acc[z.member] = s
		}
	case opDiff:
	diff:
		for _, z := range lists[0] {
			for _, m := range maps[1:] {
				if _, ok := m[z.member]; ok {
					continue diff
				}
			}
			acc[z.member] = z.score
		}
	}
	out := make([]zel, 0, len(acc))
	for k, s := range acc {
		out = append(out, zel{k, s})
	}
	slices.SortFunc(out, func(x, y zel) int {
		switch {
		case x.score < y.score:
			return -1
		case x.score > y.score:
			return 1
		}
		return strings.Compare(x.member, y.member)
	})
	return out
}

// cmdZInterCard: ZINTERCARD numkeys key... [LIMIT n], with ZINTER's
// errors for numkeys (Redis parses both alike).
func cmdZInterCard(c *client, r reader, a [][]byte) {
	n, ok := parseInt(a[1])
	switch {
	case !ok:
		c.w.Error(errNotInt)
		return
	case n < 1:
		c.w.Error("ERR at least 1 input key is needed for 'zintercard' command")
		return
	case n > int64(len(a)-2):
		c.w.Error(errSyntax)
		return
	}
	maps, lists, ok := zsetsOf(c, r.kv(), a[2:2+n]) // before the options, as Redis
	if !ok {
		return
	}
	keys, limit, ok2 := numKeys(c, a, 1, true)
	if !ok2 {
		return
	}
	n = int64(len(zCombine(maps, lists, make([]float64, len(keys)), "SUM", opInter)))
	if limit > 0 {
		n = min(n, limit)
	}
	c.w.Int(n)
}

// cmdZRandMember: ZRANDMEMBER key [count [WITHSCORES]].
func cmdZRandMember(c *client, r reader, a [][]byte) {
	count, withScores, single, ok := randArgs(c, a, "WITHSCORES")
	if !ok {
		return
	}
	k := r.kv()
	m := load(c, k, string(a[1]), tZset)
	if m == nil {
		return
	}
	var all []zel
	m.zAsc(k, math.Inf(-1), func(z zel) bool { all = append(all, z); return true })
	if single {
		if len(all) == 0 {
			c.w.Null()
		} else {
			c.w.BulkString(all[randN(len(all))].member)
		}
		return
	}
	picks := randPicks(len(all), count)
	out := make([]zel, len(picks))
	for i, p := range picks {
		out[i] = all[p]
	}
	zReply(c, out, withScores)
}
