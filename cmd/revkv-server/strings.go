package main

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/revkv/revkv"
)

// Values are bytes; keys are strings. A value is copied out of the
// connection's buffer before it is stored: the store keeps it as given.

func init() {
	register(
		&command{name: "get", arity: 2, read: cmdGet},
		&command{name: "set", arity: -3, write: txSet},
		&command{name: "setnx", arity: 3, write: cmdSetNX},
		&command{name: "setex", arity: 4, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { setEx(c, tx, a, time.Second, "setex") }},
		&command{name: "psetex", arity: 4, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { setEx(c, tx, a, time.Millisecond, "psetex") }},
		&command{name: "getdel", arity: 2, write: cmdGetDel},
		&command{name: "getex", arity: -2, write: cmdGetEx},
		&command{name: "getset", arity: 3, write: cmdGetSet},
		&command{name: "mget", arity: -2, read: cmdMGet},
		&command{name: "mset", arity: -3, write: cmdMSet},
		&command{name: "msetnx", arity: -3, write: cmdMSetNX},
		&command{name: "incr", arity: 2, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { incrBy(c, tx, a[1], 1) }},
		&command{name: "decr", arity: 2, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { incrBy(c, tx, a[1], -1) }},
		&command{name: "incrby", arity: 3, write: cmdIncrBy},
		&command{name: "decrby", arity: 3, write: cmdDecrBy},
		&command{name: "incrbyfloat", arity: 3, write: cmdIncrByFloat},
		&command{name: "append", arity: 3, write: cmdAppend},
		&command{name: "strlen", arity: 2, read: cmdStrlen},
		&command{name: "getrange", arity: 4, read: cmdGetRange},
		&command{name: "substr", arity: 4, read: cmdGetRange},
		&command{name: "setrange", arity: 4, write: cmdSetRange},
	)
}

func cmdGet(c *client, r reader, a [][]byte) {
	if v, ok := r.Get(lookupKey(a[1])); ok && isMeta(v) {
		c.w.Error(errWrongType)
	} else if ok {
		c.w.Bulk(v)
	} else {
		c.w.Null()
	}
}

// setOpts are SET's options.
type setOpts struct {
	nx, xx, get, keepTTL bool
	exp                  expiry
}

// expiry is an expiry argument as the store takes it: a TTL from the
// write's time (EX, PX, EXPIRE, PEXPIRE), or the instant itself (EXAT,
// PXAT, EXPIREAT, PEXPIREAT), which the store keeps exactly, with no
// conversion against the server's clock. The zero expiry sets none.
type expiry struct {
	ttl time.Duration // > 0: from the write's time
	at  time.Time     // not zero: at this instant
}

func (x expiry) set() bool { return x.ttl > 0 || !x.at.IsZero() }

// absolute is the expiry at Unix milliseconds ms. The store's clock ends
// in 2262 (Unix nanoseconds in an int64): a later expiry, which Redis
// accepts, is kept at that end.
func absolute(ms int64) expiry {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return expiry{at: time.Unix(0, math.MaxInt64)}
	}
	return expiry{at: time.UnixMilli(ms)}
}

// putExpiring writes v under key with the expiry x. An instant not after
// the write's time (the store says ErrInvalidTTL) sets the key and deletes
// it at once, as Redis does: both are on the record.
func putExpiring(tx *revkv.Txn[[]byte], key string, v []byte, x expiry) {
	if x.at.IsZero() {
		tx.PutTTL(key, v, x.ttl)
		return
	}
	if err := tx.PutExpiresAt(key, v, x.at); errors.Is(err, revkv.ErrInvalidTTL) {
		tx.Put(key, v)
		tx.Delete(key)
	}
}

// expireLive gives the live key the expiry x; an instant not after the
// write's time deletes it, as Redis does.
func expireLive(tx *revkv.Txn[[]byte], key string, x expiry) error {
	if x.at.IsZero() {
		return tx.Expire(key, x.ttl)
	}
	err := tx.ExpireAt(key, x.at)
	if errors.Is(err, revkv.ErrInvalidTTL) {
		return tx.Delete(key)
	}
	return err
}

