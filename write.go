package revkv

import (
	"math"
	"strconv"
	"time"

	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/ttl"
)

// Put stores value under key with no TTL (removing any TTL the key had, as
// Redis SET does) and returns the revision it committed. Any expiry due by now
// is written to history first (see PurgeExpired).
func (s *Store[V]) Put(key string, value V) (Revision, error) {
	rev, _, err := s.write(key, expiry{}, writeOp[V]{kind: opPut, value: value})
	if err != nil {
		return 0, keyErr("put", key, "", nil, err)
	}
	return rev, nil
}

// PutTTL stores value under key until now+ttl: from then on the key reads as
// missing, and its expiry is written into history as an OpExpire entry whose
// Time is exactly the expiry time. ttl <= 0, or an expiry time after what Unix
// nanoseconds hold (time.Unix(0, math.MaxInt64), in 2262, is the last valid
// one), is ErrInvalidTTL and writes nothing.
func (s *Store[V]) PutTTL(key string, value V, ttl time.Duration) (Revision, error) {
	rev, _, err := s.writeTTL(key, ttl, writeOp[V]{kind: opPut, value: value})
	if err != nil {
		return 0, keyErr("put", key, "with ttl", ttl, err)
	}
	return rev, nil
}

// PutExpiresAt stores value under key until exactly at, to the nanosecond:
// it writes as PutTTL does, with the entry's ExpiresAt == at (in the
// location of the write's time). An at not after the write's time, or past
// what Unix nanoseconds hold, is ErrInvalidTTL and writes nothing; a caller
// that wants Redis's "a past time deletes the key" calls Delete.
func (s *Store[V]) PutExpiresAt(key string, value V, at time.Time) (Revision, error) {
	rev, _, err := s.writeAt(key, at, writeOp[V]{kind: opPut, value: value})
	if err != nil {
		return 0, keyErr("put", key, "expiring at", at, err)
	}
	return rev, nil
}

// CompareAndPut writes value (with no TTL, like Put) only if key's live entry
// was made at revision modRev; modRev 0 means the key must be missing, deleted
// or expired. Otherwise it returns ErrConflict and writes nothing (a negative
// modRev never matches); the error is an *OpError whose Rev is the key's
// current revision (0: missing or expired). Expiries due by now are written
// first either way.
func (s *Store[V]) CompareAndPut(key string, modRev Revision, value V) (Revision, error) {
	if modRev < 0 { // an argument check: nothing is written, expiries neither
		e := keyErr("compare-and-put", key, "", nil, detail(ErrConflict, "negative revision", modRev))
		e.Rev = s.currentRev(key)
		return 0, e
	}
	rev, cur, err := s.write(key, expiry{}, writeOp[V]{kind: opCompareAndPut, value: value, modRev: int64(modRev)})
	if err != nil {
		e := keyErr("compare-and-put", key, "", nil, err)
		e.Rev = Revision(cur)
		return 0, e
	}
	return rev, nil
}

// Delete removes key, writing an OpDelete entry. A missing or expired key is
// ErrNotFound and writes nothing (but expiries due are written first).
func (s *Store[V]) Delete(key string) (Revision, error) {
	rev, _, err := s.write(key, expiry{}, writeOp[V]{kind: opDelete})
	if err != nil {
		return 0, keyErr("delete", key, "", nil, err)
	}
	return rev, nil
}

// Expire gives a live key a new TTL, as a new OpPut revision carrying the same
// value. ttl <= 0 or too large is ErrInvalidTTL (nothing is written); a missing
// or expired key is ErrNotFound.
func (s *Store[V]) Expire(key string, ttl time.Duration) (Revision, error) {
	rev, _, err := s.writeTTL(key, ttl, writeOp[V]{kind: opKeep})
	if err != nil {
		return 0, keyErr("expire", key, "in", ttl, err)
	}
	return rev, nil
}

// ExpireAt gives a live key an expiry at exactly at, as Expire does with a
// TTL: a new OpPut revision carrying the same value, with ExpiresAt == at.
// An at not after the write's time, or past what Unix nanoseconds hold, is
// ErrInvalidTTL (nothing is written); a missing or expired key is
// ErrNotFound.
func (s *Store[V]) ExpireAt(key string, at time.Time) (Revision, error) {
	rev, _, err := s.writeAt(key, at, writeOp[V]{kind: opKeep})
	if err != nil {
		return 0, keyErr("expire", key, "at", at, err)
	}
	return rev, nil
}

// Persist removes a live key's TTL, as a new OpPut revision carrying the same
// value. A missing or expired key is ErrNotFound; a key without a TTL is
// ErrNoTTL.
func (s *Store[V]) Persist(key string) (Revision, error) {
	rev, _, err := s.write(key, expiry{}, writeOp[V]{kind: opPersist})
	if err != nil {
		return 0, keyErr("persist", key, "", nil, err)
	}
	return rev, nil
}

// writeOp is what a write call writes, as data rather than a closure, so
// that it can wait in a request of a drain (Open's stores) without making
// every write allocate. The store's writes and a Txn's share it.
type writeOp[V any] struct {
	kind   opKind
	value  V     // opPut, opCompareAndPut
	modRev int64 // opCompareAndPut
}

type opKind uint8

const (
	opPut           opKind = iota // write value
	opCompareAndPut               // write value if the key is at modRev
	opDelete                      // delete a live key
	opKeep                        // write a live key's value again (with a new TTL)
	opPersist                     // write a live key's value again, without its TTL
)

