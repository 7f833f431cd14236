package etcdstore

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/revkv/revkv"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Txn is the transaction an Update's function reads and writes through. Its
// reads see the snapshot the Update started from plus its own writes; its
// writes commit together, each as its own revision, all at one time, or not
// at all. It must not be used after the function returns (its calls then
// return revkv.ErrClosed), nor from another goroutine.
type Txn[V any] struct {
	s         *Store[V]
	snap      *snapshot
	now       int64           // the time of every entry the Txn writes (not of expiries)
	seq       int64           // the last revision taken
	firstTime int64           // the time of the first entry written (revision 1's, on an empty store)
	lastTime  int64           // the time of the last entry written: the head's next time
	rows      []rowEntry      // every entry written, for the commit's row and the time index
	xAdded    []pendingExpiry // expiry index entries the Txn adds
	expired   int             // expiries written
	ops       map[string]clientv3.Op
	size      int                 // bytes the ops will take in the request, about
	state     map[string]keyState // the latest entry of each key read or written
	prefetch  []string            // keys the snapshot read: the Else branch reads them again
	done      bool
	retry     bool  // a read found etcd compacted past the snapshot: run again
	readErr   error // a read failed: Update returns it
}

// keyState is a key's latest entry, as the Txn sees it.
type keyState struct {
	rec record
	ok  bool // false: the key was never written (or compacted away)
}

func newTxn[V any](s *Store[V], snap *snapshot, now int64, prefetch []string) *Txn[V] {
	return &Txn[V]{
		s: s, snap: snap, now: now, seq: snap.head.seq, prefetch: prefetch, lastTime: snap.head.time,
		ops: make(map[string]clientv3.Op), state: make(map[string]keyState),
	}
}

// read returns key's latest entry: from the Txn's writes, from the
// snapshot, or read from etcd at the snapshot's revision.
func (t *Txn[V]) read(ctx context.Context, key string) (keyState, error) {
	if t.done {
		return keyState{}, revkv.ErrClosed
	}
	if st, ok := t.state[key]; ok {
		return st, nil
	}
	if r, ok := t.snap.latest[key]; ok {
		return keyState{r, true}, nil
	}
	if t.snap.known[key] {
		return keyState{}, nil // read with the snapshot: absent
	}
	resp, err := t.s.kv.Get(ctx, t.s.l.latest(key), clientv3.WithRev(t.snap.etcdRev))
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			t.retry = true
		} else if t.readErr == nil {
			t.readErr = etcdErr(ctx, err)
		}
		return keyState{}, etcdErr(ctx, err)
	}
	var st keyState
	if len(resp.Kvs) == 1 {
		if st.rec, err = decodeRecord(resp.Kvs[0].Value); err != nil {
			t.readErr = err
			return keyState{}, err
		}
		st.ok = true
	}
	t.state[key] = st
	return st, nil
}

// put adds an operation to the commit; a later one on the same etcd key
// replaces an earlier one (etcd refuses a key twice in one transaction).
func (t *Txn[V]) put(k string, v []byte) {
	t.ops[k] = clientv3.OpPut(k, string(v))
	t.size += len(k) + len(v) + 8
}

func (t *Txn[V]) del(k string) {
	t.ops[k] = clientv3.OpDelete(k)
	t.size += len(k) + 8
}

// append writes rec as key's next entry at time at: the entry, the key's
// latest, and, for a TTL, its expiry index entry. The commit adds the
// revision and time index rows of all its entries.
//
// The value's older expiry index entry, if any, is left in place: it is
// stale, and whoever finds it due deletes it without writing an expiry (see
// expire). So a Put needs no read of the key it overwrites.
func (t *Txn[V]) append(key string, rec record, at int64) {
	t.seq++
	rec.rev, rec.time = t.seq, at
	t.lastTime = at
	if t.snap.head.seq == 0 && t.firstTime == 0 && t.seq == 1 {
		t.firstTime = at
	}
	enc := rec.encode()
	t.put(t.s.l.histKey(key, rec.rev), enc)
	t.put(t.s.l.latest(key), enc)
	t.rows = append(t.rows, rowEntry{rev: rec.rev, time: at, key: key, expiry: rec.op == revkv.OpExpire})
	if rec.hasTTL {
		t.put(t.s.l.expiry(rec.expires, key), nil)
		t.xAdded = append(t.xAdded, pendingExpiry{rec.expires, key})
	}
	t.state[key] = keyState{rec, true}
}

// expire materialises due expiries, in order, before anything else the Txn
// writes: an OpExpire entry at exactly its ExpiresAt. An index entry is
// still due only if the key's latest entry (which the snapshot holds: see
// loadDue) is the live value with that expiry time; any other is stale (a
// newer write replaced the value) and is only deleted.
func (t *Txn[V]) expire(due []pendingExpiry) {
	for _, x := range due {
		t.del(t.s.l.expiry(x.at, x.key))
		r, ok := t.snap.latest[x.key]
		if st, seen := t.state[x.key]; seen {
			r, ok = st.rec, st.ok
		}
		if !ok || r.op != revkv.OpPut || !r.hasTTL || r.expires != x.at {
			continue
		}
		t.append(x.key, record{op: revkv.OpExpire}, x.at)
		t.expired++
	}
}

// Get returns key's live value.
func (t *Txn[V]) Get(ctx context.Context, key string) (V, bool, error) {
	e, ok, err := t.GetEntry(ctx, key)
	return e.Value, ok, err
}

// GetEntry returns key's live entry.
func (t *Txn[V]) GetEntry(ctx context.Context, key string) (revkv.Entry[V], bool, error) {
	st, err := t.read(ctx, key)
	if err != nil || !st.ok || !st.rec.live(t.now) {
		return revkv.Entry[V]{}, false, keyErrOrNil("get", key, err)
	}
	e, err := entry(t.s.codec, key, st.rec)
	if err != nil {
		t.readErr = err
		return revkv.Entry[V]{}, false, keyErr("get", key, err)
	}
	return e, true, nil
}

