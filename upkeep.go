package revkv

import (
	"fmt"
	"math"
	"time"

	"github.com/google/btree"

	"github.com/revkv/revkv/revlog"
)

const noPin = math.MaxInt64 // oldestPin when no view is open

// PurgeExpired writes an OpExpire entry for every expiry due by now and
// returns how many. It costs O(expired × log n), whatever the number of keys
// with a TTL. After Close it returns 0.
func (s *Store[V]) PurgeExpired() int { return s.purge() }

// expiryBatch is how many expiries purge writes per hold of the write lock.
// One costs about 0.4 µs (a btree delete, an append, a publish; bench/),
// so a batch holds writers and Len back for a few hundred microseconds at most,
// and a burst of a million expiries lets other writes in between batches
// (SNKV purges 256 per transaction for the same reason).
const expiryBatch = 256

// purge materialises every expiry due, expiryBatch at a time, and returns how
// many. It is PurgeExpired and each tick of the expirer.
func (s *state[V]) purge() int {
	total := 0
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return total
		}
		n := s.materializeLocked(s.order.Now(s.order.Head()), expiryBatch)
		s.mu.Unlock()
		total += n
		if n < expiryBatch {
			return total
		}
	}
}

// expire is the expirer goroutine (WithExpiryInterval).
func (s *state[V]) expire(every time.Duration) {
	defer s.bg.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.purge()
		}
	}
}

// Compact forgets history below rev for every key: afterwards GetAt below rev,
// GetAsOf before the time of rev, and At/AsOf below it return ErrCompacted.
// The memory of entries not needed for reads at rev or later is freed before
// it returns, except what open Views need (freed by the first Trim, trimmer
// pass or Compact to a higher revision after they close). A key whose only remaining entry would be a tombstone at
// or below rev disappears. rev > Rev() is ErrFutureRevision; rev at or below
// the last compaction is a no-op. It walks every key, taking the write lock
// for one key at a time.
func (s *Store[V]) Compact(rev Revision) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("revkv: compact at %d: %w", rev, ErrClosed)
	}
	if h := s.order.Head(); int64(rev) > h.Rev {
		s.mu.Unlock()
		return fmt.Errorf("revkv: compact at %d (latest %d): %w", rev, h.Rev, ErrFutureRevision)
	}
	if int64(rev) <= s.compactRev {
		s.mu.Unlock()
		return nil
	}
	s.compactLocked(int64(rev))
	keys := s.tree.Clone()
	s.mu.Unlock()
	s.walk(keys, s.cutLocked)
	return nil
}

// Trim makes one synchronous pass over every key: with WithRetention(d) it
// first compacts at the last revision whose time is <= now-d, then it frees
// what compaction no longer needs, and with WithMaxHistory(n) it cuts every
// key to its newest n entries. Entries open Views need are kept. It returns
// the number of entries dropped; 0 after Close. It takes the write lock for
// one key at a time.
func (s *Store[V]) Trim() int {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0
	}
	s.retainLocked()
	if s.compactRev == 0 && s.opts.maxHistory == 0 {
		s.mu.Unlock()
		return 0 // nothing can be over a cap
	}
	keys := s.tree.Clone()
	s.mu.Unlock()
	return s.walk(keys, s.trimLocked)
}

// retainLocked applies WithRetention: it compacts at the last revision whose
// time is <= now - d.
func (s *state[V]) retainLocked() {
	d := s.opts.retention
	if d <= 0 {
		return
	}
	now := s.order.Now(s.order.Head())
	if r, known := s.order.RevAt(now.Add(-d)); known && r > s.compactRev {
		s.compactLocked(r)
	}
}

// trimTarget adapts the store to the trimmer goroutine.
type trimTarget[V any] struct{ s *state[V] }

// Slot returns the key in slot i mod len(slots). O(1).
func (t trimTarget[V]) Slot(i uint64) (*keyLog[V], bool) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.slots) == 0 {
		return nil, false
	}
	return s.slots[i%uint64(len(s.slots))], true
}

// Trim applies retention and both caps to one key, under the write lock for
// that key alone.
func (t trimTarget[V]) Trim(kl *keyLog[V]) bool {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.retainLocked()
	return s.trimLocked(kl) > 0
}

