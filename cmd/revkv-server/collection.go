package main

import (
	"crypto/rand"
	"encoding/binary"
	"iter"
	"strings"

	"github.com/revkv/revkv"
)

// Hashes, lists, sets and sorted sets live on the store's keys as Apache
// Kvrocks and Pika lay them out: one metadata record per collection, and
// one store key per element, so that an element's write costs one or two
// O(log n) store writes whatever the collection's size.
//
// The metadata record is the user's key itself: its value is
// metaMagic, the type, a generation (8 random bytes), the element count and,
// for lists, the head and tail positions. The key's TTL is the metadata
// entry's TTL, so a collection expires at exactly its ExpiresAt in one
// history entry, and TYPE, EXISTS, TTL, EXPIRE, PERSIST, RENAME (O(1): the
// elements do not name the key), WATCH and KEYS/SCAN treat every type
// alike. Every write of an element rewrites the metadata (its count, or
// just its revision), so the key's ModRev moves with any change: WATCH sees
// it, and REVKV.DIFF finds changed collections by their keys.
//
// Elements live under internal + generation + a kind byte:
//
//	hash:  'h' field              -> value
//	set:   's' member             -> ""
//	zset:  'm' member             -> score (8 bytes, float64 bits)
//	       'z' score(8, ordered) member -> ""   (the score index)
//	list:  'l' position(8, ordered) -> value   (head <= position < tail)
//
// A read first reads the metadata, at the same snapshot (a View, or the
// transaction): an expired or deleted key has none, so its elements are
// never seen, and a key written again gets a new generation, so an old
// element is never seen either. DEL deletes the elements with the key
// (O(n), as in Redis); elements of an expired collection stay behind,
// unreachable.
//
// internal is a prefix no client byte string may start with (four bytes:
// a test sending random binary strings, as Redis's do, meets it once in
// four billion) (dispatch
// refuses such arguments; APPEND and SETRANGE refuse to make such a
// value): so no user key is an element key, and no string value is taken
// for metadata. KEYS, SCAN, DBSIZE and RANDOMKEY skip the internal keys.
const internal = "\xff\x00rk"

// internalEnd is the first key past every internal one.
const internalEnd = "\xff\x00rl"

// metaMagic starts every metadata value.
const metaMagic = internal + "M"

const metaLen = len(metaMagic) + 1 + 8 + 8 + 8 + 8 + 1

const (
	tHash = 'h'
	tList = 'l'
	tSet  = 's'
	tZset = 'z'
)

const errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// reserved reports whether b starts with the internal prefix.
func reserved(b []byte) bool {
	return len(b) >= len(internal) && b[0] == internal[0] && string(b[:len(internal)]) == internal
}

const errReserved = "ERR arguments starting with the bytes 0xff 0x00 'r' 'k' are reserved by revkv"

// meta is a collection's metadata record, as read from its key.
type meta struct {
	key        string
	typ        byte
	gen        string // 8 bytes
	n          int64
	head, tail int64 // lists: the positions in use are head <= p < tail
	// big says the collection outgrew what Redis keeps compact (a
	// listpack, an intset): OBJECT ENCODING's answer (see object.go).
	big    bool
	e      revkv.Entry[[]byte]
	exists bool
	lim    *limits
	// zc is the server's cache of sorted sets' trees, and zt the running
	// Update's versions of them when m was read in one (zcache.go).
	zc *zcache
	zt *ztx
}

// isMeta reports whether a key's value is a collection's metadata.
func isMeta(v []byte) bool { return len(v) == metaLen && string(v[:len(metaMagic)]) == metaMagic }

func decodeMeta(key string, e revkv.Entry[[]byte]) *meta {
	v := e.Value[len(metaMagic):]
	return &meta{key: key, typ: v[0], gen: string(v[1:9]), n: int64(binary.BigEndian.Uint64(v[9:])),
		head: int64(binary.BigEndian.Uint64(v[17:])), tail: int64(binary.BigEndian.Uint64(v[25:])), big: v[33] == 1,
		e: e, exists: true}
}

func (m *meta) encode() []byte {
	b := make([]byte, 0, metaLen)
	b = append(b, metaMagic...)
	b = append(b, m.typ)
	b = append(b, m.gen...)
	b = binary.BigEndian.AppendUint64(b, uint64(m.n))
	b = binary.BigEndian.AppendUint64(b, uint64(m.head))
	b = binary.BigEndian.AppendUint64(b, uint64(m.tail))
	return append(b, byte(b2i(m.big)))
}

// kv is what collection commands read: a transaction, or a View.
type kv interface {
	Get(key string) ([]byte, bool)
	GetEntry(key string) (revkv.Entry[[]byte], bool)
	Ascend(from string) iter.Seq2[string, []byte]
	Descend(from string) iter.Seq2[string, []byte]
}

// viewKV reads a View as kv; old says it is not the latest state (a
// sorted set's tree is then not built from it: zcache.go).
type viewKV struct {
	*revkv.View[[]byte]
	old bool
}

func (v viewKV) GetEntry(key string) (revkv.Entry[[]byte], bool) { return v.Entry(key) }

// typeOf names key's type as TYPE does: "none" for a missing key.
func typeOf(r kv, key string) string {
	e, ok := r.GetEntry(key)
	if !ok {
		return "none"
	}
	if !isMeta(e.Value) {
		return "string"
	}
	return typeName(e.Value[len(metaMagic)])
}

func typeName(t byte) string {
	switch t {
	case tHash:
		return "hash"
	case tList:
		return "list"
	case tSet:
		return "set"
	case tZset:
		return "zset"
	}
	return "string"
}