// parseSet reads SET's options (after key and value) as Redis does: the
// syntax first — one of NX and XX, one kind of expiry (repeating it is
// allowed: the last wins), KEEPTTL only without an expiry — then the
// expiry's value.
func parseSet(a [][]byte) (o setOpts, errMsg string) {
	var exp string
	var val []byte
	for i := 3; i < len(a); i++ {
		opt := strings.ToUpper(string(a[i]))
		switch {
		case opt == "NX" && !o.xx:
			o.nx = true
		case opt == "XX" && !o.nx:
			o.xx = true
		case opt == "GET":
			o.get = true
		case opt == "KEEPTTL" && exp == "":
			o.keepTTL = true
		case (opt == "EX" || opt == "PX" || opt == "EXAT" || opt == "PXAT") && !o.keepTTL && (exp == "" || exp == opt) && i+1 < len(a):
			exp, val = opt, a[i+1]
			i++
		default:
			return o, errSyntax
		}
	}
	if exp == "" {
		return o, ""
	}
	n, ok := parseInt(val)
	if !ok {
		return o, errNotInt
	}
	x, ok := expiryArg(exp, n)
	if !ok {
		return o, invalidExpire("set")
	}
	o.exp = x
	return o, ""
}

// expiryArg turns an EX/PX/EXAT/PXAT argument into an expiry, refusing
// what Redis refuses: n <= 0, seconds that overflow milliseconds, and a
// relative expiry that overflows once now is added to it. A relative one
// past the store's clock's end is kept at that end.
func expiryArg(opt string, n int64) (x expiry, ok bool) {
	if n <= 0 {
		return x, false
	}
	if opt == "EX" || opt == "EXAT" {
		if n > math.MaxInt64/1000 {
			return x, false
		}
		n *= 1000
	}
	if opt == "EXAT" || opt == "PXAT" {
		return absolute(n), true
	}
	if n > math.MaxInt64-time.Now().UnixMilli() {
		return x, false
	}
	d := time.Duration(min(n, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	return expiry{ttl: min(d, time.Until(lastExpiry()))}, true
}

func txSet(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	o, msg := parseSet(a)
	if msg != "" {
		c.w.Error(msg)
		return
	}
	key := string(a[1])
	old, exists := tx.GetEntry(key)
	if exists && isMeta(old.Value) {
		if o.get {
			c.w.Error(errWrongType)
			return
		}
		if !o.nx {
			decodeMeta(key, old).drop(tx)
		}
	}
	reply := func(done bool) {
		switch {
		case o.get && exists:
			c.w.Bulk(old.Value)
		case o.get || !done:
			c.w.Null()
		default:
			c.w.Simple("OK")
		}
	}
	if o.nx && exists || o.xx && !exists {
		reply(false)
		return
	}
	v := clone(a[2])
	switch {
	case o.exp.set(): // an instant already past sets and deletes: both on the record, as Redis's WATCH sees it
		putExpiring(tx, key, v, o.exp)
	case o.keepTTL:
		putKeepTTL(tx, key, v, old, exists)
	default:
		tx.Put(key, v)
	}
	reply(true)
}

// putKeepTTL writes v under key, keeping the expiry of old (the key's live
// entry, if exists).
func putKeepTTL(tx *revkv.Txn[[]byte], key string, v []byte, old revkv.Entry[[]byte], exists bool) {
	if exists && !old.ExpiresAt.IsZero() {
		putExpiring(tx, key, v, expiry{at: old.ExpiresAt}) // live, so after the write's time
		return
	}
	tx.Put(key, v)
}

func cmdSetNX(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	key := string(a[1])
	if _, ok := tx.GetEntry(key); ok {
		c.w.Int(0)
		return
	}
	tx.Put(key, clone(a[2]))
	c.w.Int(1)
}

func setEx(c *client, tx *revkv.Txn[[]byte], a [][]byte, unit time.Duration, name string) {
	n, ok := parseInt(a[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	opt := "PX"
	if unit == time.Second {
		opt = "EX"
	}
	x, ok := expiryArg(opt, n)
	if !ok {
		c.w.Error(invalidExpire(name))
		return
	}
	putExpiring(tx, string(a[1]), clone(a[3]), x)
	c.w.Simple("OK")
}

func cmdGetDel(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	key := string(a[1])
	e, ok := tx.GetEntry(key)
	if ok && isMeta(e.Value) {
		c.w.Error(errWrongType)
		return
	}
	if !ok {
		c.w.Null()
		return
	}
	tx.Delete(key)
	c.w.Bulk(e.Value)
}

// cmdGetEx: GET, then EX/PX/EXAT/PXAT set the expiry, PERSIST removes it.
func cmdGetEx(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	key := string(a[1])
	// As Redis: the syntax first, then a missing key is nil whatever the
	// expiry's value, then the value.
	persist := len(a) == 3 && strings.EqualFold(string(a[2]), "PERSIST")
	opt := ""
	if len(a) == 4 {
		opt = strings.ToUpper(string(a[2]))
	}
	if len(a) != 2 && !persist && opt != "EX" && opt != "PX" && opt != "EXAT" && opt != "PXAT" {
		c.w.Error(errSyntax)
		return
	}
	e, ok := tx.GetEntry(key)
	if ok && isMeta(e.Value) {
		c.w.Error(errWrongType)
		return
	}
	if !ok {
		c.w.Null()
		return
	}
	var x expiry
	if opt != "" {
		n, ok := parseInt(a[3])
		if !ok {
			c.w.Error(errNotInt)
			return
		}
		if x, ok = expiryArg(opt, n); !ok {
			c.w.Error(invalidExpire("getex"))
			return
		}
	}
	switch {
	case x.set():
		expireLive(tx, key, x)
	case persist && !e.ExpiresAt.IsZero():
		tx.Persist(key)
	}
	c.w.Bulk(e.Value)
}

func cmdGetSet(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	key := string(a[1])
	e, ok := tx.GetEntry(key)
	if ok && isMeta(e.Value) {
		c.w.Error(errWrongType)
		return
	}
	tx.Put(key, clone(a[2]))
	if ok {
		c.w.Bulk(e.Value)
	} else {
		c.w.Null()
	}
}

func cmdMGet(c *client, r reader, a [][]byte) {
	c.w.Array(len(a) - 1)
	for _, k := range a[1:] {
		if v, ok := r.Get(lookupKey(k)); ok && !isMeta(v) { // another type is nil, as in Redis
			c.w.Bulk(v)
		} else {
			c.w.Null()
		}
	}
}

func cmdMSet(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	if len(a)%2 != 1 {
		c.w.Error("ERR wrong number of arguments for 'mset' command")
		return
	}
	for i := 1; i < len(a); i += 2 {
		tx.Put(string(a[i]), clone(a[i+1]))
	}
	c.w.Simple("OK")
}

func cmdMSetNX(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	if len(a)%2 != 1 {
		c.w.Error("ERR wrong number of arguments for 'msetnx' command")
		return
	}
	for i := 1; i < len(a); i += 2 {
		if _, ok := tx.GetEntry(string(a[i])); ok {
			c.w.Int(0)
			return
		}
	}
	for i := 1; i < len(a); i += 2 {
		tx.Put(string(a[i]), clone(a[i+1]))
	}
	c.w.Int(1)
}

func cmdIncrBy(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	n, ok := parseInt(a[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	incrBy(c, tx, a[1], n)
}

func cmdDecrBy(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	n, ok := parseInt(a[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if n == math.MinInt64 {
		c.w.Error("ERR decrement would overflow")
		return
	}
	incrBy(c, tx, a[1], -n)
}

// incrBy adds n to key's integer value (0 if missing), keeping its TTL.
func incrBy(c *client, tx *revkv.Txn[[]byte], k []byte, n int64) {
	key := string(k)
	e, ok := tx.GetEntry(key)
	if ok && isMeta(e.Value) {
		c.w.Error(errWrongType)
		return
	}
	var cur int64
	if ok {
		if cur, ok = parseInt(e.Value); !ok {
			c.w.Error(errNotInt)
			return
		}
	}
	if n > 0 && cur > math.MaxInt64-n || n < 0 && cur < math.MinInt64-n {
		c.w.Error(errOverflow)
		return
	}
	cur += n
	putKeepTTL(tx, key, strconv.AppendInt(nil, cur, 10), e, e.Key != "")
	c.w.Int(cur)
}

// cmdIncrByFloat adds as Redis does: in the x87 long double (a 64-bit
// mantissa), printed with 17 digits after the point and its trailing zeros
// cut, so that the same additions give the same strings (10.1 + 0.2 is
// "10.3"; 20 more additions may show "...99999999999999996", as Redis does).
func cmdIncrByFloat(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	key := string(a[1])
	e, exists := tx.GetEntry(key)
	if exists && isMeta(e.Value) { // the type first, as Redis
		c.w.Error(errWrongType)
		return
	}
	incr, ok := parseLongDouble(a[2])
	if !ok {
		c.w.Error(errNotFloat)
		return
	}
	var cur []byte
	if exists {
		cur = e.Value
	}
	v, msg := addLongDouble(cur, exists, incr, errNotFloat)
	if msg != "" {
		c.w.Error(msg)
		return
	}
	putKeepTTL(tx, key, v, e, exists)
	c.w.Bulk(v)
}

func cmdAppend(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	key := string(a[1])
	e, ok := tx.GetEntry(key)
	if ok && isMeta(e.Value) {
		c.w.Error(errWrongType)
		return
	}
	if int64(len(e.Value))+int64(len(a[2])) > c.srv.cfg.maxValue { // before the copy: no 1 GB to refuse
		c.w.Error(errTooBig)
		return
	}
	v := append(append([]byte(nil), e.Value...), a[2]...)
	if reserved(v) { // what would read as internal
		c.w.Error(errReserved)
		return
	}
	putKeepTTL(tx, key, v, e, ok)
	c.w.Int(int64(len(v)))
}

func cmdStrlen(c *client, r reader, a [][]byte) {
	v, _ := r.Get(lookupKey(a[1]))
	if isMeta(v) {
		c.w.Error(errWrongType)
		return
	}
	c.w.Int(int64(len(v)))
}

func cmdGetRange(c *client, r reader, a [][]byte) {
	start, ok1 := parseInt(a[2])
	end, ok2 := parseInt(a[3])
	if !ok1 || !ok2 {
		c.w.Error(errNotInt)
		return
	}
	v, _ := r.Get(lookupKey(a[1]))
	if isMeta(v) {
		c.w.Error(errWrongType)
		return
	}
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		c.w.Bulk(nil)
		return
	}
	if start < 0 {
		start = max(n+start, 0)
	}
	if end < 0 {
		end = max(n+end, 0)
	}
	end = min(end, n-1)
	if start > end || n == 0 {
		c.w.Bulk(nil)
		return
	}
	c.w.Bulk(v[start : end+1])
}

func cmdSetRange(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	off, ok := parseInt(a[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if off < 0 {
		c.w.Error(errOffset)
		return
	}
	key := string(a[1])
	e, exists := tx.GetEntry(key)
	if exists && isMeta(e.Value) {
		c.w.Error(errWrongType)
		return
	}
	if len(a[3]) == 0 {
		c.w.Int(int64(len(e.Value)))
		return
	}
	if off > c.srv.cfg.maxValue-int64(len(a[3])) { // not off+len: that overflows
		c.w.Error(errTooBig)
		return
	}
	v := append([]byte(nil), e.Value...)
	if need := int(off) + len(a[3]); need > len(v) {
		v = append(v, make([]byte, need-len(v))...)
	}
	copy(v[off:], a[3])
	if reserved(v) { // what would read as internal
		c.w.Error(errReserved)
		return
	}
	putKeepTTL(tx, key, v, e, exists)
	c.w.Int(int64(len(v)))
}

func clone(b []byte) []byte { return bytes.Clone(b) }

// lookupKey is b as a string without a copy, for a key that is only looked
// up: the store keeps no key a read is given (the entry it returns, which
// names it, is dropped once the reply is built), and b's bytes do not
// change until the next command is read. Never for a key that is written.
func lookupKey(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
