package main

import (
	"math"
	"strconv"
	"strings"

	"github.com/revkv/revkv"
)

// Hashes: one store key per field (see collection.go), so HSET and HGET
// cost O(log n) whatever the hash's size, and HGETALL O(n) in field order.

func init() {
	register(
		&command{name: "hset", arity: -4, write: cmdHSet},
		&command{name: "hmset", arity: -4, write: cmdHSet},
		&command{name: "hsetnx", arity: 4, write: cmdHSetNX},
		&command{name: "hget", arity: 3, read: cmdHGet},
		&command{name: "hmget", arity: -3, read: cmdHMGet},
		&command{name: "hdel", arity: -3, write: cmdHDel},
		&command{name: "hlen", arity: 2, read: func(c *client, r reader, a [][]byte) { cardinality(c, r, a, tHash) }},
		&command{name: "hstrlen", arity: 3, read: cmdHStrlen},
		&command{name: "hexists", arity: 3, read: cmdHExists},
		&command{name: "hkeys", arity: 2, read: func(c *client, r reader, a [][]byte) { hashAll(c, r, a, true, false) }},
		&command{name: "hvals", arity: 2, read: func(c *client, r reader, a [][]byte) { hashAll(c, r, a, false, true) }},
		&command{name: "hgetall", arity: 2, read: func(c *client, r reader, a [][]byte) { hashAll(c, r, a, true, true) }},
		&command{name: "hincrby", arity: 4, write: cmdHIncrBy},
		&command{name: "hincrbyfloat", arity: 4, write: cmdHIncrByFloat},
		&command{name: "hscan", arity: -3, read: func(c *client, r reader, a [][]byte) { scanElements(c, r, a, tHash) }},
		&command{name: "hrandfield", arity: -2, read: cmdHRandField},
	)
}

// cardinality is HLEN, SCARD, ZCARD and LLEN: the count in the metadata.
func cardinality(c *client, r reader, a [][]byte, typ byte) {
	if m := load(c, r.kv(), string(a[1]), typ); m != nil {
		c.w.Int(m.n)
	}
}

// hput writes field's value, counting a new field; it reports whether the
// field is new.
func (m *meta) hput(tx *revkv.Txn[[]byte], field, v []byte) bool {
	m.grow(field, v)
	k := m.el(tHash, string(field))
	_, had := tx.Get(k)
	tx.Put(k, clone(v))
	if !had {
		m.n++
	}
	return !had
}

func cmdHSet(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	if len(a)%2 != 0 {
		c.w.Error("ERR wrong number of arguments for '" + strings.ToLower(string(a[0])) + "' command")
		return
	}
	m := load(c, tx, string(a[1]), tHash)
	if m == nil {
		return
	}
	added := 0
	for i := 2; i < len(a); i += 2 {
		if m.hput(tx, a[i], a[i+1]) {
			added++
		}
	}
	m.save(tx)
	if strings.EqualFold(string(a[0]), "hmset") {
		c.w.Simple("OK")
	} else {
		c.w.Int(int64(added))
	}
}

func cmdHSetNX(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	m := load(c, tx, string(a[1]), tHash)
	if m == nil {
		return
	}
	if _, ok := m.hget(tx, a[2]); ok {
		c.w.Int(0)
		return
	}
	m.hput(tx, a[2], a[3])
	m.save(tx)
	c.w.Int(1)
}

func (m *meta) hget(r kv, field []byte) ([]byte, bool) {
	if m.gen == "" {
		return nil, false
	}
	return r.Get(m.el(tHash, string(field)))
}

func cmdHGet(c *client, r reader, a [][]byte) {
	k := r.kv()
	if m := load(c, k, string(a[1]), tHash); m != nil {
		v, ok := m.hget(k, a[2])
		bulkOrNull(c, v, ok)
	}
}

func bulkOrNull(c *client, v []byte, ok bool) {
	if ok {
		c.w.Bulk(v)
	} else {
		c.w.Null()
	}
}

func cmdHMGet(c *client, r reader, a [][]byte) {
	k := r.kv()
	m := load(c, k, string(a[1]), tHash)
	if m == nil {
		return
	}
	c.w.Array(len(a) - 2)
	for _, f := range a[2:] {
		v, ok := m.hget(k, f)
		bulkOrNull(c, v, ok)
	}
}

