package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/revkv/revkv"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Update runs fn in a transaction and commits its writes in one etcd
// transaction: each write its own revision, consecutive, all at one time,
// visible together. It returns the last revision written (the latest
// revision if fn wrote nothing).
//
// fn may run more than once: the commit is optimistic (like etcd's STM) and
// fn runs again on the new state when another writer committed first. So fn
// must have no side effects beyond the Txn: calling the store's own write
// methods from fn does not deadlock (no lock is held while fn runs), but
// each run of fn would write again. If fn returns an error nothing
// of fn is written and Update returns it; a Txn read that failed makes
// Update return that failure. Expiries due at the Update's time are written
// before fn's writes (with revisions of their own) whatever fn returns.
func (s *Store[V]) Update(ctx context.Context, fn func(tx *Txn[V]) error) (revkv.Revision, error) {
	rev, err := s.update(ctx, nil, true, nil, fn)
	if err != nil {
		var op *revkv.OpError
		if !errors.As(err, &op) {
			err = fmt.Errorf("revkv: update: %w", err)
		}
	}
	return revkv.Revision(rev), err
}

// update is every write: it reads a snapshot (with the latest entries of
// keys), lets check refuse the write at its time before anything is
// written, materialises the expiries due, runs fn, and commits, again and
// again until the head guard holds.
//
// Unless fresh, a write that names no keys starts from the store's cached
// snapshot; the guard makes that safe for whatever it commits, but not for
// what it answers without committing (a read-only Update), so Update always
// reads a fresh one.
func (s *Store[V]) update(ctx context.Context, keys []string, fresh bool, check func(now int64) error, fn func(*Txn[V]) error) (int64, error) {
	if s.closed.Load() {
		return 0, revkv.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	snap, err := s.snapshotFor(ctx, keys, fresh)
	for err == nil {
		if s.closed.Load() {
			return 0, revkv.ErrClosed
		}
		now := s.now(snap.head)
		if check != nil {
			if err := check(now); err != nil {
				return 0, err
			}
		}
		due, more := snap.dueAt(now, s.expiryBatch())
		if err = s.loadDue(ctx, snap, due); err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				snap, err = s.readSnapshot(ctx, keys)
			}
			continue
		}
		t := newTxn(s, snap, now, keys)
		t.expire(due)
		var ferr error
		if !more {
			ferr = fn(t)
		}
		t.done = true
		switch {
		case t.retry:
			snap, err = s.readSnapshot(ctx, keys)
			continue
		case t.readErr != nil:
			return 0, t.readErr
		case ferr != nil || more:
			// Only the expiries are written: fn's writes, if any, go.
			t = newTxn(s, snap, now, keys)
			t.expire(due)
		}
		if len(t.ops) == 0 {
			return t.seq, ferr
		}
		var ok bool
		ok, snap, err = s.commitTxn(ctx, t)
		if ok && !more {
			return t.seq, ferr
		}
		if ok {
			snap, err = s.readSnapshot(ctx, keys)
		}
	}
	return 0, err
}

// commitTxn is commit, then the history cap's "a write that takes a key past
// twice the cap cuts it back at once".
func (s *Store[V]) commitTxn(ctx context.Context, t *Txn[V]) (bool, *snapshot, error) {
	ok, snap, err := s.commit(ctx, t)
	if ok && s.opts.maxHistory > 0 {
		added := map[string][2]int{} // expiries, writes
		for _, r := range t.rows {
			a := added[r.key]
			if r.expiry {
				a[0]++
			} else {
				a[1]++
			}
			added[r.key] = a
		}
		for key, a := range added {
			_ = s.capWritten(ctx, key, a[0], a[1]) // Trim catches up if this fails
		}
	}
	return ok, snap, err
}

