package revkv

import (
	"math"
	"time"

	"github.com/google/btree"

	"github.com/revkv/revkv/revlog"
)

// History shrinks in two ways, with one verb each:
//   - compact: forget history below a revision, for every key (Compact, and
//     WithRetention's rolling compaction); compactKeyLocked applies the
//     last compaction to one key's log;
//   - trim: cut one key's log to its newest WithMaxHistory entries
//     (trimKeyLocked; commitLocked at a write that took it over twice
//     that).
// Trim, the trimmer and upkeepKeyLocked do both. Neither ever drops what an
// open View needs (oldestPin).

const noPin = math.MaxInt64 // oldestPin when no view is open

// Compact forgets history below rev for every key: afterwards GetAt below rev,
// GetAsOf before the time of rev, and At/AsOf below it return ErrCompacted.
// The memory of entries not needed for reads at rev or later is freed before
// it returns, except what open Views need (freed by the first Trim, trimmer
// pass or Compact to a higher revision after they close). A key whose only
// remaining entry would be a tombstone below rev disappears; one whose
// tombstone is at rev itself stays until a compaction above rev, so that a
// Watch or Changes from rev (from Floor) still finds it. rev > Rev()
// is ErrFutureRevision; rev at or below the last compaction is a no-op. It
// walks every key, taking the write lock for one key at a time. On a
// directory the compaction is logged before the walk, and each key's cut
// as the walk makes it: a crash during the walk leaves the floor in place
// and the keys it had not reached with their older entries, as an open
// View's pin leaves them. Reads answer as the compaction says; History
// lists those entries until the next Trim or Compact cuts them.
//
// If the time of rev is no longer known (a count trim let it go, see the
// package documentation), the compaction's time is the newest time among
// every key's entry visible at rev: reads by time between that and rev's
// own time are answered from the entries kept, and are exact.
func (s *Store[V]) Compact(rev Revision) error {
	s.lockQuiet()
	if s.closed {
		s.unlockQuiet()
		return revErr("compact", rev, "at", rev, ErrClosed)
	}
	if h := s.order.Head(); int64(rev) > h.Rev {
		s.unlockQuiet()
		return revErr("compact", rev, "at", rev, detail(ErrFutureRevision, "latest is", h.Rev))
	}
	if int64(rev) <= s.compactRev {
		s.unlockQuiet()
		return nil
	}
	if err := s.dur.err(); err != nil {
		s.unlockQuiet()
		return revErr("compact", rev, "at", rev, err)
	}
	s.compactLocked(int64(rev))
	s.sweepsDue++
	keys := s.tree.Clone()
	s.unlockQuiet()
	s.walk(keys, s.compactKeyLocked)
	s.sweepNotes()
	if err := s.dur.upkept(); err != nil {
		return revErr("compact", rev, "at", rev, err)
	}
	return nil
}

// Trim makes one synchronous pass over every key: with WithRetention(d) it
// first compacts at the last revision whose time is <= now-d, then it frees
// what compaction no longer needs, and with WithMaxHistory(n) it cuts every
// key to its newest n entries. Entries open Views need are kept. It returns
// the number of entries dropped; 0 after Close. It takes the write lock for
// one key at a time.
func (s *Store[V]) Trim() int {
	s.lockQuiet()
	if s.closed || s.dur.err() != nil {
		s.unlockQuiet()
		return 0
	}
	s.compactByRetentionLocked()
	if s.compactRev == 0 && s.opts.maxHistory == 0 {
		s.unlockQuiet()
		return 0 // nothing can be over a cap
	}
	s.sweepsDue++
	s.countingHidden++
	keys := s.tree.Clone()
	s.unlockQuiet()
	n := s.walk(keys, s.upkeepKeyLocked)
	s.lockQuiet()
	s.countingHidden--
	s.unlockQuiet()
	s.sweepNotes()
	s.dur.upkept() // a failure stops writes, and Close returns it
	return n
}

