package main

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/revkv/revkv"
)

func init() {
	register(
		&command{name: "del", arity: -2, write: cmdDel},
		&command{name: "unlink", arity: -2, write: cmdDel},
		&command{name: "exists", arity: -2, read: cmdExists},
		&command{name: "type", arity: 2, read: cmdType},
		&command{name: "rename", arity: 3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { rename(c, tx, a, false) }},
		&command{name: "renamenx", arity: 3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { rename(c, tx, a, true) }},
		&command{name: "copy", arity: -3, write: cmdCopy},
		&command{name: "expire", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { expire(c, tx, a, time.Second, false) }},
		&command{name: "pexpire", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { expire(c, tx, a, time.Millisecond, false) }},
		&command{name: "expireat", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { expire(c, tx, a, time.Second, true) }},
		&command{name: "pexpireat", arity: -3, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { expire(c, tx, a, time.Millisecond, true) }},
		&command{name: "ttl", arity: 2, read: func(c *client, r reader, a [][]byte) { ttl(c, r, a, time.Second, false) }},
		&command{name: "pttl", arity: 2, read: func(c *client, r reader, a [][]byte) { ttl(c, r, a, time.Millisecond, false) }},
		&command{name: "expiretime", arity: 2, read: func(c *client, r reader, a [][]byte) { ttl(c, r, a, time.Second, true) }},
		&command{name: "pexpiretime", arity: 2, read: func(c *client, r reader, a [][]byte) { ttl(c, r, a, time.Millisecond, true) }},
		&command{name: "persist", arity: 2, write: cmdPersist},
		&command{name: "keys", arity: 2, read: cmdKeys},
		&command{name: "scan", arity: -2, read: cmdScan},
		&command{name: "randomkey", arity: 1, read: cmdRandomKey},
		&command{name: "dbsize", arity: 1, read: func(c *client, r reader, _ [][]byte) { c.w.Int(int64(r.Len())) }},
		&command{name: "flushdb", arity: -1, write: cmdFlush},
		&command{name: "flushall", arity: -1, write: cmdFlush},
	)
}

func cmdDel(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	n := 0
	for _, k := range a[1:] {
		if del(tx, string(k)) {
			n++
		}
	}
	c.w.Int(int64(n))
}

func cmdExists(c *client, r reader, a [][]byte) {
	n := 0
	for _, k := range a[1:] {
		if _, ok := r.GetEntry(string(k)); ok {
			n++
		}
	}
	c.w.Int(int64(n))
}

func cmdType(c *client, r reader, a [][]byte) {
	c.w.Simple(typeOf(r.kv(), string(a[1])))
}

// rename moves src's value and expiry to dst, in one Update.
func rename(c *client, tx *revkv.Txn[[]byte], a [][]byte, nx bool) {
	src, dst := string(a[1]), string(a[2])
	e, ok := tx.GetEntry(src)
	if !ok {
		c.w.Error(errNoKey)
		return
	}
	if nx {
		if _, taken := tx.GetEntry(dst); taken {
			c.w.Int(0)
			return
		}
	}
	if src != dst {
		dropKey(tx, dst)
		putKeepTTL(tx, dst, e.Value, e, true)
		if isMeta(e.Value) { // the sweeper finds the collection under its new key
			tx.Put(ownerKey(decodeMeta(src, e).gen), []byte(dst))
		}
		tx.Delete(src)
	}
	if nx {
		c.w.Int(1)
	} else {
		c.w.Simple("OK")
	}
}

