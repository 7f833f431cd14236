package revkv

import (
	"fmt"
	"reflect"

	"github.com/revkv/revkv/revlog"
)

// Check verifies the store's internal invariants, as bbolt's tx.Check does;
// the randomised tests call it after every step. It takes the write lock.
//   - every log: revisions strictly increase, times never decrease, and no
//     entry is above the head;
//   - the index, the tree and the slots hold the same keys, and no log in
//     them is empty;
//   - liveKeys counts the keys whose newest entry is an OpPut;
//   - the expiry index holds exactly the keys whose newest entry is an OpPut
//     with a TTL, at that ExpiresAt, and none of them is due at the head's time;
//   - Floor() is max(compactRev, trimFloor).
func (s *Store[V]) Check() error {
	s.lockQuiet()
	defer s.unlockQuiet()
	h := s.order.Head()
	inIndex := 0
	for k, x := range s.index {
		inIndex++
		kl := x.kl
		if last, _ := kl.log.Last(); last == nil || !reflect.DeepEqual(indexedOf(kl, last), x) && !expiredSlot(kl, x, &s.zones) {
			return fmt.Errorf("key %q: the index's copy of the newest entry is stale", k)
		}
		if kl.key != k {
			return fmt.Errorf("index key %q holds log of %q", k, kl.key)
		}
		if got, _ := s.tree.Get(kl); got != kl {
			return fmt.Errorf("key %q: the tree does not hold the indexed log", kl.key)
		}
		if err := checkLog(kl.key, kl.log.Entries(), h.Rev, &s.zones); err != nil {
			return err
		}
	}
	var err error
	if inIndex != s.tree.Len() || inIndex != len(s.slots) {
		return fmt.Errorf("index holds %d keys, tree %d, slots %d", inIndex, s.tree.Len(), len(s.slots))
	}
	for i, kl := range s.slots {
		if s.index[kl.key].kl != kl || kl.slot != i {
			return fmt.Errorf("slot %d holds %q (slot %d), not the indexed log", i, kl.key, kl.slot)
		}
	}
	live, withTTL := 0, 0
	s.tree.Ascend(func(kl *keyLog[V]) bool {
		last, _ := kl.log.Last()
		if last.Op != revlog.Put {
			return true
		}
		live++
		if last.HasTTL {
			withTTL++
			if got, ok := s.expiry.Lookup(kl.key, last.Expires); !ok || got != kl {
				err = fmt.Errorf("key %q: expiry at %v missing from the index, or with another log", kl.key, last.ExpiresAt(&s.zones))
				return false
			}
			if !last.ExpiresAt(&s.zones).After(h.Time) || last.ExpiresAt(&s.zones).UnixNano() != last.Expires {
				err = fmt.Errorf("key %q: expiry at %v not after the head's time %v", kl.key, last.ExpiresAt(&s.zones), h.Time)
				return false
			}
		}
		return true
	})
	switch {
	case err != nil:
		return err
	case live != s.liveKeys:
		return fmt.Errorf("liveKeys %d, counted %d", s.liveKeys, live)
	case withTTL != s.expiry.Len():
		return fmt.Errorf("expiry index holds %d items, %d keys have a TTL", s.expiry.Len(), withTTL)
	case s.floor.Load() != max(s.compactRev, s.trimFloor):
		return fmt.Errorf("floor %d, want max(%d, %d)", s.floor.Load(), s.compactRev, s.trimFloor)
	}
	return nil
}

// expiredSlot reports whether x is what publishLocked leaves in the slot of a
// key it expired: the slot of the OpPut before the final OpExpire, which is
// still in the log, with that OpExpire's time as its deadline.
func expiredSlot[V any](kl *keyLog[V], x indexed[V], zones *revlog.Zones) bool {
	es := kl.log.Entries()
	n := len(es)
	if n < 2 || es[n-1].Op != revlog.Expire || es[n-2].Op != revlog.Put || !es[n-2].HasTTL {
		return false
	}
	return reflect.DeepEqual(indexedOf(kl, &es[n-2]), x) && es[n-1].Time(zones).UnixNano() == x.deadline
}

func checkLog[V any](key string, es []revlog.Entry[V], head int64, zones *revlog.Zones) error {
	if len(es) == 0 {
		return fmt.Errorf("key %q: empty log in the index", key)
	}
	for i := range es {
		e := &es[i]
		if e.Rev > head {
			return fmt.Errorf("key %q: entry at %d above head %d", key, e.Rev, head)
		}
		if e.Op != revlog.Put && (e.HasTTL || e.Op > revlog.Expire) {
			return fmt.Errorf("key %q: bad tombstone at %d", key, e.Rev)
		}
		if i > 0 && (e.Rev <= es[i-1].Rev || e.Time(zones).Before(es[i-1].Time(zones))) {
			return fmt.Errorf("key %q: entry %d (rev %d, %v) out of order after rev %d, %v",
				key, i, e.Rev, e.Time(zones), es[i-1].Rev, es[i-1].Time(zones))
		}
	}
	return nil
}

// HoldCheckpoints keeps checkpoints from running until the returned func is
// called, so that a test can copy a directory as one instant's state (as a
// crash would leave it) while the store is open.
func HoldCheckpoints[V any](s *Store[V]) (release func()) {
	s.disk.ckptMu.Lock()
	return s.disk.ckptMu.Unlock
}

// LogCap returns the capacity of key's log: how many entries it holds
// room for. 0 for a key the store does not hold.
func LogCap[V any](s *Store[V], key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kl := s.lookupLocked(key); kl != nil {
		return cap(kl.log.Entries())
	}
	return 0
}