// load reads key's metadata, of type typ. A missing key is a meta with
// exists false and a fresh generation, ready for a first write; a key of
// another type answers WRONGTYPE and nil.
func load(c *client, r kv, key string, typ byte) *meta {
	e, ok := r.GetEntry(key)
	if !ok {
		return &meta{key: key, typ: typ, lim: &c.srv.limits, zc: &c.srv.zsets, zt: c.ztx} // its generation is made at its first element (el)
	}
	if !isMeta(e.Value) || e.Value[len(metaMagic)] != typ {
		c.w.Error(errWrongType)
		return nil
	}
	m := decodeMeta(key, e)
	m.lim = &c.srv.limits
	m.zc = &c.srv.zsets
	if _, ok := r.(*revkv.Txn[[]byte]); ok { // a View is read outside any Update
		m.zt = c.ztx
	}
	return m
}

// save writes the metadata after a change of the collection: an empty one
// is deleted, as Redis deletes empty collections; otherwise its TTL is kept.
func (m *meta) save(tx *revkv.Txn[[]byte]) {
	m.outgrow()
	if m.n <= 0 {
		if m.exists {
			tx.Delete(m.key)
			tx.Delete(ownerKey(m.gen)) // its elements are all gone already
			m.exists = false
		}
		return
	}
	if !m.exists { // a new generation: its owner, for the sweeper (sweep.go)
		tx.Put(ownerKey(m.gen), []byte(m.key))
	}
	putKeepTTL(tx, m.key, m.encode(), m.e, m.exists)
	m.exists = true
}

// el is the store key of an element: the generation's prefix, kind, rest.
func (m *meta) el(kind byte, rest string) string {
	if m.gen == "" {
		m.gen = newGen()
	}
	var b strings.Builder
	b.Grow(len(internal) + 9 + len(rest))
	b.WriteString(internal)
	b.WriteString(m.gen)
	b.WriteByte(kind)
	b.WriteString(rest)
	return b.String()
}

// each yields the elements of kind, in key order, with the key's rest after
// the prefix, until fn returns false.
func (m *meta) each(r kv, kind byte, fn func(rest string, v []byte) bool) {
	if m.gen == "" {
		return
	}
	p := m.el(kind, "")
	for k, v := range r.Ascend(p) {
		if !strings.HasPrefix(k, p) || !fn(k[len(p):], v) {
			return
		}
	}
}

// eachDesc is each from the last element down.
func (m *meta) eachDesc(r kv, kind byte, fn func(rest string, v []byte) bool) {
	if m.gen == "" {
		return
	}
	p := m.el(kind, "")
	for k, v := range r.Descend(m.el(kind+1, "")) {
		if !strings.HasPrefix(k, p) {
			if k >= p { // the next kind's first key, <= the bound itself
				continue
			}
			return
		}
		if !fn(k[len(p):], v) {
			return
		}
	}
}

// drop deletes every element of the collection (DEL, an overwrite): its
// kinds' keys under its generation.
func (m *meta) drop(tx *revkv.Txn[[]byte]) {
	if m.gen == "" {
		return
	}
	p := internal + m.gen
	var keys []string
	for k := range tx.Ascend(p) {
		if !strings.HasPrefix(k, p) {
			break
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		tx.Delete(k)
	}
	tx.Delete(ownerKey(m.gen))
}

// dropKey deletes key's elements if it holds a collection (before the key
// itself is deleted or overwritten).
func dropKey(tx *revkv.Txn[[]byte], key string) {
	if e, ok := tx.GetEntry(key); ok && isMeta(e.Value) {
		decodeMeta(key, e).drop(tx)
	}
}

// userKeys returns the user's live keys with prefix, in order, skipping the
// internal ones (O(user keys with the prefix), never O(elements)).
func userKeys(r kv, prefix string) []string {
	var keys []string
	from := prefix
	for {
		jumped := false
		for k := range r.Ascend(from) {
			if !strings.HasPrefix(k, prefix) {
				return keys
			}
			if strings.HasPrefix(k, internal) {
				from, jumped = internalEnd, true
				break
			}
			keys = append(keys, k)
		}
		if !jumped { // past the internal keys, none is met again
			return keys
		}
	}
}

// del deletes key and, if it holds a collection, its elements; it reports
// whether the key was live.
func del(tx *revkv.Txn[[]byte], key string) bool {
	dropKey(tx, key)
	return tx.Delete(key) == nil
}

// copyElements copies m's elements under a new generation, owned by dst,
// and returns the copy's metadata value (COPY).
func copyElements(tx *revkv.Txn[[]byte], m *meta, dst string) []byte {
	g := newGen()
	p := internal + m.gen
	type kvp struct {
		k string
		v []byte
	}
	var els []kvp
	for k, v := range tx.Ascend(p) {
		if !strings.HasPrefix(k, p) {
			break
		}
		els = append(els, kvp{k[len(p):], v})
	}
	for _, e := range els {
		tx.Put(internal+g+e.k, e.v)
	}
	tx.Put(ownerKey(g), []byte(dst))
	cp := *m
	cp.gen = g
	return cp.encode()
}

// newGen makes a collection's generation: 8 random bytes, so that a key
// deleted or expired and written again never finds its old elements (which
// an expiry leaves behind) under its new ones.
func newGen() string {
	var g [8]byte
	rand.Read(g[:])
	g[0] |= 1 // never 0x00: owner records start so (sweep.go)
	return string(g[:])
}