func cmdCopy(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	replace := false
	for i := 3; i < len(a); i++ {
		switch opt := strings.ToUpper(string(a[i])); {
		case opt == "REPLACE":
			replace = true
		case opt == "DB" && i+1 < len(a):
			i++
			if !dbArg(c, a[i]) {
				return
			}
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	src, dst := string(a[1]), string(a[2])
	if src == dst {
		c.w.Error("ERR source and destination objects are the same")
		return
	}
	e, ok := tx.GetEntry(src)
	if !ok {
		c.w.Int(0)
		return
	}
	if _, taken := tx.GetEntry(dst); taken && !replace {
		c.w.Int(0)
		return
	}
	dropKey(tx, dst)
	v := e.Value
	if isMeta(v) { // the elements are copied under a new generation
		v = copyElements(tx, decodeMeta(src, e), dst)
	}
	putKeepTTL(tx, dst, v, e, true)
	c.w.Int(1)
}

// expire is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT with NX, XX, GT and LT.
// An expiry at or before now deletes the key, as in Redis.
func expire(c *client, tx *revkv.Txn[[]byte], a [][]byte, unit time.Duration, abs bool) {
	name := strings.ToLower(string(a[0]))
	var nx, xx, gt, lt bool
	for _, o := range a[3:] {
		switch strings.ToUpper(string(o)) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GT":
			gt = true
		case "LT":
			lt = true
		default:
			c.w.Error("ERR Unsupported option " + string(o))
			return
		}
	}
	if nx && (xx || gt || lt) {
		c.w.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		c.w.Error("ERR GT and LT options at the same time are not compatible")
		return
	}
	n, ok := parseInt(a[2]) // after the options, as Redis
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	// The new expiry in Unix milliseconds, refusing what overflows.
	ms := n
	if unit == time.Second {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			c.w.Error(invalidExpire(name))
			return
		}
		ms = n * 1000
	}
	now := time.Now().UnixMilli()
	if !abs {
		if ms > math.MaxInt64-now { // now > 0: adding it to a negative ms cannot overflow
			c.w.Error(invalidExpire(name))
			return
		}
		ms += now
	}
	key := string(a[1])
	e, exists := tx.GetEntry(key)
	if !exists {
		c.w.Int(0)
		return
	}
	has := !e.ExpiresAt.IsZero()
	cur := e.ExpiresAt.UnixMilli()
	switch {
	case nx && has, xx && !has:
		c.w.Int(0)
		return
	case gt && (!has || ms <= cur): // no TTL counts as forever
		c.w.Int(0)
		return
	case lt && has && ms >= cur:
		c.w.Int(0)
		return
	}
	if ms <= now {
		del(tx, key)
		c.w.Int(1)
		return
	}
	// EXPIREAT and PEXPIREAT hand the store the instant itself; EXPIRE and
	// PEXPIRE a TTL from the write's time. The store's clock ends in 2262
	// (Unix nanoseconds in an int64): a later expiry, which Redis accepts,
	// is kept at that end.
	x := absolute(ms)
	if !abs {
		x = expiry{ttl: time.Duration(min(ms-now, int64(lastExpiry().Sub(time.Now())/time.Millisecond))) * time.Millisecond}
	}
	if err := expireLive(tx, key, x); err != nil {
		c.w.Error(invalidExpire(name))
		return
	}
	c.w.Int(1)
}

// ttl is TTL, PTTL (remaining; Redis rounds seconds to the nearest) and
// EXPIRETIME, PEXPIRETIME (absolute): -2 for a missing key, -1 without TTL.
func ttl(c *client, r reader, a [][]byte, unit time.Duration, abs bool) {
	e, ok := r.GetEntry(string(a[1]))
	switch {
	case !ok:
		c.w.Int(-2)
	case e.ExpiresAt.IsZero():
		c.w.Int(-1)
	case abs && unit == time.Second:
		c.w.Int(e.ExpiresAt.Unix())
	case abs:
		c.w.Int(e.ExpiresAt.UnixMilli())
	default:
		ms := max(time.Until(e.ExpiresAt).Milliseconds(), 0)
		if unit == time.Second {
			c.w.Int((ms + 500) / 1000)
		} else {
			c.w.Int(ms)
		}
	}
}

func cmdPersist(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	key := string(a[1])
	e, ok := tx.GetEntry(key)
	if !ok || e.ExpiresAt.IsZero() {
		c.w.Int(0)
		return
	}
	tx.Persist(key)
	c.w.Int(1)
}

func cmdKeys(c *client, r reader, a [][]byte) {
	var keys []string
	for _, k := range r.Keys(literalPrefix(a[1])) {
		if match(a[1], k) {
			keys = append(keys, k)
		}
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.BulkString(k)
	}
}