// compactByRetentionLocked applies WithRetention: it compacts at the last
// revision whose time is <= now - d.
func (s *state[V]) compactByRetentionLocked() {
	d := s.opts.retention
	if d <= 0 {
		return
	}
	now := s.order.WriterNow()
	if r, known, err := s.revAt(now.Add(-d)); err == nil && known && r > s.compactRev {
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
	s.lockQuiet()
	defer s.unlockQuiet()
	if s.closed || s.dur.err() != nil {
		return false
	}
	s.compactByRetentionLocked()
	return s.upkeepKeyLocked(kl) > 0
}

// walk calls f on every key of keys (a clone of the tree), under the write
// lock for one key at a time, and sums what f returns.
func (s *state[V]) walk(keys *btree.BTreeG[*keyLog[V]], f func(*keyLog[V]) int) int {
	n := 0
	keys.Ascend(func(kl *keyLog[V]) bool {
		s.lockQuiet()
		n += f(kl)
		s.unlockQuiet()
		return true
	})
	return n
}

// upkeepKeyLocked applies the last compaction and the history cap to one key.
func (s *state[V]) upkeepKeyLocked(kl *keyLog[V]) int {
	n := s.compactKeyLocked(kl)
	if s.opts.maxHistory > 0 {
		n += s.trimKeyLocked(kl)
	}
	return n
}

// compactKeyLocked drops kl's entries that neither the last compaction nor
// the oldest open view needs, and removes the key if only a tombstone
// below that point would remain. A tombstone at that point stays: a watch
// from Floor must yield it.
func (s *state[V]) compactKeyLocked(kl *keyLog[V]) int {
	cut := min(s.compactRev, s.oldestPin)
	last, ok := kl.log.Last()
	if cut <= 0 || !ok {
		return 0 // nothing compacted, or a log already removed
	}
	if last.Op != revlog.Put && last.Rev < cut {
		// Remove before emptying: a reader that still holds kl finds an
		// empty log, which answers Absent, and that is the key's state at
		// every revision from cut on.
		s.removeKeyLocked(kl)
	}
	hidden := 0
	if kl.log.SealedBelow() > 0 {
		hidden = s.dur.hideSealed(s, kl, cut) // what the cut drops of the sealed entries
	}
	kl.mu.Lock()
	n, empty := kl.log.CutBefore(cut)
	kl.mu.Unlock()
	if n > 0 && !empty {
		s.refreshSlotLocked(kl)
	}
	if n > 0 {
		s.dur.trimmed(s, kl, empty, false)
	}
	return n + hidden
}

// removeKeyLocked takes kl out of the index, the tree and the slots (moving
// the last slot's key into its place).
func (s *state[V]) removeKeyLocked(kl *keyLog[V]) {
	if last, ok := kl.log.Last(); ok {
		s.removals = append(s.removals, removal{kl.key, last.Rev})
		s.removedMax.Store(max(s.removedMax.Load(), last.Rev))
		if len(s.removals) > maxRemovals {
			half := len(s.removals) / 2
			for _, r := range s.removals[:half] {
				s.removedFloor = max(s.removedFloor, r.rev)
			}
			s.removals = append(s.removals[:0:0], s.removals[half:]...)
		}
	}
	s.indexMu.Lock()
	delete(s.index, kl.key)
	s.indexMu.Unlock()
	s.tree.Delete(kl)
	last := s.slots[len(s.slots)-1]
	s.slots[kl.slot], last.slot = last, kl.slot
	s.slots[len(s.slots)-1] = nil
	s.slots = s.slots[:len(s.slots)-1]
}

// refreshSlotLocked gives an expired key's index slot the tombstone its log
// ends with, letting go of the expired value the slot still holds (see
// publishLocked), once entries were dropped from the log: the OpPut that
// holds the value may have been among them.
func (s *state[V]) refreshSlotLocked(kl *keyLog[V]) {
	if last, ok := kl.log.Last(); ok && last.Op == revlog.Expire {
		s.indexMu.Lock()
		s.index[kl.key] = indexedOf(kl, last)
		s.indexMu.Unlock()
	}
}

// trimKeyLocked cuts kl to its newest maxHistory entries (keeping what the
// oldest open view needs) and raises the floor to its new oldest entry.
func (s *state[V]) trimKeyLocked(kl *keyLog[V]) int {
	kl.mu.Lock()
	n := kl.log.TrimTo(s.opts.maxHistory, s.oldestPin)
	lo := kl.log.Lo()
	kl.mu.Unlock()
	if n > 0 {
		s.refreshSlotLocked(kl)
		s.dur.trimmed(s, kl, false, true)
	}
	if n > 0 && lo > s.trimFloor {
		s.trimFloor = lo
		s.publishFloorLocked()
	}
	return n
}

// compactLocked records a compaction at rev (above the last one).
//
// Its time is rev's own when the order still knows it. Otherwise (rev is
// below Floor, whose times are let go to keep memory flat under
// WithMaxHistory) it stands in the newest time among every key's entry
// visible at rev, the tombstones of keys this compaction removes included:
// no later than rev's own time, and no earlier than any entry the
// compaction decides about, so every read by time at or after it is decided
// by an entry that is kept (or by a key's absence), and is exact. It is
// never earlier than the last compaction's time, so that an answer once
// ErrCompacted stays so. That walk holds the write lock for O(keys × log n);
// it happens only for a Compact below Floor.
func (s *state[V]) compactLocked(rev int64) {
	t, ok, err := s.revTime(rev)
	if !ok || err != nil { // an unreadable time: the newest visible entry's stands in
		t = s.newestVisibleLocked(rev)
		if m := s.compaction.Load(); m != nil && t.Before(m.time) {
			t = m.time
		}
	}
	s.compactRev = rev
	s.compaction.Store(&mark{rev: rev, time: t})
	s.publishFloorLocked()
	s.dur.compacted(s, rev, t)
}

// newestVisibleLocked returns the newest time among every key's entry visible
// at rev that is still held (zero if none).
func (s *state[V]) newestVisibleLocked(rev int64) time.Time {
	var t time.Time
	s.tree.Ascend(func(kl *keyLog[V]) bool {
		if e, st := kl.log.At(rev); st == revlog.Found {
			if et := e.Time(&s.zones); et.After(t) {
				t = et
			}
		}
		return true
	})
	return t
}

// publishFloorLocked publishes Floor() and forgets the revision times no
// longer needed: those below Floor(), or with WithRetention below the last
// compaction (retention looks up revisions by time from there on). The
// chain's digests and the index of revisions follow the times, one
// revision lower (a digest links to the one before).
func (s *state[V]) publishFloorLocked() {
	floor := max(s.compactRev, s.trimFloor)
	s.floor.Store(floor)
	s.dur.forgetNotes(s, floor)
	keep := s.keepLocked()
	s.dur.forget(s, keep)
	if s.revs != nil {
		s.revs.forget(keep - 2)
	}
	s.order.Forget(keep)
}

// keepLocked returns the oldest revision whose time the store keeps.
func (s *state[V]) keepLocked() int64 {
	if s.opts.retention > 0 {
		return s.compactRev
	}
	return max(s.compactRev, s.trimFloor)
}