func keyErrOrNil(op, key string, err error) error {
	if err == nil {
		return nil
	}
	return keyErr(op, key, err)
}

// Put writes value under key, without a TTL.
func (t *Txn[V]) Put(ctx context.Context, key string, value V) error {
	return keyErrOrNil("put", key, t.putValue(ctx, key, value, false, 0))
}

// PutTTL writes value under key, expiring ttl after the Txn's time.
func (t *Txn[V]) PutTTL(ctx context.Context, key string, value V, ttl time.Duration) error {
	at, err := expiryAfter(t.now, ttl)
	if err == nil {
		err = t.putValue(ctx, key, value, true, at)
	}
	return keyErrOrNil("put", key, err)
}

// PutExpiresAt writes value under key, expiring at exactly at.
func (t *Txn[V]) PutExpiresAt(ctx context.Context, key string, value V, at time.Time) error {
	ns, err := expiryAt(t.now, at)
	if err == nil {
		err = t.putValue(ctx, key, value, true, ns)
	}
	return keyErrOrNil("put", key, err)
}

func (t *Txn[V]) putValue(ctx context.Context, key string, value V, hasTTL bool, at int64) error {
	if t.done {
		return revkv.ErrClosed
	}
	b, err := t.s.codec.Encode(nil, value)
	if err != nil {
		return err
	}
	if 2*len(b)+2*len(key) > t.s.opts.maxRequestBytes {
		return detail(ErrValueTooLarge, "a value of %d bytes is sent twice; the limit is %d", len(b), t.s.opts.maxRequestBytes)
	}
	t.append(key, record{op: revkv.OpPut, value: b, hasTTL: hasTTL, expires: at}, t.now)
	return nil
}

// Delete deletes a live key; a missing or expired one is revkv.ErrNotFound.
func (t *Txn[V]) Delete(ctx context.Context, key string) error {
	old, err := t.live(ctx, key)
	if err == nil {
		t.replace(key, old, record{op: revkv.OpDelete})
	}
	return keyErrOrNil("delete", key, err)
}

// Expire gives a live key a new TTL, keeping its value.
func (t *Txn[V]) Expire(ctx context.Context, key string, ttl time.Duration) error {
	at, err := expiryAfter(t.now, ttl)
	if err == nil {
		err = t.rewrite(ctx, key, true, at)
	}
	return keyErrOrNil("expire", key, err)
}

// ExpireAt gives a live key the expiry time at, keeping its value.
func (t *Txn[V]) ExpireAt(ctx context.Context, key string, at time.Time) error {
	ns, err := expiryAt(t.now, at)
	if err == nil {
		err = t.rewrite(ctx, key, true, ns)
	}
	return keyErrOrNil("expire", key, err)
}

// Persist removes a live key's TTL; a key without one is revkv.ErrNoTTL.
func (t *Txn[V]) Persist(ctx context.Context, key string) error {
	old, err := t.live(ctx, key)
	if err == nil && !old.rec.hasTTL {
		err = revkv.ErrNoTTL
	}
	if err == nil {
		t.replace(key, old, record{op: revkv.OpPut, value: old.rec.value})
	}
	return keyErrOrNil("persist", key, err)
}

func (t *Txn[V]) rewrite(ctx context.Context, key string, hasTTL bool, at int64) error {
	old, err := t.live(ctx, key)
	if err == nil {
		t.replace(key, old, record{op: revkv.OpPut, value: old.rec.value, hasTTL: hasTTL, expires: at})
	}
	return err
}

// replace is append for a write that read the key's live entry: the
// entry's pending expiry is deleted from the index at once, rather than left
// stale for the expiry pass.
func (t *Txn[V]) replace(key string, old keyState, rec record) {
	if old.rec.hasTTL {
		t.del(t.s.l.expiry(old.rec.expires, key))
	}
	t.append(key, rec, t.now)
}

// live returns key's state if it is live, else revkv.ErrNotFound.
func (t *Txn[V]) live(ctx context.Context, key string) (keyState, error) {
	if t.done {
		return keyState{}, revkv.ErrClosed
	}
	st, err := t.read(ctx, key)
	if err != nil {
		return st, err
	}
	if !st.ok || !st.rec.live(t.now) {
		return st, revkv.ErrNotFound
	}
	return st, nil
}

// maxExpiry is the last instant Unix nanoseconds hold; lowestExpiry the
// first they do not hold on the low side.
var (
	maxExpiry    = time.Unix(0, math.MaxInt64)
	lowestExpiry = time.Unix(0, math.MinInt64+1)
)

// expiryAfter is the expiry time of a TTL set at now, or revkv.ErrInvalidTTL.
func expiryAfter(now int64, ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, revkv.ErrInvalidTTL
	}
	if now > math.MaxInt64-int64(ttl) {
		return 0, detail(revkv.ErrInvalidTTL, "Unix nanoseconds cannot hold the expiry")
	}
	return now + int64(ttl), nil
}

// expiryAt checks an absolute expiry time against now.
func expiryAt(now int64, at time.Time) (int64, error) {
	if !holds(at) {
		return 0, detail(revkv.ErrInvalidTTL, "Unix nanoseconds cannot hold the expiry %v", at)
	}
	if ns := at.UnixNano(); ns > now {
		return ns, nil
	}
	return 0, detail(revkv.ErrInvalidTTL, "the expiry %v is not after the write's time %v", at, time.Unix(0, now))
}

func holds(at time.Time) bool { return at.After(lowestExpiry) && !at.After(maxExpiry) }