// cursors remembers where each SCAN cursor stopped: the last key it
// returned. A cursor is a number, as Redis's are; it survives writes
// between calls (keys are visited in order, from after the last one), and
// each returns every key that exists from its first call to its last at
// least once. The table is bounded: the oldest cursors are forgotten.
type cursors struct {
	mu    sync.Mutex // guards the fields below
	next  uint64
	after map[uint64]string
	order []uint64
	max   int
}

func newCursors(max int) cursors { return cursors{next: 1, after: map[uint64]string{}, max: max} }

func (cs *cursors) put(after string) uint64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	id := cs.next
	cs.next++
	cs.after[id] = after
	cs.order = append(cs.order, id)
	if len(cs.order) > cs.max {
		delete(cs.after, cs.order[0])
		cs.order = cs.order[1:]
	}
	return id
}

// handedOut reports whether id is a cursor put returned, remembered or not.
func (cs *cursors) handedOut(id uint64) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return id > 0 && id < cs.next
}

func (cs *cursors) get(id uint64) (string, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	after, ok := cs.after[id]
	return after, ok
}

func cmdScan(c *client, r reader, a [][]byte) {
	s := c.srv
	id, ok := scanCursor(a[1])
	if !ok {
		c.w.Error("ERR invalid cursor")
		return
	}
	count := int64(10)
	var pattern []byte
	typ := ""
	for i := 2; i < len(a); i++ {
		opt := strings.ToUpper(string(a[i]))
		if i+1 >= len(a) {
			c.w.Error(errSyntax)
			return
		}
		i++
		switch opt {
		case "MATCH":
			pattern = a[i]
		case "COUNT":
			n, ok := parseInt(a[i])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			if n < 1 {
				c.w.Error(errSyntax)
				return
			}
			count = n
		case "TYPE":
			typ = strings.ToLower(string(a[i]))
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	// A cursor it did not hand out is scanned from, as Redis scans from
	// any number, never refused: one above every cursor handed out (-1,
	// which is 2^64-1, among them) ends the scan, as Redis's -1 does (its
	// reverse-binary walk wraps to 0 after one bucket); one handed out and
	// since forgotten (the table keeps the newest) starts again from the
	// first key, so that every key is still returned at least once.
	after, from := "", id != 0
	if from {
		var ok bool
		if after, ok = s.cursors.get(id); !ok {
			if !s.cursors.handedOut(id) {
				c.w.Array(2)
				c.w.BulkString("0")
				c.w.Array(0)
				return
			}
			from = false
		}
	}
	var keys []string
	last, more := "", false
	seen := int64(0)
	for _, k := range r.Keys("") {
		if from && k <= after {
			continue
		}
		if seen == count {
			more = true
			break
		}
		seen++
		last = k
		if (pattern == nil || match(pattern, k)) && (typ == "" || typeOf(r.kv(), k) == typ) {
			keys = append(keys, k)
		}
	}
	next := uint64(0)
	if more {
		next = s.cursors.put(last)
	}
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.BulkString(k)
	}
}

// scanCursor reads a cursor as Redis 7.0 does (strtoul): "" is 0, a sign
// may lead and a minus wraps (-1 is 2^64-1);
// spaces, other bytes and what is past 2^64-1 are not cursors.
func scanCursor(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	neg := b[0] == '-'
	if b[0] == '+' || b[0] == '-' {
		b = b[1:]
	}
	n, err := strconv.ParseUint(string(b), 10, 64) // no sign, no space, no '_' in base 10
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

func cmdRandomKey(c *client, r reader, _ [][]byte) {
	keys := r.Keys("")
	if len(keys) == 0 {
		c.w.Null()
		return
	}
	c.w.BulkString(keys[rand.IntN(len(keys))])
}

// cmdFlush deletes every key in one Update: each delete is on the record,
// as any other.
func cmdFlush(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	if len(a) > 2 || len(a) == 2 && !strings.EqualFold(string(a[1]), "ASYNC") && !strings.EqualFold(string(a[1]), "SYNC") {
		c.w.Error(errSyntax)
		return
	}
	for _, k := range tx.Keys("") {
		tx.Delete(k)
	}
	c.w.Simple("OK")
}

// lastExpiry is the last instant the store can expire a key at, less a
// minute of margin for the time between now and the write.
func lastExpiry() time.Time { return time.Unix(0, math.MaxInt64).Add(-time.Minute) }