// decide says what op writes, given the key's newest entry and whether it
// is live (an OpPut not yet expired: every expiry due was written before it
// is asked): the op and the value, or the call's error.
//
// cur is nil for a key with no entry; it is a pointer, not a copy, since
// decide is on every write's path.
func (o *writeOp[V]) decide(cur *revlog.Entry[V], live bool) (revlog.Op, V, error) {
	var zero V
	switch o.kind {
	case opPut:
		return revlog.Put, o.value, nil
	case opCompareAndPut:
		switch {
		case o.modRev == 0 && live:
			return 0, zero, detail(ErrConflict, "expected none, key exists at revision", cur.Rev)
		case o.modRev != 0 && !live:
			return 0, zero, detail(ErrConflict, "key is missing, expected revision", o.modRev)
		case o.modRev != 0 && cur.Rev != o.modRev: // live: cur is not nil
			return 0, zero, detail(ErrConflict, "key is at revision "+strconv.FormatInt(cur.Rev, 10)+", expected", o.modRev)
		}
		return revlog.Put, o.value, nil
	case opDelete:
		if !live {
			return 0, zero, ErrNotFound
		}
		return revlog.Delete, zero, nil
	case opPersist:
		if live && !cur.HasTTL {
			return 0, zero, ErrNoTTL
		}
	}
	if !live { // opKeep, opPersist
		return 0, zero, ErrNotFound
	}
	return revlog.Put, cur.Value, nil
}

// expiry is the TTL a write call sets: none (the zero value), d after the
// write's time, or at an absolute instant. Which instant d gives, and
// whether at is after the write's time, is known only under the write
// lock, so it travels with the write as data.
type expiry struct {
	v   int64 // abs: the instant in Unix nanoseconds (the caller checked they hold it); else d, > 0: the write's time + d
	abs bool
}

func after(d time.Duration) expiry { return expiry{v: int64(d)} }
func until(at time.Time) expiry    { return expiry{v: at.UnixNano(), abs: true} }

// set reports whether the write sets a TTL.
func (x *expiry) set() bool { return x.v > 0 || x.abs }

// of returns the expiry time, in Unix nanoseconds, of the TTL set by a
// write at now, or ErrInvalidTTL naming the refused expiry.
func (x *expiry) of(now time.Time) (int64, error) {
	if x.abs {
		if _, ok := ttl.ExpiryAt(now, time.Unix(0, x.v)); !ok {
			return 0, detail(ErrInvalidTTL, "the expiry is not after the write's time", now)
		}
		return x.v, nil
	}
	d := time.Duration(x.v)
	at, ok := ttl.ExpiryTime(now, d)
	if !ok {
		if d <= 0 {
			return 0, ErrInvalidTTL
		}
		return 0, detail(ErrInvalidTTL, "Unix nanoseconds cannot hold the expiry", now.Add(d))
	}
	return at.UnixNano(), nil
}

// write is every write call of the store: under the write lock (durability
// says how it is reached) it takes now, checks the TTL x sets (if any)
// against it, materialises the expiries due, asks op what to write, and
// commits that as the next revision: the one-write case of what Update
// commits. It returns the key's current revision too, for a conflict's
// error.
func (s *state[V]) write(key string, x expiry, op writeOp[V]) (Revision, int64, error) {
	return s.dur.write(s, key, x, op)
}

// writeLocked is write under the write lock.
func (s *state[V]) writeLocked(key string, x *expiry, op *writeOp[V]) (Revision, int64, error) {
	if s.closed {
		return 0, 0, ErrClosed
	}
	now := s.order.WriterNow()
	var expires int64
	if x.set() {
		at, err := x.of(now)
		if err != nil {
			return 0, 0, err
		}
		expires = at
	}
	s.materializeLocked(now, math.MaxInt) // commits from state.one: fill it after

	kl := s.lookupLocked(key)
	cur, live := newestOf(kl)
	o, v, err := op.decide(cur, live)
	if err != nil {
		if !live {
			return 0, 0, err
		}
		return 0, cur.Rev, err
	}
	c := &s.one[0]
	*c = change[V]{key: key, kl: kl, prev: -1, e: revlog.Entry[V]{Op: o, Value: v, Expires: expires, HasTTL: x.set()}}
	rev, err := s.commitOneLocked(now)
	return Revision(rev), 0, err
}

// writeTTL is write for a call that sets a TTL: ttl <= 0 is ErrInvalidTTL
// before anything else, expiries due included, is written.
func (s *state[V]) writeTTL(key string, ttl time.Duration, op writeOp[V]) (Revision, int64, error) {
	if ttl <= 0 {
		return 0, 0, ErrInvalidTTL
	}
	return s.write(key, after(ttl), op)
}

// writeAt is write for a call that sets an expiry at an absolute time: one
// that Unix nanoseconds cannot hold is ErrInvalidTTL before anything else
// is written; whether it is after the write's time is known under the lock.
func (s *state[V]) writeAt(key string, at time.Time, op writeOp[V]) (Revision, int64, error) {
	if !ttl.Holds(at) {
		return 0, 0, detail(ErrInvalidTTL, "Unix nanoseconds cannot hold the expiry", at)
	}
	return s.write(key, until(at), op)
}

// newestOf returns kl's newest entry (nil if none) and whether it is live,
// for a caller holding mu after the expiries due were materialised. kl may
// be nil.
func newestOf[V any](kl *keyLog[V]) (*revlog.Entry[V], bool) {
	if kl != nil {
		if last, ok := kl.log.Last(); ok {
			return last, last.Op == revlog.Put
		}
	}
	return nil, false
}

// newest is newestOf as a copy: the zero entry if none.
func newest[V any](kl *keyLog[V]) (revlog.Entry[V], bool) {
	if e, live := newestOf(kl); e != nil {
		return *e, live
	}
	return revlog.Entry[V]{}, false
}
