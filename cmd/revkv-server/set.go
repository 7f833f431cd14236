package main

import (
	"slices"
	"strings"

	"github.com/revkv/revkv"
)

// Sets: one store key per member (see collection.go); SMEMBERS answers in
// byte order.

func init() {
	register(
		&command{name: "sadd", arity: -3, write: cmdSAdd},
		&command{name: "srem", arity: -3, write: cmdSRem},
		&command{name: "smembers", arity: 2, read: cmdSMembers},
		&command{name: "sismember", arity: 3, read: cmdSIsMember},
		&command{name: "smismember", arity: -3, read: cmdSMIsMember},
		&command{name: "scard", arity: 2, read: func(c *client, r reader, a [][]byte) { cardinality(c, r, a, tSet) }},
		&command{name: "spop", arity: -2, write: cmdSPop},
		&command{name: "srandmember", arity: -2, read: cmdSRandMember},
		&command{name: "smove", arity: 4, write: cmdSMove},
		&command{name: "sinter", arity: -2, read: func(c *client, r reader, a [][]byte) { setOp(c, r.kv(), nil, a[1:], opInter, nil) }},
		&command{name: "sunion", arity: -2, read: func(c *client, r reader, a [][]byte) { setOp(c, r.kv(), nil, a[1:], opUnion, nil) }},
		&command{name: "sdiff", arity: -2, read: func(c *client, r reader, a [][]byte) { setOp(c, r.kv(), nil, a[1:], opDiff, nil) }},
		&command{name: "sinterstore", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { setOp(c, tx, a[1], a[2:], opInter, tx) }},
		&command{name: "sunionstore", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { setOp(c, tx, a[1], a[2:], opUnion, tx) }},
		&command{name: "sdiffstore", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { setOp(c, tx, a[1], a[2:], opDiff, tx) }},
		&command{name: "sintercard", arity: -3, read: cmdSInterCard},
		&command{name: "sscan", arity: -3, read: func(c *client, r reader, a [][]byte) { scanElements(c, r, a, tSet) }},
	)
}

func (m *meta) sHas(r kv, member []byte) bool {
	if m.gen == "" {
		return false
	}
	_, ok := r.Get(m.el(tSet, string(member)))
	return ok
}

// sAdd adds member; it reports whether it is new.
func (m *meta) sAdd(tx *revkv.Txn[[]byte], member []byte) bool {
	if m.sHas(tx, member) {
		return false
	}
	m.grow(member)
	tx.Put(m.el(tSet, string(member)), []byte{})
	m.n++
	return true
}

func (m *meta) sRem(tx *revkv.Txn[[]byte], member []byte) bool {
	if !m.sHas(tx, member) {
		return false
	}
	tx.Delete(m.el(tSet, string(member)))
	m.n--
	return true
}

func (m *meta) members(r kv) [][]byte {
	var out [][]byte
	m.each(r, tSet, func(el string, _ []byte) bool {
		out = append(out, []byte(el))
		return true
	})
	return out
}

func cmdSAdd(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	m := load(c, tx, string(a[1]), tSet)
	if m == nil {
		return
	}
	n := 0
	for _, x := range a[2:] {
		if m.sAdd(tx, x) {
			n++
		}
	}
	if n > 0 {
		m.save(tx)
	}
	c.w.Int(int64(n))
}

func cmdSRem(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	m := load(c, tx, string(a[1]), tSet)
	if m == nil {
		return
	}
	n := 0
	for _, x := range a[2:] {
		if m.sRem(tx, x) {
			n++
		}
	}
	if n > 0 {
		m.save(tx)
	}
	c.w.Int(int64(n))
}

func bulks(c *client, xs [][]byte) {
	c.w.Array(len(xs))
	for _, x := range xs {
		c.w.Bulk(x)
	}
}

func cmdSMembers(c *client, r reader, a [][]byte) {
	k := r.kv()
	if m := load(c, k, string(a[1]), tSet); m != nil {
		setReply(c, m.members(k))
	}
}

// setReply writes members as a set (RESP3's type; an array in RESP2).
func setReply(c *client, xs [][]byte) {
	c.w.Set(len(xs))
	for _, x := range xs {
		c.w.Bulk(x)
	}
}

func cmdSIsMember(c *client, r reader, a [][]byte) {
	k := r.kv()
	if m := load(c, k, string(a[1]), tSet); m != nil {
		c.w.Int(b2i(m.sHas(k, a[2])))
	}
}

func cmdSMIsMember(c *client, r reader, a [][]byte) {
	k := r.kv()
	m := load(c, k, string(a[1]), tSet)
	if m == nil {
		return
	}
	c.w.Array(len(a) - 2)
	for _, x := range a[2:] {
		c.w.Int(b2i(m.sHas(k, x)))
	}
}

// cmdSPop: SPOP key [count].
func cmdSPop(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	if len(a) > 3 {
		c.w.Error(errSyntax)
		return
	}
	count, ok := optionalCount(c, a, 1)
	if !ok {
		return
	}
	m := load(c, tx, string(a[1]), tSet)
	if m == nil {
		return
	}
	all := m.members(tx)
	picks := randPicks(len(all), count)
	out := make([][]byte, 0, len(picks))
	for _, i := range picks {
		m.sRem(tx, all[i])
		out = append(out, all[i])
	}
	if len(out) > 0 {
		m.save(tx)
	}
	if len(a) == 2 {
		if len(out) == 0 {
			c.w.Null()
		} else {
			c.w.Bulk(out[0])
		}
		return
	}
	bulks(c, out)
}

