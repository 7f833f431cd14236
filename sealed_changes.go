package revkv

import "strings"

// changesSealed is changes over sealed revisions read in revision order:
// each segment's entries from from on through its locators, one block at a
// time, where the merge of every key's cursor would read one block an
// entry and hold a cursor a key (Changes from revision 1 of years of
// history, or a Watch that catches up). The segments hold every entry of
// their revisions; it yields those under prefix.
//
// The merge's checks are not needed while from is at or above the floor:
// what compactions and trims drop, and the keys they remove, lie below it.
// So it checks the floor before each entry, and hands the rest of the
// range to the merge (changesMerge) once the floor passes the next
// revision it has to yield, which then finds what was dropped and says
// where to restart. The check is against that revision, not the entry
// read: a merge of segments leaves out what a compaction hid, so the
// tier, loaded after the caller checked from against the floor, may skip
// from the next revision to one above a floor that rose meanwhile.
// It returns the revision to go on from: one past the last sealed one
// when it yielded its part of the range, past to when the merge took the
// rest; and false where yield stopped or was given an error.
func (s *state[V]) changesSealed(prefix string, from, to int64, yield func(Entry[V], error) bool) (int64, bool) {
	t := s.tierOrNil()
	if t == nil {
		return from, true
	}
	hi := min(to, t.last())
	next := from // the revisions before it are yielded (those under prefix)
	for i, ref := range t.refs {
		if ref.Last < from || ref.First > hi {
			continue
		}
		for x, err := range t.segs[i].Revisions(max(from, ref.First), min(hi, ref.Last)) {
			if err != nil {
				yield(Entry[V]{}, keyErr("changes under", prefix, "from", Revision(from), corruptSegment(ref.Name(), err)))
				return 0, false
			}
			if s.floor.Load() > next {
				return to + 1, s.changesMerge(prefix, next, to, yield)
			}
			next = x.Rev + 1
			if !strings.HasPrefix(x.Key, prefix) {
				continue
			}
			e, err := s.publicEntry(t, i, &x)
			if err != nil {
				yield(Entry[V]{}, keyErr("changes under", prefix, "from", Revision(from), err))
				return 0, false
			}
			if !yield(e, nil) {
				return 0, false
			}
		}
	}
	if next <= hi && s.floor.Load() > next {
		// The range ends in what a merge left out: nothing came to check.
		return to + 1, s.changesMerge(prefix, next, to, yield)
	}
	return hi + 1, true
}

// sealedLast is the last sealed revision, 0 for a store with no segments.
func (s *state[V]) sealedLast() int64 {
	if t := s.tierOrNil(); t != nil {
		return t.last()
	}
	return 0
}
