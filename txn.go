package revkv

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/ttl"
)

// Update runs fn as one atomic, serializable write of any number of keys,
// as bbolt's db.Update does. fn runs under the store's write lock, after the
// expiries due at the transaction's time were written (as at the start of
// any write call): it reads the latest state plus its own writes, and no
// other write can come between its reads and its writes.
//
// If fn returns nil, its writes commit as consecutive revisions, one per
// write (a key written twice takes two), all with one time, and become
// visible together: no read of the latest state, Scan or View at the head
// sees some of them without all of them. Update returns the last of them, or
// Rev() if fn wrote nothing. Every rule of a single write holds for each:
// TTL checks, a newer write cancelling an older expiry, the history cap.
//
// A read at a revision inside a batch (GetAt, At) sees the batch's prefix up
// to that revision, since every revision is still one change; reads by time
// (GetAsOf, AsOf) land after the whole batch, whose revisions share a time.
//
// If fn returns an error or panics, nothing fn wrote is written: Update
// returns fn's error as it is, or lets the panic go on once the lock is
// released. A write inside fn that fails (ErrInvalidTTL, ErrNotFound,
// ErrNoTTL) writes nothing and leaves fn free to go on or give up.
//
// The Txn is valid only inside fn and only on fn's goroutine; its writes
// return ErrTxnDone afterwards. fn must not call the store's own methods that
// take the write lock (Put, Delete, Update, Len, Scan, At, Compact, ...):
// that deadlocks, as it does in bbolt.
func (s *Store[V]) Update(fn func(tx *Txn[V]) error) (Revision, error) {
	r, err := s.dur.acquire(s.state)
	if err != nil { // the store's writes stopped, or it is read-only
		return 0, &OpError{Op: "update", Err: err, keyless: true}
	}
	ok := false
	defer func() {
		if !ok { // fn panicked: the panic goes on once the lock is let go
			s.dur.abandon(s.state, r)
		}
	}()
	rev, err := s.updateLocked(fn)
	ok = true
	return s.dur.release(s.state, r, rev, err)
}

// updateLocked is Update under the write lock.
func (s *state[V]) updateLocked(fn func(tx *Txn[V]) error) (Revision, error) {
	if s.closed {
		return 0, &OpError{Op: "update", Err: ErrClosed, keyless: true}
	}
	now := s.order.WriterNow()
	s.materializeLocked(now, math.MaxInt)
	b := &s.txb
	b.now, b.base = now, s.order.Last().Rev
	tx := s.newTxnLocked()
	defer s.endTxnLocked(tx) // also on a panic
	if err := fn(tx); err != nil {
		return 0, err
	}
	if len(b.changes) == 0 {
		return Revision(b.base), nil
	}
	if len(b.notes) > 0 {
		s.commitNotes = sortedNotes(b.notes)
		defer func() { s.commitNotes = nil }() // also if the codec panics
	}
	rev, err := s.commitLocked(b.changes, now)
	if err != nil {
		return 0, &OpError{Op: "update", Err: err, keyless: true}
	}
	return Revision(rev), nil
}

// newTxnLocked returns a new handle on the transaction buffer. Handles are
// handed out of blocks, as mvcc hands out heads: one is never handed out
// twice (a kept one must stay dead), and a block makes an Update's
// allocation a fraction of one.
func (s *state[V]) newTxnLocked() *Txn[V] {
	if len(s.txns) == 0 {
		s.txns = make([]Txn[V], txnBlock)
	}
	tx := &s.txns[0]
	s.txns = s.txns[1:]
	tx.b = &s.txb
	return tx
}

// txnBlock is how many Txn handles one allocation holds.
const txnBlock = 64

// endTxnLocked kills tx (its writes answer ErrTxnDone from now on) and
// empties the store's transaction buffer for the next Update, so that it
// holds no value; a buffer grown past what is worth keeping is let go.
func (s *state[V]) endTxnLocked(tx *Txn[V]) {
	tx.b = nil
	b := &s.txb
	clear(b.changes)
	b.changes = b.changes[:0]
	if cap(b.changes) > maxSpare {
		b.changes = nil
	}
	b.last = nil
	b.notes = nil
}

// maxSpare is the largest buffer of changes the store keeps between Updates.
const maxSpare = 1024