func cmdHDel(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	m := load(c, tx, string(a[1]), tHash)
	if m == nil {
		return
	}
	n := 0
	for _, f := range a[2:] {
		if _, ok := m.hget(tx, f); ok {
			tx.Delete(m.el(tHash, string(f)))
			m.n--
			n++
		}
	}
	if n > 0 {
		m.save(tx)
	}
	c.w.Int(int64(n))
}

func cmdHStrlen(c *client, r reader, a [][]byte) {
	k := r.kv()
	if m := load(c, k, string(a[1]), tHash); m != nil {
		v, _ := m.hget(k, a[2])
		c.w.Int(int64(len(v)))
	}
}

func cmdHExists(c *client, r reader, a [][]byte) {
	k := r.kv()
	if m := load(c, k, string(a[1]), tHash); m != nil {
		_, ok := m.hget(k, a[2])
		c.w.Int(b2i(ok))
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// hashAll is HKEYS, HVALS and HGETALL, in field order.
func hashAll(c *client, r reader, a [][]byte, keys, vals bool) {
	k := r.kv()
	m := load(c, k, string(a[1]), tHash)
	if m == nil {
		return
	}
	var out [][]byte
	defer func() { // HGETALL is a map in RESP3
		if keys && vals {
			c.w.Map(len(out) / 2)
		} else {
			c.w.Array(len(out))
		}
		for _, x := range out {
			c.w.Bulk(x)
		}
	}()
	m.each(k, tHash, func(f string, v []byte) bool {
		if keys {
			out = append(out, []byte(f))
		}
		if vals {
			out = append(out, v)
		}
		return true
	})
}

func cmdHIncrBy(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	n, ok := parseInt(a[3])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	m := load(c, tx, string(a[1]), tHash)
	if m == nil {
		return
	}
	var cur int64
	if v, ok := m.hget(tx, a[2]); ok {
		if cur, ok = parseInt(v); !ok {
			c.w.Error("ERR hash value is not an integer")
			return
		}
	}
	if n > 0 && cur > math.MaxInt64-n || n < 0 && cur < math.MinInt64-n {
		c.w.Error(errOverflow)
		return
	}
	cur += n
	m.hput(tx, a[2], strconv.AppendInt(nil, cur, 10))
	m.save(tx)
	c.w.Int(cur)
}

func cmdHIncrByFloat(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	incr, ok := parseLongDouble(a[3])
	if !ok {
		c.w.Error(errNotFloat)
		return
	}
	if incr.IsInf() { // before the key is read, as Redis
		c.w.Error("ERR value is NaN or Infinity")
		return
	}
	m := load(c, tx, string(a[1]), tHash)
	if m == nil {
		return
	}
	cur, exists := m.hget(tx, a[2])
	v, msg := addLongDouble(cur, exists, incr, "ERR hash value is not a float")
	if msg != "" {
		c.w.Error(msg)
		return
	}
	m.hput(tx, a[2], v)
	m.save(tx)
	c.w.Bulk(v)
}

// cmdHRandField: HRANDFIELD key [count [WITHVALUES]].
func cmdHRandField(c *client, r reader, a [][]byte) {
	k := r.kv()
	count, withValues, single, ok := randArgs(c, a, "WITHVALUES")
	if !ok {
		return
	}
	m := load(c, k, string(a[1]), tHash)
	if m == nil {
		return
	}
	var fields, vals [][]byte
	m.each(k, tHash, func(f string, v []byte) bool {
		fields, vals = append(fields, []byte(f)), append(vals, v)
		return true
	})
	if single {
		if len(fields) == 0 {
			c.w.Null()
		} else {
			c.w.Bulk(fields[randN(len(fields))])
		}
		return
	}
	picks := randPicks(len(fields), count)
	pairs := withValues && c.w.RESP3() // RESP3: [field, value] pairs
	switch {
	case pairs:
		c.w.Array(len(picks))
	case withValues:
		c.w.Array(2 * len(picks))
	default:
		c.w.Array(len(picks))
	}
	for _, i := range picks {
		if pairs {
			c.w.Array(2)
		}
		c.w.Bulk(fields[i])
		if withValues {
			c.w.Bulk(vals[i])
		}
	}
}
