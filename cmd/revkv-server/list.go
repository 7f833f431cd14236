package main

import (
	"bytes"
	"encoding/binary"
	"strings"

	"github.com/revkv/revkv"
)

// Lists: one store key per element at a position ('l' position, encoded in
// byte order; see collection.go), the metadata holding the head and tail
// positions: a push or a pop at either end is O(log n), LINDEX and LSET
// O(log n), LRANGE O(log n + m). LINSERT and LREM rewrite the elements
// after the change (O(n), as in Redis).

func init() {
	register(
		&command{name: "lpush", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { push(c, tx, a, true, false) }},
		&command{name: "rpush", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { push(c, tx, a, false, false) }},
		&command{name: "lpushx", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { push(c, tx, a, true, true) }},
		&command{name: "rpushx", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { push(c, tx, a, false, true) }},
		&command{name: "lpop", arity: -2, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { popCmd(c, tx, a, true) }},
		&command{name: "rpop", arity: -2, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { popCmd(c, tx, a, false) }},
		&command{name: "llen", arity: 2, read: func(c *client, r reader, a [][]byte) { cardinality(c, r, a, tList) }},
		&command{name: "lindex", arity: 3, read: cmdLIndex},
		&command{name: "lset", arity: 4, write: cmdLSet},
		&command{name: "lrange", arity: 4, read: cmdLRange},
		&command{name: "ltrim", arity: 4, write: cmdLTrim},
		&command{name: "lrem", arity: 4, write: cmdLRem},
		&command{name: "linsert", arity: 5, write: cmdLInsert},
		&command{name: "lpos", arity: -3, read: cmdLPos},
		&command{name: "lmove", arity: 5, write: cmdLMove},
		&command{name: "rpoplpush", arity: 3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
			cmdLMove(c, tx, [][]byte{a[0], a[1], a[2], []byte("RIGHT"), []byte("LEFT")})
		}},
		&command{name: "lmpop", arity: -4, write: cmdLMPop},
	)
}

func posKey(p int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(p)^1<<63)
	return string(b[:])
}

func (m *meta) lAt(r kv, i int64) ([]byte, bool) {
	if m.gen == "" || i < 0 || i >= m.n {
		return nil, false
	}
	return r.Get(m.el(tList, posKey(m.head+i)))
}

func (m *meta) lPush(tx *revkv.Txn[[]byte], v []byte, left bool) {
	if left {
		m.head--
		tx.Put(m.el(tList, posKey(m.head)), clone(v))
	} else {
		tx.Put(m.el(tList, posKey(m.tail)), clone(v))
		m.tail++
	}
	m.n++
}

func (m *meta) lPop(tx *revkv.Txn[[]byte], left bool) ([]byte, bool) {
	if m.n == 0 {
		return nil, false
	}
	p := m.tail - 1
	if left {
		p = m.head
	}
	k := m.el(tList, posKey(p))
	v, _ := tx.Get(k)
	tx.Delete(k)
	if left {
		m.head++
	} else {
		m.tail--
	}
	m.n--
	return v, true
}

// lRange reads the elements at indexes start..stop (clamped).
func (m *meta) lRange(r kv, start, stop int64) [][]byte {
	start, stop, ok := rankRange(start, stop, m.n)
	if !ok || m.gen == "" {
		return nil
	}
	out := make([][]byte, 0, min(stop-start+1, 1<<16))
	p := m.el(tList, "")
	for k, v := range r.Ascend(m.el(tList, posKey(m.head+start))) {
		if !strings.HasPrefix(k, p) || int64(len(out)) > stop-start {
			break
		}
		out = append(out, v)
	}
	return out
}

// lRewrite replaces the elements from index from on by vals.
func (m *meta) lRewrite(tx *revkv.Txn[[]byte], from int64, vals [][]byte) {
	old := m.lRange(tx, from, -1)
	for i, v := range vals {
		if i >= len(old) || !bytes.Equal(old[i], v) {
			tx.Put(m.el(tList, posKey(m.head+from+int64(i))), v)
		}
	}
	for i := len(vals); i < len(old); i++ {
		tx.Delete(m.el(tList, posKey(m.head+from+int64(i))))
	}
	m.n = from + int64(len(vals))
	m.tail = m.head + m.n
}

// push is LPUSH, RPUSH, and (x) LPUSHX, RPUSHX.
func push(c *client, tx *revkv.Txn[[]byte], a [][]byte, left, x bool) {
	m := load(c, tx, string(a[1]), tList)
	if m == nil {
		return
	}
	if x && !m.exists {
		c.w.Int(0)
		return
	}
	for _, v := range a[2:] {
		m.lPush(tx, v, left)
	}
	m.save(tx)
	c.w.Int(m.n)
}