// Txn is a transaction of Update: reads of the latest state plus its own
// writes, and writes that commit together when Update's fn returns nil.
// It is not safe for concurrent use, and dead once fn returns.
//
// It is a handle on the store's one transaction buffer (there is one
// transaction at a time: it holds the write lock), so that an Update
// allocates no more than the handle; a handle kept past its Update has
// lost the buffer and answers ErrTxnDone.
type Txn[V any] struct {
	b *txBuffer[V] // nil once fn returned
}

// txBuffer is the state of the running transaction; state.txb, guarded by
// state.mu.
type txBuffer[V any] struct {
	s       *state[V]
	now     time.Time // the time of every revision it commits
	base    int64     // the head when fn began; its writes take base+1, base+2, ...
	changes []change[V]
	// last maps a key to the index in changes of its newest write, once
	// there are more than txScan changes; below that a backward scan is
	// cheaper than the map.
	last map[string]int
	// notes are the Annotate calls' key, value pairs, in call order.
	notes []string
}

// txScan is how many changes a Txn searches by scanning before it indexes
// them in a map.
const txScan = 16

// newestIndex returns the index in changes of key's newest write in tx, or -1.
func (tx *txBuffer[V]) newestIndex(key string) int {
	if tx.last != nil {
		if i, ok := tx.last[key]; ok {
			return i
		}
		return -1
	}
	for i := len(tx.changes) - 1; i >= 0; i-- {
		if tx.changes[i].key == key {
			return i
		}
	}
	return -1
}

// current returns key's newest entry as the transaction sees it, whether it
// is live, its log in the store (nil if none) and the index of its newest
// write in tx (-1 if none).
func (tx *txBuffer[V]) current(key string) (e revlog.Entry[V], live bool, kl *keyLog[V], prev int) {
	if i := tx.newestIndex(key); i >= 0 {
		c := &tx.changes[i]
		return c.e, c.e.Op == revlog.Put, c.kl, i
	}
	kl = tx.s.lookupLocked(key)
	e, live = newest(kl)
	return e, live, kl, -1
}

// Get returns key's live value as the transaction sees it.
func (t *Txn[V]) Get(key string) (V, bool) {
	if t.b == nil {
		var zero V
		return zero, false
	}
	e, live, _, _ := t.b.current(key)
	return e.Value, live
}

// GetEntry returns key's live entry as the transaction sees it. An entry the
// transaction wrote carries the revision and time it will commit with.
func (t *Txn[V]) GetEntry(key string) (Entry[V], bool) {
	tx := t.b
	if tx == nil {
		return Entry[V]{}, false
	}
	e, live, _, i := tx.current(key)
	if !live {
		return Entry[V]{}, false
	}
	if i >= 0 { // its own write: the time it will commit with
		e.SetTime(tx.now, &tx.s.zones)
	}
	return entryOf(key, &e, &tx.s.zones), true
}

// ModRev returns the revision of key's newest entry as the transaction sees
// it — a put, a delete or an expiry — or 0 if no entry of the key is kept: a
// key written, deleted or expired since a ModRev taken earlier has a higher
// one. For a key the transaction wrote it is the revision that write will
// commit as. (Optimistic transactions check it: WATCH in revkv-server.)
func (t *Txn[V]) ModRev(key string) Revision {
	tx := t.b
	if tx == nil {
		return 0
	}
	e, _, _, i := tx.current(key)
	if i >= 0 {
		return Revision(tx.base + int64(i) + 1)
	}
	return Revision(e.Rev)
}

// Keys returns the keys with prefix that are live as the transaction sees
// them, its own writes included, in byte order: what Scan would yield if
// the transaction committed now. It costs O(keys with the prefix).
func (t *Txn[V]) Keys(prefix string) []string {
	tx := t.b
	if tx == nil {
		return nil
	}
	s := tx.s
	var keys []string
	s.tree.AscendGreaterOrEqual(&keyLog[V]{key: prefix}, func(kl *keyLog[V]) bool {
		if !strings.HasPrefix(kl.key, prefix) {
			return false
		}
		keys = append(keys, kl.key)
		return true
	})
	// Keys the tree does not hold yet: the transaction's own. (A key that
	// an earlier commit of a drain created is in the tree already: commits
	// enter keys in it as they apply, and in the index as they publish.)
	inTree := len(keys)
	for i := range tx.changes {
		if k := tx.changes[i].key; strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) > inTree {
		slices.Sort(keys)
		keys = slices.Compact(keys)
	}
	live := keys[:0]
	for _, k := range keys {
		if _, ok, _, _ := tx.current(k); ok {
			live = append(live, k)
		}
	}
	return live
}