// walk calls f on every key of keys (a clone of the tree), under the write
// lock for one key at a time, and sums what f returns.
func (s *state[V]) walk(keys *btree.BTreeG[*keyLog[V]], f func(*keyLog[V]) int) int {
	n := 0
	keys.Ascend(func(kl *keyLog[V]) bool {
		s.mu.Lock()
		n += f(kl)
		s.mu.Unlock()
		return true
	})
	return n
}

// trimLocked applies the compaction and the count cap to one key.
func (s *state[V]) trimLocked(kl *keyLog[V]) int {
	n := s.cutLocked(kl)
	if s.opts.maxHistory > 0 {
		n += s.trimCountLocked(kl)
	}
	return n
}

// cutLocked drops kl's entries that neither the last compaction nor the
// oldest open view needs, and removes the key if only a tombstone at or below
// that point would remain.
func (s *state[V]) cutLocked(kl *keyLog[V]) int {
	cut := min(s.compactRev, s.oldestPin)
	last, ok := kl.log.Last()
	if cut <= 0 || !ok {
		return 0 // nothing compacted, or a log already removed
	}
	if last.Op != revlog.Put && last.Rev <= cut {
		// Remove before emptying: a reader that still holds kl finds an
		// empty log, which answers Absent, and that is the key's state at
		// every revision from cut on.
		s.indexMu.Lock()
		delete(s.index, kl.key)
		s.indexMu.Unlock()
		s.tree.Delete(kl)
		s.freeSlotLocked(kl)
	}
	kl.mu.Lock()
	n, empty := kl.log.CutBefore(cut)
	kl.mu.Unlock()
	if n > 0 && !empty {
		s.settleLocked(kl)
	}
	return n
}

// settleLocked gives an expired key's index slot the tombstone its log ends
// with, letting go of the expired value the slot still holds (see
// expireLocked), once entries were dropped from the log: the OpPut that
// holds the value may have been among them.
func (s *state[V]) settleLocked(kl *keyLog[V]) {
	if last, ok := kl.log.Last(); ok && last.Op == revlog.Expire {
		s.indexMu.Lock()
		s.index[kl.key] = indexedOf(kl, last)
		s.indexMu.Unlock()
	}
}

// freeSlotLocked removes kl from slots by moving the last key into its place.
func (s *state[V]) freeSlotLocked(kl *keyLog[V]) {
	last := s.slots[len(s.slots)-1]
	s.slots[kl.slot], last.slot = last, kl.slot
	s.slots[len(s.slots)-1] = nil
	s.slots = s.slots[:len(s.slots)-1]
}

// trimCountLocked cuts kl to its newest maxHistory entries (keeping what the
// oldest open view needs) and raises the floor to its new oldest entry.
func (s *state[V]) trimCountLocked(kl *keyLog[V]) int {
	kl.mu.Lock()
	n := kl.log.TrimTo(s.opts.maxHistory, s.oldestPin)
	lo := kl.log.Lo()
	kl.mu.Unlock()
	if n > 0 {
		s.settleLocked(kl)
	}
	if n > 0 && lo > s.trimFloor {
		s.trimFloor = lo
		s.publishFloorLocked()
	}
	return n
}

// compactLocked records a compaction at rev (above the last one). The time
// of rev is known unless rev is below the oldest revision whose time is kept
// (without WithRetention that is Floor(), raised by count trims); then the
// time of that oldest revision stands in for it, so time reads before it are
// ErrCompacted: never a wrong answer, at worst one that was still known.
func (s *state[V]) compactLocked(rev int64) {
	t, ok := s.order.TimeOf(rev)
	if !ok {
		t, _ = s.order.TimeOf(s.order.Base())
	}
	s.compactRev = rev
	s.compaction.Store(&mark{rev: rev, time: t})
	s.publishFloorLocked()
}

// publishFloorLocked publishes Floor() and forgets the revision times no
// longer needed: those below Floor(), or with WithRetention below the last
// compaction (retention looks up revisions by time from there on).
func (s *state[V]) publishFloorLocked() {
	floor := max(s.compactRev, s.trimFloor)
	s.floor.Store(floor)
	keep := floor
	if s.opts.retention > 0 {
		keep = s.compactRev
	}
	s.order.Forget(keep)
}