func cmdSRandMember(c *client, r reader, a [][]byte) {
	k := r.kv()
	count, _, single, ok := randArgs(c, a, "")
	if !ok {
		return
	}
	m := load(c, k, string(a[1]), tSet)
	if m == nil {
		return
	}
	all := m.members(k)
	if single {
		if len(all) == 0 {
			c.w.Null()
		} else {
			c.w.Bulk(all[randN(len(all))])
		}
		return
	}
	picks := randPicks(len(all), count)
	c.w.Array(len(picks))
	for _, i := range picks {
		c.w.Bulk(all[i])
	}
}

func cmdSMove(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	if _, ok := tx.GetEntry(string(a[1])); !ok { // before any type check, as Redis
		c.w.Int(0)
		return
	}
	src := load(c, tx, string(a[1]), tSet)
	if src == nil {
		return
	}
	dst := load(c, tx, string(a[2]), tSet)
	if dst == nil {
		return
	}
	if !src.sHas(tx, a[3]) {
		c.w.Int(0)
		return
	}
	if src.key == dst.key {
		c.w.Int(1)
		return
	}
	src.sRem(tx, a[3])
	src.save(tx)
	if dst.sAdd(tx, a[3]) {
		dst.save(tx)
	}
	c.w.Int(1)
}

const (
	opInter = iota
	opUnion
	opDiff
)

// setsOf reads the sets named by keys; a missing key is an empty set. A key
// of another type answers WRONGTYPE and ok is false.
func setsOf(c *client, r kv, keys [][]byte) (sets []*meta, ok bool) {
	for _, k := range keys {
		m := load(c, r, string(k), tSet)
		if m == nil {
			return nil, false
		}
		sets = append(sets, m)
	}
	return sets, true
}

// combine computes the sets' intersection, union or difference, in byte
// order; limit > 0 stops an intersection at that many.
func combine(r kv, sets []*meta, op int, limit int64) [][]byte {
	if op == opInter {
		// From the smallest set, probing the others: O(smallest * sets).
		slices.SortStableFunc(sets, func(x, y *meta) int { return int(x.n - y.n) })
		var out [][]byte
		if sets[0].n == 0 {
			return nil
		}
		sets[0].each(r, tSet, func(el string, _ []byte) bool {
			for _, o := range sets[1:] {
				if !o.sHas(r, []byte(el)) {
					return true
				}
			}
			out = append(out, []byte(el))
			return limit <= 0 || int64(len(out)) < limit
		})
		return out
	}
	if op == opDiff {
		var out [][]byte
		sets[0].each(r, tSet, func(el string, _ []byte) bool {
			for _, o := range sets[1:] {
				if o.sHas(r, []byte(el)) {
					return true
				}
			}
			out = append(out, []byte(el))
			return true
		})
		return out
	}
	seen := map[string]bool{}
	for _, s := range sets {
		s.each(r, tSet, func(el string, _ []byte) bool {
			seen[el] = true
			return true
		})
	}
	out := make([][]byte, 0, len(seen))
	for el := range seen {
		out = append(out, []byte(el))
	}
	slices.SortFunc(out, func(x, y []byte) int { return strings.Compare(string(x), string(y)) })
	return out
}

// setOp is SINTER, SUNION, SDIFF, and with tx their STORE forms into dst.
func setOp(c *client, r kv, dst []byte, keys [][]byte, op int, tx *revkv.Txn[[]byte]) {
	sets, ok := setsOf(c, r, keys)
	if !ok {
		return
	}
	out := combine(r, sets, op, 0)
	if tx == nil {
		setReply(c, out)
		return
	}
	c.w.Int(int64(len(out)))
	storeSet(c, tx, string(dst), out)
}

// storeSet replaces dst by a set of members (none: dst is deleted).
func storeSet(c *client, tx *revkv.Txn[[]byte], dst string, members [][]byte) {
	del(tx, dst)
	m := &meta{key: dst, typ: tSet, lim: &c.srv.limits}
	for _, x := range members {
		m.sAdd(tx, x)
	}
	m.save(tx)
}

// cmdSInterCard: SINTERCARD numkeys key [key ...] [LIMIT limit].
func cmdSInterCard(c *client, r reader, a [][]byte) {
	keys, limit, ok := numKeys(c, a, 1, true)
	if !ok {
		return
	}
	k := r.kv()
	sets, ok := setsOf(c, k, keys)
	if !ok {
		return
	}
	c.w.Int(int64(len(combine(k, sets, opInter, limit))))
}

// numKeys parses numkeys key... [LIMIT n] from a[at]: Redis's errors, in
// its order.
func numKeys(c *client, a [][]byte, at int, withLimit bool) (keys [][]byte, limit int64, ok bool) {
	n, ok := parseInt(a[at])
	if !ok || n <= 0 { // Redis's range check answers both alike
		c.w.Error("ERR numkeys should be greater than 0")
		return nil, 0, false
	}
	if n > int64(len(a)-at-1) {
		c.w.Error("ERR Number of keys can't be greater than number of args")
		return nil, 0, false
	}
	keys = a[at+1 : at+1+int(n)]
	rest := a[at+1+int(n):]
	for i := 0; i < len(rest); i += 2 {
		if !withLimit || !strings.EqualFold(string(rest[i]), "LIMIT") || i+1 >= len(rest) {
			c.w.Error(errSyntax)
			return nil, 0, false
		}
		l, ok := parseInt(rest[i+1])
		if !ok || l < 0 {
			c.w.Error("ERR LIMIT can't be negative")
			return nil, 0, false
		}
		limit = l
	}
	return keys, limit, true
}