// Put writes value under key with no TTL, as Store.Put does.
func (t *Txn[V]) Put(key string, value V) error {
	return t.write("put", key, "", nil, expiry{}, writeOp[V]{kind: opPut, value: value})
}

// PutTTL writes value under key until the transaction's time plus ttl, as
// Store.PutTTL does; ErrInvalidTTL writes nothing.
func (t *Txn[V]) PutTTL(key string, value V, ttl time.Duration) error {
	if ttl <= 0 {
		return t.fail("put", key, "with ttl", ttl, ErrInvalidTTL)
	}
	return t.write("put", key, "with ttl", ttl, after(ttl), writeOp[V]{kind: opPut, value: value})
}

// PutExpiresAt writes value under key until exactly at, as
// Store.PutExpiresAt does: an at not after the transaction's time is
// ErrInvalidTTL and writes nothing.
func (t *Txn[V]) PutExpiresAt(key string, value V, at time.Time) error {
	if !ttl.Holds(at) {
		return t.fail("put", key, "expiring at", at, detail(ErrInvalidTTL, "Unix nanoseconds cannot hold the expiry", at))
	}
	return t.write("put", key, "expiring at", at, until(at), writeOp[V]{kind: opPut, value: value})
}

// Delete removes key, as Store.Delete does; ErrNotFound if it is not live.
func (t *Txn[V]) Delete(key string) error {
	return t.write("delete", key, "", nil, expiry{}, writeOp[V]{kind: opDelete})
}

// Expire gives a live key a new TTL, as Store.Expire does.
func (t *Txn[V]) Expire(key string, ttl time.Duration) error {
	if ttl <= 0 {
		return t.fail("expire", key, "in", ttl, ErrInvalidTTL)
	}
	return t.write("expire", key, "in", ttl, after(ttl), writeOp[V]{kind: opKeep})
}

// ExpireAt gives a live key an expiry at exactly at, as Store.ExpireAt
// does.
func (t *Txn[V]) ExpireAt(key string, at time.Time) error {
	if !ttl.Holds(at) {
		return t.fail("expire", key, "at", at, detail(ErrInvalidTTL, "Unix nanoseconds cannot hold the expiry", at))
	}
	return t.write("expire", key, "at", at, until(at), writeOp[V]{kind: opKeep})
}

// Persist removes a live key's TTL, as Store.Persist does.
func (t *Txn[V]) Persist(key string) error {
	return t.write("persist", key, "", nil, expiry{}, writeOp[V]{kind: opPersist})
}

func (t *Txn[V]) fail(op, key, arg string, val any, err error) error {
	if t.b == nil {
		err = ErrTxnDone
	}
	return keyErr(op, key, arg, val, err)
}

// write stages one write: d, if set, gives it a TTL counted from the
// transaction's time (arg, if not empty, names val, d's argument, in an
// error); w says what it writes given the key's current entry.
func (t *Txn[V]) write(op, key, arg string, val any, d expiry, w writeOp[V]) error {
	tx := t.b
	if tx == nil {
		return t.fail(op, key, arg, val, ErrTxnDone)
	}
	var expires int64
	if d.set() {
		at, err := d.of(tx.now)
		if err != nil {
			return t.fail(op, key, arg, val, err)
		}
		expires = at
	}
	cur, live, kl, prev := tx.current(key)
	opv, value, err := w.decide(&cur, live)
	if err != nil {
		return t.fail(op, key, arg, val, err)
	}
	// Written in place at the end of the buffer, not built and copied in.
	n := len(tx.changes)
	tx.changes = append(tx.changes, change[V]{key: key, kl: kl, prev: prev})
	c := &tx.changes[n]
	c.e.Op, c.e.Value = opv, value
	c.e.Expires, c.e.HasTTL = expires, d.set()
	c.e.Rev = tx.base + int64(n) + 1 // for GetEntry; commit sets it again
	switch n := len(tx.changes); {
	case n == txScan+1:
		tx.last = make(map[string]int, 2*n)
		for i := range tx.changes {
			tx.last[tx.changes[i].key] = i
		}
	case n > txScan+1:
		tx.last[key] = n - 1
	}
	return nil
}
