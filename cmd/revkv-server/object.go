package main

import (
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
)

// OBJECT and MEMORY USAGE: what Redis answers about a key's
// representation, answered for revkv's.

func init() {
	register(
		&command{name: "object", arity: -2, read: cmdObject,
			sub: map[string]int{"ENCODING": 3, "REFCOUNT": 3, "IDLETIME": 3, "FREQ": 3, "HELP": 2}},
		&command{name: "memory", arity: -2, read: cmdMemory,
			sub: map[string]int{"USAGE": -3, "PURGE": 2, "HELP": 2}},
	)
}

// OBJECT ENCODING answers the encoding Redis 7.0 would have chosen for the
// collection: listpack or intset while it is small (under the CONFIG
// thresholds, which CONFIG SET changes), then hashtable or skiplist, for
// good (as in Redis, a collection never converts back); a list is a
// quicklist. Redis's own test units and tools rely on those names. revkv
// itself keeps every collection one way, a record per element (see
// collection.go), whatever its size: MEMORY USAGE counts those records.

// limits are the thresholds of the compact encodings.
type limits struct {
	hashEntries, hashValue, setInts, zsetEntries, zsetValue atomic.Int64
	// replyEntries bounds the entries REVKV.HISTORY, REVKV.CHANGES and
	// REVKV.DIFF gather for one reply (0: no bound). A reply is counted before it is sent,
	// so it is held whole in memory first: without a bound, one command
	// over years of sealed history would hold all of it.
	replyEntries atomic.Int64
}

// defaultReplyEntries is revkv-max-reply-entries' default: a reply of a
// million entries is a few hundred MB at most.
const defaultReplyEntries = 1_000_000

func (l *limits) init() {
	l.replyEntries.Store(defaultReplyEntries)
	l.hashEntries.Store(128)
	l.hashValue.Store(64)
	l.setInts.Store(512)
	l.zsetEntries.Store(128)
	l.zsetValue.Store(64)
}

// limitOf is the threshold a CONFIG SET parameter sets, if any.
func (l *limits) limitOf(name string) *atomic.Int64 {
	switch name {
	case "hash-max-listpack-entries":
		return &l.hashEntries
	case "hash-max-listpack-value":
		return &l.hashValue
	case "set-max-intset-entries":
		return &l.setInts
	case "zset-max-listpack-entries":
		return &l.zsetEntries
	case "zset-max-listpack-value":
		return &l.zsetValue
	case "revkv-max-reply-entries":
		return &l.replyEntries
	}
	return nil
}

// grow notes an element written to the collection: one too long (or, in
// a set, not an integer) ends its compact encoding.
func (m *meta) grow(el ...[]byte) {
	if m.big || m.lim == nil {
		return
	}
	for _, x := range el {
		switch m.typ {
		case tHash:
			m.big = int64(len(x)) > m.lim.hashValue.Load()
		case tZset:
			m.big = int64(len(x)) > m.lim.zsetValue.Load()
		case tSet:
			_, isInt := parseInt(x)
			m.big = !isInt
		}
		if m.big {
			return
		}
	}
}

// outgrow ends the compact encoding of a collection past its count.
func (m *meta) outgrow() {
	if m.big || m.lim == nil {
		return
	}
	switch m.typ {
	case tHash:
		m.big = m.n > m.lim.hashEntries.Load()
	case tZset:
		m.big = m.n > m.lim.zsetEntries.Load()
	case tSet:
		m.big = m.n > m.lim.setInts.Load()
	}
}

func collectionEncoding(m *meta) string {
	compact := map[byte]string{tHash: "listpack", tSet: "intset", tZset: "listpack", tList: "quicklist"}
	big := map[byte]string{tHash: "hashtable", tSet: "hashtable", tZset: "skiplist", tList: "quicklist"}
	if m.big {
		return big[m.typ]
	}
	return compact[m.typ]
}

func cmdObject(c *client, r reader, a [][]byte) {
	sub := strings.ToUpper(string(a[1]))
	if sub == "HELP" {
		c.w.Array(4)
		c.w.Simple("OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
		c.w.Simple("ENCODING <key>")
		c.w.Simple("IDLETIME <key>")
		c.w.Simple("REFCOUNT <key>")
		return
	}
	e, ok := r.kv().GetEntry(string(a[2]))
	if !ok {
		c.w.Null()
		return
	}
	switch sub {
	case "ENCODING":
		if isMeta(e.Value) {
			c.w.BulkString(collectionEncoding(decodeMeta(string(a[2]), e)))
		} else {
			c.w.BulkString(stringEncoding(e.Value))
		}
	case "REFCOUNT":
		c.w.Int(1)
	case "IDLETIME":
		c.w.Int(0)
	case "FREQ":
		c.w.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	}
}

// stringEncoding is what Redis would call a string's encoding: int, embstr
// (44 bytes or less) or raw.
func stringEncoding(v []byte) string {
	if _, ok := parseInt(v); ok {
		return "int"
	}
	if len(v) <= 44 {
		return "embstr"
	}
	return "raw"
}

// recordOverhead is what one record costs the store beyond its key's and
// value's bytes: its log, its tree slot and its entry (measured by
// BenchmarkMemoryPerElement: about 370 bytes an element of a hash,
// key and value included).
const recordOverhead = 340

func cmdMemory(c *client, r reader, a [][]byte) {
	switch {
	case strings.EqualFold(string(a[1]), "HELP"):
		c.w.Array(3)
		c.w.Simple("MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
		c.w.Simple("USAGE <key> [SAMPLES <count>]")
		c.w.Simple("PURGE")
		return
	case strings.EqualFold(string(a[1]), "PURGE"):
		if _, inUpdate := r.(txReader); inUpdate {
			c.purgeAfter = true // not under the write lock: EXEC runs it after
		} else {
			purge()
		}
		c.w.Simple("OK")
		return
	}
	if len(a) != 3 && (len(a) != 5 || !strings.EqualFold(string(a[3]), "SAMPLES")) {
		c.w.Error(errSyntax)
		return
	}
	if len(a) == 5 {
		if _, ok := parseInt(a[4]); !ok {
			c.w.Error(errNotInt)
			return
		}
	}
	k := r.kv()
	key := string(a[2])
	e, ok := k.GetEntry(key)
	if !ok {
		c.w.Null()
		return
	}
	n := int64(recordOverhead + len(key) + len(e.Value))
	if isMeta(e.Value) {
		m := decodeMeta(key, e)
		p := internal + m.gen
		for ek, v := range k.Ascend(p) {
			if !strings.HasPrefix(ek, p) {
				break
			}
			n += int64(recordOverhead + len(ek) + len(v))
		}
	}
	c.w.Int(n)
}

// purging is held by the MEMORY PURGE running, so that clients sending it
// at once share one collection instead of queueing one each.
var purging sync.Mutex

// purge is purgeMemory; tests replace it.
var purge = purgeMemory

// purgeMemory is MEMORY PURGE: where Redis asks its allocator to give
// back the pages it holds free, revkv-server collects the heap and gives
// its free pages back to the system. After it, INFO's used_memory is the
// live heap alone, which is what Redis's counts: between collections it
// also holds the garbage not yet swept. A purge asked for while one runs
// waits for that one and does not start another.
func purgeMemory() {
	if purging.TryLock() {
		debug.FreeOSMemory()
		purging.Unlock()
		return
	}
	purging.Lock() // wait for the running purge: its collection serves this one too
	purging.Unlock()
}