// popCmd: LPOP/RPOP key [count].
func popCmd(c *client, tx *revkv.Txn[[]byte], a [][]byte, left bool) {
	if len(a) > 3 {
		c.w.Error("ERR wrong number of arguments for '" + strings.ToLower(string(a[0])) + "' command")
		return
	}
	count, ok := optionalCount(c, a, -1)
	if !ok {
		return
	}
	m := load(c, tx, string(a[1]), tList)
	if m == nil {
		return
	}
	if !m.exists {
		if count >= 0 {
			c.w.NullArray()
		} else {
			c.w.Null()
		}
		return
	}
	if count < 0 {
		v, _ := m.lPop(tx, left)
		m.save(tx)
		c.w.Bulk(v)
		return
	}
	var out [][]byte
	for range min(count, m.n) {
		v, _ := m.lPop(tx, left)
		out = append(out, v)
	}
	if len(out) > 0 {
		m.save(tx)
	}
	bulks(c, out)
}

func cmdLIndex(c *client, r reader, a [][]byte) {
	k := r.kv()
	m := load(c, k, string(a[1]), tList)
	if m == nil {
		return
	}
	if !m.exists { // before the index, as Redis
		c.w.Null()
		return
	}
	i, ok := parseInt(a[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if i < 0 {
		i += m.n
	}
	v, ok := m.lAt(k, i)
	bulkOrNull(c, v, ok)
}

func cmdLSet(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	m := load(c, tx, string(a[1]), tList)
	if m == nil {
		return
	}
	if !m.exists { // before the index, as Redis
		c.w.Error(errNoKey)
		return
	}
	i, ok := parseInt(a[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if i < 0 {
		i += m.n
	}
	if i < 0 || i >= m.n {
		c.w.Error("ERR index out of range")
		return
	}
	tx.Put(m.el(tList, posKey(m.head+i)), clone(a[3]))
	m.save(tx)
	c.w.Simple("OK")
}

func cmdLRange(c *client, r reader, a [][]byte) {
	start, ok1 := parseInt(a[2])
	stop, ok2 := parseInt(a[3])
	if !ok1 || !ok2 {
		c.w.Error(errNotInt)
		return
	}
	k := r.kv()
	if m := load(c, k, string(a[1]), tList); m != nil {
		bulks(c, m.lRange(k, start, stop))
	}
}

func cmdLTrim(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	start, ok1 := parseInt(a[2])
	stop, ok2 := parseInt(a[3])
	if !ok1 || !ok2 {
		c.w.Error(errNotInt)
		return
	}
	m := load(c, tx, string(a[1]), tList)
	if m == nil {
		return
	}
	if !m.exists {
		c.w.Simple("OK")
		return
	}
	s, e, ok := rankRange(start, stop, m.n)
	if !ok {
		s, e = m.n, m.n-1 // nothing kept
	}
	for range s {
		m.lPop(tx, true)
	}
	for range m.n - (e - s + 1) {
		m.lPop(tx, false)
	}
	m.save(tx)
	c.w.Simple("OK")
}

func cmdLRem(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	count, ok := parseInt(a[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	m := load(c, tx, string(a[1]), tList)
	if m == nil {
		return
	}
	all := m.lRange(tx, 0, -1)
	drop := make([]bool, len(all))
	removed := int64(0)
	limit := count
	if count < 0 {
		limit = -count
	}
	for j := range all {
		i := j
		if count < 0 {
			i = len(all) - 1 - j
		}
		if bytes.Equal(all[i], a[3]) && (limit == 0 || removed < limit) {
			drop[i] = true
			removed++
		}
	}
	if removed == 0 {
		c.w.Int(0)
		return
	}
	first := int64(0)
	for !drop[first] {
		first++
	}
	var kept [][]byte
	for i := first; i < int64(len(all)); i++ {
		if !drop[i] {
			kept = append(kept, all[i])
		}
	}
	m.lRewrite(tx, first, kept)
	m.save(tx)
	c.w.Int(removed)
}

func cmdLInsert(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	where := strings.ToUpper(string(a[2]))
	if where != "BEFORE" && where != "AFTER" {
		c.w.Error(errSyntax)
		return
	}
	m := load(c, tx, string(a[1]), tList)
	if m == nil {
		return
	}
	if !m.exists {
		c.w.Int(0)
		return
	}
	all := m.lRange(tx, 0, -1)
	at := -1
	for i, v := range all {
		if bytes.Equal(v, a[3]) {
			at = i
			break
		}
	}
	if at < 0 {
		c.w.Int(-1)
		return
	}
	if where == "AFTER" {
		at++
	}
	rest := append([][]byte{clone(a[4])}, all[at:]...)
	m.lRewrite(tx, int64(at), rest)
	m.save(tx)
	c.w.Int(m.n)
}

// cmdLPos: LPOS key element [RANK rank] [COUNT num] [MAXLEN len].
func cmdLPos(c *client, r reader, a [][]byte) {
	rank, count, maxLen := int64(1), int64(-1), int64(0)
	for i := 3; i < len(a); i += 2 {
		opt := strings.ToUpper(string(a[i]))
		if i+1 >= len(a) {
			c.w.Error(errSyntax)
			return
		}
		n, ok := parseInt(a[i+1])
		switch {
		case !ok && opt == "COUNT":
			n = -1 // Redis's check answers both alike
		case !ok && opt == "MAXLEN":
			n = -1
		case !ok:
			c.w.Error(errNotInt)
			return
		}
		switch opt {
		case "RANK":
			if n == 0 {
				c.w.Error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = n
		case "COUNT":
			if n < 0 {
				c.w.Error("ERR COUNT can't be negative")
				return
			}
			count = n
		case "MAXLEN":
			if n < 0 {
				c.w.Error("ERR MAXLEN can't be negative")
				return
			}
			maxLen = n
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	k := r.kv()
	m := load(c, k, string(a[1]), tList)
	if m == nil {
		return
	}
	all := m.lRange(k, 0, -1)
	var found []int64
	skip := max(rank, -rank) - 1 // for MinInt64, -rank is itself: past every match, as in Redis 7.0
	for j := range all {
		if maxLen > 0 && int64(j) >= maxLen {
			break
		}
		i := j
		if rank < 0 {
			i = len(all) - 1 - j
		}
		if !bytes.Equal(all[i], a[2]) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		found = append(found, int64(i))
		if count >= 0 && int64(len(found)) == max(count, 1) && count != 0 {
			break
		}
	}
	if count < 0 {
		if len(found) == 0 {
			c.w.Null()
		} else {
			c.w.Int(found[0])
		}
		return
	}
	c.w.Array(len(found))
	for _, i := range found {
		c.w.Int(i)
	}
}

// side parses LEFT or RIGHT.
func side(b []byte) (left, ok bool) {
	switch strings.ToUpper(string(b)) {
	case "LEFT":
		return true, true
	case "RIGHT":
		return false, true
	}
	return false, false
}

// lmove pops from src's end and pushes at dst's; nil if src is empty.
// WRONGTYPE is answered and done is false.
func lmove(c *client, tx *revkv.Txn[[]byte], srcKey, dstKey string, from, to bool) (v []byte, done bool) {
	src := loadSource(c, tx, srcKey, tList)
	if src == nil {
		return nil, false
	}
	if !src.exists {
		return nil, true
	}
	dst := load(c, tx, dstKey, tList)
	if dst == nil {
		return nil, false
	}
	v, _ = src.lPop(tx, from)
	if srcKey == dstKey { // a rotation: the list is never empty, and keeps its TTL
		dst = src
	} else {
		src.save(tx)
	}
	dst.lPush(tx, v, to)
	dst.save(tx)
	return v, true
}

func cmdLMove(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	from, ok1 := side(a[3])
	to, ok2 := side(a[4])
	if !ok1 || !ok2 {
		c.w.Error(errSyntax)
		return
	}
	if v, done := lmove(c, tx, string(a[1]), string(a[2]), from, to); done {
		bulkOrNull(c, v, v != nil)
	}
}

// lmpopFirst pops up to count from the first non-empty list of keys.
func lmpopFirst(c *client, tx *revkv.Txn[[]byte], keys [][]byte, left bool, count int64) (key string, vals [][]byte, done bool) {
	for _, k := range keys {
		m := loadSource(c, tx, string(k), tList)
		if m == nil {
			return "", nil, false
		}
		if m.n > 0 {
			for range min(count, m.n) {
				v, _ := m.lPop(tx, left)
				vals = append(vals, v)
			}
			m.save(tx)
			return m.key, vals, true
		}
	}
	return "", nil, true
}

func lmpopReply(c *client, key string, vals [][]byte) {
	if key == "" {
		c.w.NullArray()
		return
	}
	c.w.Array(2)
	c.w.BulkString(key)
	bulks(c, vals)
}

func cmdLMPop(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	keys, dir, count, ok := mpopArgs(c, a, 1, "LEFT", "RIGHT")
	if !ok {
		return
	}
	if key, vals, ok := lmpopFirst(c, tx, keys, dir == 0, count); ok {
		lmpopReply(c, key, vals)
	}
}
