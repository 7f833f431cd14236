package revkv

import (
	"cmp"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/btree"
)

// KeyDiff is one key whose visible entry differs between two revisions.
type KeyDiff[V any] struct {
	Key string
	// Before and After are the key's live entry (an OpPut) at each of the
	// two revisions; Rev == 0: the key was absent there (never written,
	// deleted or expired).
	Before, After Entry[V]
}

// Diff yields, in key order, every key with the prefix whose live entry at
// revision to is not the one at revision from: written, deleted or expired
// in between. A key written and then deleted between the two, absent at
// both, is not yielded; a key written again with the same value is, since
// its entry is another one. Reads are at revisions, as At's are: a value
// whose TTL ran out is live until the revision of its OpExpire.
//
// from > to, or to > Rev(), is ErrFutureRevision; from or to below
// Floor() is ErrCompacted, but from <= 0 compares with the empty state,
// which is always known. Its cost grows with the revisions between from
// and to, not with the number of keys: the store keeps an index from each
// revision above Floor to the key that made it (one pointer a revision),
// built by the first Diff from the keys' logs and kept by every commit
// after it; a store that never diffs never builds it. Once a compaction
// dropped the revisions that made the keys, a Diff from the empty state
// walks the keys with the prefix instead (a clone of the key tree, taken
// under the lock and walked outside it). Diff pins from (to, from the empty
// state) while it runs, as a View does, so that compaction and trims keep
// what it reads; the loop body may use the store freely.
func (s *Store[V]) Diff(prefix string, from, to Revision) iter.Seq2[KeyDiff[V], error] {
	return func(yield func(KeyDiff[V], error) bool) {
		kls, all, pin, err := s.diffKeys(prefix, int64(from), int64(to))
		if err != nil {
			yield(KeyDiff[V]{}, err)
			return
		}
		defer pin.Close()
		if all != nil { // the empty state against to, after a compaction
			all.AscendGreaterOrEqual(&keyLog[V]{key: prefix}, func(kl *keyLog[V]) bool {
				if !strings.HasPrefix(kl.key, prefix) {
					return false
				}
				kls = append(kls, kl)
				return true
			})
		}
		before, after := &View[V]{s: s.state, rev: int64(from)}, &View[V]{s: s.state, rev: int64(to)}
		for _, kl := range kls {
			b, bok := before.at(kl)
			a, aok := after.at(kl)
			if err := cmp.Or(before.readErr(), after.readErr()); err != nil {
				yield(KeyDiff[V]{}, diffErr(prefix, int64(from), int64(to), err))
				return
			}
			if bok == aok && (!bok || b.rev() == a.rev()) {
				continue
			}
			d := KeyDiff[V]{Key: kl.key}
			if bok {
				d.Before = b.public(kl.key, &s.zones)
			}
			if aok {
				d.After = a.public(kl.key, &s.zones)
			}
			if !yield(d, nil) {
				return
			}
		}
	}
}

// diffKeys returns the logs of the keys with prefix that revisions
// from+1..to changed, in key order, and a view that pins from (to be
// closed), or Diff's error. From the empty state after a compaction, which
// the index cannot list, it returns instead a clone of the key tree, for
// Diff to walk for the keys with prefix, and a view that pins to.
func (s *state[V]) diffKeys(prefix string, from, to int64) ([]*keyLog[V], *btree.BTreeG[*keyLog[V]], *View[V], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.order.Head()
	floor := s.floor.Load()
	switch {
	case to > h.Rev:
		return nil, nil, nil, diffErr(prefix, from, to, detail(ErrFutureRevision, "latest is", h.Rev))
	case from > to:
		return nil, nil, nil, diffErr(prefix, from, to, detail(ErrFutureRevision, "from is after to", to))
	case from < floor && from > 0, to < floor && to > 0:
		return nil, nil, nil, diffErr(prefix, from, to, detail(ErrCompacted, "floor is", floor))
	case from <= 0 && floor > 0:
		return nil, s.tree.Clone(), s.openLocked(to, time.Time{}), nil
	}
	from = max(from, 0)
	pin := s.openLocked(from, time.Time{})
	revs := s.revKeysLocked()
	var kls []*keyLog[V]
	add := func(kl *keyLog[V]) {
		if kl != nil && strings.HasPrefix(kl.key, prefix) {
			kls = append(kls, kl)
		}
	}
	if from+1 < revs.base {
		// Sealed revisions, which the index leaves to the tier.
		if err := s.sealedKeysLocked(from+1, min(to, revs.base-1), add); err != nil {
			pin.Close()
			return nil, nil, nil, diffErr(prefix, from, to, err)
		}
	}
	for r := max(from+1, revs.base); r <= to; r++ {
		add(revs.at(r))
	}
	slices.SortFunc(kls, func(a, b *keyLog[V]) int { return strings.Compare(a.key, b.key) })
	return slices.Compact(kls), nil, pin, nil
}

