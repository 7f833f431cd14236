package revkv

import (
	"time"

	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/ttl"
)

// PurgeExpired writes an OpExpire entry for every expiry due by now and
// returns how many. It costs O(expired × log n), whatever the number of keys
// with a TTL. After Close it returns 0.
func (s *Store[V]) PurgeExpired() int { return s.purge() }

// expiryBatch is how many expiries purge writes per hold of the write lock:
// enough that a purge is not dominated by taking the lock, few enough that a
// burst of a million expiries lets other writes in between batches (SNKV
// purges 256 per transaction for the same reason).
const expiryBatch = 256

// purge materialises every expiry due, expiryBatch at a time, and returns how
// many. It is PurgeExpired and each tick of the expirer.
func (s *state[V]) purge() int {
	total := 0
	for {
		r, err := s.dur.acquire(s)
		if err != nil {
			return total
		}
		n := 0
		if !s.closed {
			n = s.materializeLocked(s.order.WriterNow(), expiryBatch)
		}
		if _, err := s.dur.release(s, r, 0, nil); err != nil {
			return total
		}
		total += n
		if n < expiryBatch {
			return total
		}
	}
}

// every is a background goroutine's loop: f every d until the store stops.
// The caller has counted the goroutine in s.bg.
func (s *state[V]) every(d time.Duration, f func()) {
	defer s.bg.Done()
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			f()
		}
	}
}

// materializeLocked writes an OpExpire entry, at exactly its expiry time, for
// every expiry due at now (at most limit of them), in order of expiry time
// (ties: key order), and returns how many. O(expired × log n).
func (s *state[V]) materializeLocked(now time.Time, limit int) int {
	due := ttl.Nanos(now)
	n := 0
	for n < limit && s.expiry.Due(due) {
		n += s.expireDueLocked(due, min(limit-n, expiryRun))
	}
	return n
}

// expiryRun is how many expiries expireDueLocked reads before it writes.
const expiryRun = 32

// expireDueLocked pops up to limit due expiries (at least one is due) and
// writes their OpExpire entries; it returns how many.
//
// The keys' logs are scattered over the heap, so reading each key's expiry
// time (from its newest entry) is two cache misses in a row: the key's log,
// then the entry. It takes each step for the whole run before the next, in
// loops of their own, so the processor waits for a run's misses side by side,
// not one after the other; then it writes.
func (s *state[V]) expireDueLocked(due int64, limit int) int {
	var (
		kls  [expiryRun]*keyLog[V]
		last [expiryRun]*revlog.Entry[V]
		ats  [expiryRun]time.Time
	)
	m := 0
	for ; m < limit; m++ {
		it, ok := s.expiry.PopDue(due)
		if !ok {
			break
		}
		kls[m] = it.Val
	}
	for i, kl := range kls[:m] {
		last[i], _ = kl.log.Last() // a pending expiry's key has entries
	}
	for i, e := range last[:m] {
		ats[i] = e.ExpiresAt(&s.zones)
	}
	for i, kl := range kls[:m] {
		s.expireLocked(kl, ats[i])
	}
	return m
}

// expireLocked commits kl's OpExpire entry, as the next revision, at t:
// the expiry time of its newest entry (an OpPut with a TTL, whose pending
// expiry the caller took off the expiry index), which the caller has read.
func (s *state[V]) expireLocked(kl *keyLog[V], t time.Time) {
	s.one[0] = change[V]{key: kl.key, kl: kl, e: revlog.Entry[V]{Op: revlog.Expire}, prev: -1}
	s.commitOneLocked(t) // an expiry has no value for a codec to refuse
}
