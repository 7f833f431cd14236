package revkv

import (
	"math"
	"time"

	"github.com/revkv/revkv/revlog"
)

// The commit path. Every write the store makes — Put and its variants,
// Update, and the expiries that a write, PurgeExpired or the expirer
// materialises — is decided into changes under the write lock and then
// committed by commitLocked, the one function that mutates the index:
//
//  1. record: durability logs the changes at the revisions they will take
//     (New's store logs nothing; a value the codec cannot encode stops the
//     commit here, with nothing changed);
//  2. apply: each change is appended to its key's log, above the head, where
//     no reader looks, and the expiry index and the live count follow it;
//  3. assign: the revisions are numbered in the order (mvcc.Order.Assign);
//  4. publish: the head moves past them together with their index slots, and
//     the publish hook runs (publishLocked). New's store publishes at once;
//     a store on a directory publishes a whole group of commits once their
//     records are written (see group.go);
//  5. cap: a key the commit took over twice WithMaxHistory is cut back.
//
// Compaction and trims shrink history without a revision: they are not
// commits, and durability logs them on their own (compact.go).

// change is one write to commit: its key, the key's log (nil for a key the
// store does not hold yet), and the entry, whose revision and time commit
// sets.
type change[V any] struct {
	key string
	kl  *keyLog[V]
	e   revlog.Entry[V]
	// prev is the index, in the same commit, of the previous change to key,
	// or -1: a key new to the store gets its log from the first change.
	prev int
}

// commitLocked commits cs as the next len(cs) revisions, in order, all at
// time t, and returns the last one. Each change was decided against the
// state the changes before it left (the caller's job). An OpExpire change
// is one whose expiry the caller took off the expiry index.
func (s *state[V]) commitLocked(cs []change[V], t time.Time) (int64, error) {
	if err := s.dur.record(s, cs, s.order.Next(), t); err != nil {
		return 0, err
	}
	s.applyLocked(cs, t)
	if s.commitNotes != nil {
		s.addNotesLocked(cs)
	}
	last := s.order.Assign(len(cs), t)
	s.dur.committed(s, cs)
	if n := s.opts.maxHistory; n > 0 {
		for i := range cs {
			if kl := cs[i].kl; kl.log.Len()-int(kl.drop) > 2*n {
				s.dur.cap(s, kl)
			}
		}
	}
	return last, nil
}

// commitOneLocked is commitLocked of the change the caller put in
// state.one. A single write's change lives there, not on the caller's
// stack: durability is an interface, so a slice handed to it escapes, and
// one on the stack would be moved to the heap on every write. It is not
// cleared after: what it holds (the key, its log, the value) is in the log
// anyway, but for the value of a change the codec refused, which it keeps
// until the next write.
func (s *state[V]) commitOneLocked(t time.Time) (int64, error) {
	return s.commitLocked(s.one[:], t)
}

// applyLocked appends cs to their keys' logs, above the head, creating the
// logs of keys new to the store; a newer write cancels the pending expiry
// of the value it replaces and a new TTL enters the expiry index.
func (s *state[V]) applyLocked(cs []change[V], t time.Time) {
	rev := s.order.Last().Rev
	for i := range cs {
		c := &cs[i]
		if c.kl == nil && c.prev >= 0 {
			c.kl = cs[c.prev].kl
		}
		wasLive := false
		if c.kl == nil {
			c.kl = s.addKeyLocked(c.key)
		} else if last, ok := c.kl.log.Last(); ok && last.Op == revlog.Put {
			wasLive = true
			if last.HasTTL && c.e.Op != revlog.Expire {
				s.expiry.Remove(c.key, last.Expires) // the newer write cancels it
			}
		}
		rev++
		c.e.Rev = rev
		if s.revs != nil {
			s.revs.add(rev, c.kl)
		}
		c.e.SetTime(t, &s.zones)
		c.kl.mu.Lock()
		if n := s.opts.maxHistory; n > 0 {
			c.kl.log.AppendWithin(c.e, n+min(n, math.MaxInt32)+1) // the cap trims past 2n
		} else {
			c.kl.log.Append(c.e)
		}
		c.kl.mu.Unlock()
		if c.e.HasTTL {
			s.expiry.Add(c.key, c.e.Expires, c.kl)
		}
		switch isLive := c.e.Op == revlog.Put; {
		case isLive && !wasLive:
			s.liveKeys++
		case !isLive && wasLive:
			s.liveKeys--
		}
	}
}

// publishLocked makes every assigned revision visible, with the index
// slots of cs, the changes they hold, in one step: a reader loads the head
// before them (and the slots before them) or after, never between. Then it
// runs the publish hook: whatever follows the history (the watchers' ring
// of recent revisions, the watchers themselves) learns of cs here, and
// nowhere else.
//
// An OpExpire leaves its key's slot as it is, so that a purge never looks
// the key up in the index map, which would be most of its cost: the slot
// goes on holding the expired value with its deadline, which every reader's
// now has reached (now is never before the head's time, and the expiry's
// time is that deadline), so every read of the latest state already treats
// it as missing. The value is still in the log, in the OpPut before the
// expiry, until a trim or compaction drops that and refreshes the slot
// (refreshSlotLocked). The next write to the key replaces the slot.
func (s *state[V]) publishLocked(cs []change[V]) {
	first := cs[0].e.Rev
	if s.watch.n.Load() > 0 {
		for i := range cs {
			s.recent.record(cs[i].e.Rev, cs[i].kl)
		}
	}
	if len(cs) == 1 && cs[0].e.Op == revlog.Expire {
		s.order.Publish() // no slot changes with it, so indexMu is not needed
	} else {
		s.indexMu.Lock()
		for i := range cs {
			if c := &cs[i]; c.e.Op != revlog.Expire {
				s.index[c.key] = indexedOf(c.kl, &c.e) // a key written twice: the last wins
			}
		}
		s.order.Publish() // readers see cs from here on
		s.indexMu.Unlock()
	}
	// Read again, not watched: a watcher that joined since then read the
	// head before this publication, and waits for this wake-up (Watch joins
	// before it reads the head, and this reads after it publishes).
	if s.watch.n.Load() > 0 {
		for i := range cs {
			s.watch.notifyKey(cs[i].key, first)
		}
	}
}

// addKeyLocked creates key's (empty) log and enters it in the tree and the
// slots; its publication enters it in the index.
func (s *state[V]) addKeyLocked(key string) *keyLog[V] {
	kl := &keyLog[V]{key: key, slot: len(s.slots)}
	s.tree.ReplaceOrInsert(kl)
	s.slots = append(s.slots, kl)
	return kl
}
