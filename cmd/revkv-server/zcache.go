package main

import (
	"container/list"
	"sync"
	"sync/atomic"

	"github.com/revkv/revkv"
)

// The store's index cannot count, so a sorted set's ranks come from an
// order-statistics tree (ztree.go) over its 'z' keys, kept in memory
// beside the store: ZRANK, ZREVRANK, ZCOUNT, ZLEXCOUNT and a range by rank
// (ZRANGE, ZREVRANGE, ZRANGESTORE, ZREMRANGEBYRANK) cost O(log n) (+ m for
// a range) on the latest state, where walking the index cost O(n).
//
// A tree is built from the index on the first rank or count query of a
// sorted set (O(n), once), and is cached by the set's generation, tagged
// with the revision of its metadata record (Entry.Rev). Every write of a
// member rewrites the metadata in the same commit (collection.go), and a
// revision names one commit; so the tree tagged (gen, rev) is the set's
// members in any snapshot whose metadata record has that generation and
// that revision, and in no other. A read checks the tag against the
// metadata it read in its own snapshot, and a tree whose tag does not match
// is never used: whatever writes the set without telling the cache (DEL,
// SET over it, RENAME, EXPIRE, an expiry, FLUSHALL, a plain SET run) moves
// the metadata's revision or removes it, which makes the tree miss and be
// built again. Correctness rests on that check alone; the rest is speed.
//
// Speed: the write paths keep a cached tree up to date, O(log n) a member,
// instead of letting it go stale. A command runs in an Update (one, or
// EXEC's, or a blocked pop's: updateZ); while it runs, the client's ztx
// holds the transaction's own version of each tree it touched: zSet and
// zDel apply the member's change to it (a persistent tree: the shared one
// is not changed), and a rank read inside the transaction uses it, so
// MULTI/EXEC reads its own writes. When fn ends, each version is checked
// against the metadata the transaction leaves (its key still holds the
// generation, with as many members) and tagged with the revision that
// metadata commits as (Txn.ModRev); only once the Update has committed are
// they put in the shared cache, so an aborted or failed transaction
// changes nothing there. A transaction that writes a set whose tree is not
// cached does not build one (trees are built for queries only) and drops
// the shared tree of that generation, now stale, to free its memory.
//
// Reads of an old revision (REVKV.AT) use a cached tree when its tag
// matches their snapshot (exact, by the argument above) and walk the index
// otherwise, O(n) as before: building a tree for a past state would evict
// a current one.
//
// Memory is bounded: the cache holds at most max members in all (the
// --zset-rank-cache flag, CONFIG SET zset-rank-cache-members), evicting
// the least recently used trees; a set larger than that is walked. A tree
// costs a 48-byte node a member and a copy of its index key (8 bytes and
// the member): about 72 bytes a member of 12 bytes.

// defaultZsetCache is how many members the cache holds by default: about
// 150 MB with short members.
const defaultZsetCache = 2 << 20

// zcache holds the trees of the sorted sets queried lately, by generation.
type zcache struct {
	mu    sync.Mutex // guards gens, lru, total and max
	gens  map[string]*zentry
	lru   list.List // of *zentry, the most recently used first
	total int64     // members in the cached trees
	max   int64     // total's bound; 0: no cache

	// Counters, for tests and INFO: trees found, built, and found
	// inconsistent with their set (never, unless the cache is wrong).
	hits, builds, bad atomic.Int64
}

type zentry struct {
	gen  string
	rev  revkv.Revision // the metadata's revision the tree is the members of
	root *znode
	el   *list.Element
}

func (zc *zcache) init(max int64) {
	zc.gens = map[string]*zentry{}
	zc.max = max
}

// get returns the tree of gen tagged rev, if cached.
func (zc *zcache) get(gen string, rev revkv.Revision) *znode {
	zc.mu.Lock()
	defer zc.mu.Unlock()
	e := zc.gens[gen]
	if e == nil || e.rev != rev {
		return nil
	}
	zc.lru.MoveToFront(e.el)
	zc.hits.Add(1)
	return e.root
}