// diffErr is Diff's error: revkv: diff "prefix" from 3 to 9: ...
func diffErr(prefix string, from, to int64, err error) error {
	return &OpError{Op: "diff", Key: prefix, Rev: Revision(to), Err: err, arg: "from", val: fromTo{from, to}}
}

// fromTo prints a Diff's two revisions.
type fromTo struct{ from, to int64 }

func (f fromTo) String() string {
	return strconv.FormatInt(f.from, 10) + " to " + strconv.FormatInt(f.to, 10)
}

// revKeys maps each revision from the one before the oldest whose time is
// kept (keepLocked; Floor() but under WithRetention) on to the log of the
// key that made it: Diff's index, and the hash chain's (disk.forget),
// guarded by state.mu. Invariant, once built: kls holds revisions
// base..base+len(kls)-1, every one from at most that revision to the last
// assigned one, each with its entry in its key's log (if kept).
//
// A store that seals leaves the sealed revisions to the tier: base is
// above the last sealed revision (sealedKeysLocked reads the rest), so
// that the index costs memory for the revisions in memory alone.
type revKeys[V any] struct {
	base int64
	kls  []*keyLog[V]
}

// revKeysLocked returns the index, building it from the keys' logs on the
// first call: O(entries) once.
func (s *state[V]) revKeysLocked() *revKeys[V] {
	if s.revs == nil {
		s.buildRevKeysLocked(s.keepLocked() - 1) // the chain looks one lower (disk.forget)
	}
	return s.revs
}

// buildRevKeysLocked builds the index from revision base on.
func (s *state[V]) buildRevKeysLocked(base int64) {
	base = max(base, 1)
	if t := s.tierOrNil(); t != nil {
		// Not above the next revision: Open replays from its snapshot,
		// which may be older than the last seal.
		base = max(base, min(t.last(), s.order.Last().Rev)+1)
	}
	rk := &revKeys[V]{base: base, kls: make([]*keyLog[V], max(s.order.Last().Rev-base+1, 0))}
	if len(rk.kls) == 0 { // every revision is sealed, as at an Open after Close: no key to look at
		s.revs = rk
		return
	}
	s.tree.Ascend(func(kl *keyLog[V]) bool {
		for _, e := range kl.log.Entries() {
			if e.Rev >= base {
				rk.kls[e.Rev-base] = kl
			}
		}
		return true
	})
	s.revs = rk
}

// at returns revision r's key.
func (rk *revKeys[V]) at(r int64) *keyLog[V] { return rk.kls[r-rk.base] }

// add records that revision rev (the next one) is kl's.
func (rk *revKeys[V]) add(rev int64, kl *keyLog[V]) {
	if rev != rk.base+int64(len(rk.kls)) {
		panic("revkv: revision index out of step")
	}
	rk.kls = append(rk.kls, kl)
}

// forget lets go of the revisions at or below floor, copying the rest down
// once they are under half of the slice, so that its memory follows the
// revisions kept.
func (rk *revKeys[V]) forget(floor int64) {
	n := floor + 1 - rk.base
	if n <= 0 {
		return
	}
	n = min(n, int64(len(rk.kls)))
	clear(rk.kls[:n])
	rk.kls = rk.kls[n:]
	rk.base += n
	if len(rk.kls) < cap(rk.kls)/2 {
		rk.kls = slices.Clone(rk.kls)
	}
}