// write is a store write call on one key, committed with the other write
// calls waiting at the time (batch.go); op names it for errors.
func (s *Store[V]) write(ctx context.Context, op, key string, reads bool, check func(now int64) error, fn func(*Txn[V]) error) (revkv.Revision, error) {
	if s.closed.Load() {
		return 0, keyErr(op, key, revkv.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return 0, keyErr(op, key, err)
	}
	req := &writeReq[V]{ctx: ctx, key: key, reads: reads, check: check, done: make(chan struct{}), lead: make(chan struct{})}
	req.fn = func(t *Txn[V]) error {
		err := fn(t)
		var oe *revkv.OpError
		if errors.As(err, &oe) {
			return oe.Err // the store's call names itself below
		}
		return err
	}
	rev, err := s.submit(req)
	if err != nil {
		return 0, keyErr(op, key, err)
	}
	return revkv.Revision(rev), nil
}

// Put writes value under key, removing any TTL (Redis SET semantics).
func (s *Store[V]) Put(ctx context.Context, key string, value V) (revkv.Revision, error) {
	return s.write(ctx, "put", key, false, nil, func(t *Txn[V]) error { return t.Put(ctx, key, value) })
}

// PutTTL writes value under key, expiring ttl after the write's time. ttl
// <= 0, or an expiry past what Unix nanoseconds hold, is revkv.ErrInvalidTTL
// and writes nothing.
func (s *Store[V]) PutTTL(ctx context.Context, key string, value V, ttl time.Duration) (revkv.Revision, error) {
	if ttl <= 0 {
		return 0, keyErr("put", key, revkv.ErrInvalidTTL)
	}
	check := func(now int64) error { _, err := expiryAfter(now, ttl); return err }
	return s.write(ctx, "put", key, false, check, func(t *Txn[V]) error { return t.PutTTL(ctx, key, value, ttl) })
}

// PutExpiresAt writes value under key, expiring at exactly at; an at not
// after the write's time is revkv.ErrInvalidTTL and writes nothing.
func (s *Store[V]) PutExpiresAt(ctx context.Context, key string, value V, at time.Time) (revkv.Revision, error) {
	if !holds(at) {
		return 0, keyErr("put", key, detail(revkv.ErrInvalidTTL, "Unix nanoseconds cannot hold the expiry %v", at))
	}
	check := func(now int64) error { _, err := expiryAt(now, at); return err }
	return s.write(ctx, "put", key, false, check, func(t *Txn[V]) error { return t.PutExpiresAt(ctx, key, value, at) })
}

// CompareAndPut writes value under key only if the key's live entry was made
// at modRev (0: the key must be missing or expired); else revkv.ErrConflict
// and nothing is written. A successful one writes like Put.
func (s *Store[V]) CompareAndPut(ctx context.Context, key string, modRev revkv.Revision, value V) (revkv.Revision, error) {
	return s.write(ctx, "compare-and-put", key, true, nil, func(t *Txn[V]) error {
		st, err := t.read(ctx, key)
		if err != nil {
			return err
		}
		live := st.ok && st.rec.live(t.now)
		switch {
		case modRev == 0 && live:
			return detail(revkv.ErrConflict, "expected none, key exists at revision %d", st.rec.rev)
		case modRev != 0 && !live:
			return detail(revkv.ErrConflict, "key is missing, expected revision %d", modRev)
		case modRev != 0 && st.rec.rev != int64(modRev):
			return detail(revkv.ErrConflict, "key is at revision "+strconv.FormatInt(st.rec.rev, 10)+", expected %d", modRev)
		}
		return t.Put(ctx, key, value)
	})
}

// Delete deletes a live key; a missing or expired one is revkv.ErrNotFound.
func (s *Store[V]) Delete(ctx context.Context, key string) (revkv.Revision, error) {
	return s.write(ctx, "delete", key, true, nil, func(t *Txn[V]) error { return t.Delete(ctx, key) })
}

// Expire gives a live key a new TTL, as a new OpPut revision with the same
// value; a missing or expired key is revkv.ErrNotFound.
func (s *Store[V]) Expire(ctx context.Context, key string, ttl time.Duration) (revkv.Revision, error) {
	if ttl <= 0 {
		return 0, keyErr("expire", key, revkv.ErrInvalidTTL)
	}
	check := func(now int64) error { _, err := expiryAfter(now, ttl); return err }
	return s.write(ctx, "expire", key, true, check, func(t *Txn[V]) error { return t.Expire(ctx, key, ttl) })
}

// ExpireAt gives a live key the expiry time at, exactly.
func (s *Store[V]) ExpireAt(ctx context.Context, key string, at time.Time) (revkv.Revision, error) {
	if !holds(at) {
		return 0, keyErr("expire", key, detail(revkv.ErrInvalidTTL, "Unix nanoseconds cannot hold the expiry %v", at))
	}
	check := func(now int64) error { _, err := expiryAt(now, at); return err }
	return s.write(ctx, "expire", key, true, check, func(t *Txn[V]) error { return t.ExpireAt(ctx, key, at) })
}

// Persist removes a live key's TTL, as a new OpPut revision with the same
// value: revkv.ErrNotFound for a missing key, revkv.ErrNoTTL for one without.
func (s *Store[V]) Persist(ctx context.Context, key string) (revkv.Revision, error) {
	return s.write(ctx, "persist", key, true, nil, func(t *Txn[V]) error { return t.Persist(ctx, key) })
}