// put caches root as gen's tree at rev, unless a tree of a later revision
// is there already (commits may publish out of order).
func (zc *zcache) put(gen string, rev revkv.Revision, root *znode) {
	zc.mu.Lock()
	defer zc.mu.Unlock()
	e := zc.gens[gen]
	if e != nil && e.rev >= rev {
		return
	}
	if e != nil {
		zc.removeLocked(e)
	}
	if int64(zsize(root)) > zc.max {
		return
	}
	e = &zentry{gen: gen, rev: rev, root: root}
	e.el = zc.lru.PushFront(e)
	zc.gens[gen] = e
	zc.total += int64(zsize(root))
	zc.evictLocked()
}

// drop forgets gen's tree if it is older than rev: a commit at rev wrote
// the set without updating it.
func (zc *zcache) drop(gen string, rev revkv.Revision) {
	zc.mu.Lock()
	defer zc.mu.Unlock()
	if e := zc.gens[gen]; e != nil && e.rev < rev {
		zc.removeLocked(e)
	}
}

// setMax bounds the cache anew, evicting what no longer fits.
func (zc *zcache) setMax(max int64) {
	zc.mu.Lock()
	defer zc.mu.Unlock()
	zc.max = max
	zc.evictLocked()
}

func (zc *zcache) removeLocked(e *zentry) {
	zc.lru.Remove(e.el)
	delete(zc.gens, e.gen)
	zc.total -= int64(zsize(e.root))
}

func (zc *zcache) evictLocked() {
	for zc.total > zc.max {
		zc.removeLocked(zc.lru.Back().Value.(*zentry))
	}
}

// ztx is one Update's versions of the trees it touched, by generation; it
// lives on the client's goroutine, under the store's write lock.
type ztx struct {
	zc    *zcache
	trees map[string]*ztree
}

// ztree is a transaction's version of a set's tree: root is nil once the
// transaction wrote the set without a tree to update.
type ztree struct {
	key  string // the key that held the generation when last seen
	root *znode
}

// zpub is a tree to publish once its transaction commits: root nil means
// drop gen's tree older than the commit.
type zpub struct {
	gen  string
	rev  revkv.Revision
	root *znode
}

// finish checks each version against the metadata tx leaves and returns
// what to publish if it commits.
func (zt *ztx) finish(tx *revkv.Txn[[]byte]) []zpub {
	var out []zpub
	for gen, t := range zt.trees {
		if t.root != nil {
			if e, ok := tx.GetEntry(t.key); ok && isMeta(e.Value) {
				if m := decodeMeta(t.key, e); m.typ == tZset && m.gen == gen && m.n == int64(zsize(t.root)) {
					out = append(out, zpub{gen, tx.ModRev(t.key), t.root})
					continue
				}
			}
		}
		out = append(out, zpub{gen: gen}) // moved, dropped, or untracked: stale
	}
	return out
}

// publish applies a committed transaction's trees; rev is its last revision.
func (zc *zcache) publish(pubs []zpub, rev revkv.Revision) {
	for _, p := range pubs {
		if p.root != nil {
			zc.put(p.gen, p.rev, p.root)
		} else {
			zc.drop(p.gen, rev)
		}
	}
}

// updateZ is store.Update with c's sorted-set trees tracked (c.ztx) and
// published once it commits. Every Update that runs commands goes through
// it; one that does not would only leave trees to be built again.
func (s *server) updateZ(c *client, fn func(tx *revkv.Txn[[]byte]) error) (revkv.Revision, error) {
	zt := &c.ztxs // the client's own: no allocation per Update
	*zt = ztx{zc: &s.zsets}
	c.ztx = zt
	defer func() { c.ztx = nil }()
	var pubs []zpub
	rev, err := s.store.Update(func(tx *revkv.Txn[[]byte]) error {
		if err := fn(tx); err != nil {
			return err
		}
		pubs = zt.finish(tx)
		return nil
	})
	if err == nil {
		s.zsets.publish(pubs, rev)
	}
	return rev, err
}
