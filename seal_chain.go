package revkv

import (
	"fmt"
	"slices"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/segment"
)

// The chain over sealed history. Once a seal's segment holds a range of
// revisions, the store lets go of their digests (but for the few its kept
// entries need, and the last one's): a segment's footer holds the digest
// before its first revision and at its last, its meta one every markEvery
// revisions (seal_meta.go), and its entries are the rest of what the chain
// covers. A sealed revision's digest is recomputed from the nearest mark
// at or below it, reading the revisions in between in order.

// rehasher recomputes links of a segment's entries, reusing its buffers.
type rehasher[V any] struct {
	s    *state[V]
	h    chain.Hasher
	link chain.Rev
	// The annotations of revisions [lo, hi] (notesNear), while hi >= lo.
	notes  []string
	lo, hi int64
}

// next returns D(e.Rev) given prev = D(e.Rev-1), e being an entry of a
// segment.
func (rh *rehasher[V]) next(prev chain.Digest, e *segment.Entry) chain.Digest {
	rh.link = linkOfSealed(e)
	rh.link.Notes = rh.notesOf(e.Rev)
	return rh.h.Next(prev, &rh.link)
}

// nextHead returns D(rev) given prev = D(rev-1) and the head of rev's
// link (appendHead of its entry).
func (rh *rehasher[V]) nextHead(prev chain.Digest, rev int64, head []byte) chain.Digest {
	return rh.h.NextHead(prev, head, rh.notesOf(rev))
}

// notesOf returns the annotations of rev, looking up a span of them
// at a time.
func (rh *rehasher[V]) notesOf(rev int64) []string {
	if rev < rh.lo || rev > rh.hi {
		rh.s.notes.mu.RLock()
		rh.notes, rh.lo, rh.hi = rh.s.notes.notesNear(rev)
		rh.s.notes.mu.RUnlock()
	}
	return rh.notes
}

// linkOfSealed is what the chain covers of e, an entry of a segment, but
// its annotations. A link holds no zone: the entry's is not looked up.
func linkOfSealed(e *segment.Entry) chain.Rev {
	return chain.Rev{Rev: e.Rev, Key: e.Key, Op: uint8(e.Op), Sec: e.Sec, Nsec: e.Nsec,
		HasTTL: e.HasTTL, Expires: e.Expires, Value: e.Value}
}

// appendHead appends the head of e's link (chain.Rev.AppendHead): the
// record verify has segment.Records make of each entry.
func appendHead(dst []byte, e *segment.Entry) []byte {
	l := linkOfSealed(e)
	return l.AppendHead(dst)
}

// checkHeld checks e, an entry of the segment ref,
// against the digests the store holds for it and the one before, if it
// holds both and e's key keeps it: it returns 1 if it checked it, else 0.
// An entry a compaction hid may have both digests held for its kept
// neighbours, and its annotations let go by a sweep: rehashed without
// them, it would break a chain that is whole.
func (rh *rehasher[V]) checkHeld(ref segment.Ref, e *segment.Entry) (int64, error) {
	prev, ok1 := rh.s.heldDigest(e.Rev - 1)
	want, ok2 := rh.s.heldDigest(e.Rev)
	switch {
	case !ok1 || !ok2 || !kept(rh.s.lookup(e.Key), e.Rev):
		return 0, nil
	case rh.next(prev, e) != want:
		return 0, chainBreak(ref, e.Rev-1, e.Rev)
	}
	return 1, nil
}

// sealedDigest returns D(rev) for a revision the tier covers (sealedDigests).
// It runs beside compactions: should a sweep let annotations go while it
// rehashes (from the floor it read before), it starts again from the
// floor that sweep left, which the sweep set before it let them go.
func (s *state[V]) sealedDigest(rev int64) (chain.Digest, bool, error) {
	for {
		gone := s.notes.gone.Load()
		var d chain.Digest
		ok := false
		err := s.sealedDigests([]int64{rev}, s.floor.Load(), func(_ int64, dg chain.Digest) { d, ok = dg, true })
		if err != nil || s.notes.gone.Load() == gone {
			return d, ok, err
		}
	}
}

// sealedDigests calls fn with D(r) of each revision r of revs (in
// increasing order) that the store holds or can rehash: from the nearest
// digest at or below r that r's segment holds (the one before its first
// revision, or a mark) or the store holds, through revisions none of
// which is below below. Below the floor, a compaction's sweep may have
// let go of a revision's annotations, which its link covers: there only
// the digests the store holds answer. A revision is left out if neither
// does, or if an entry in between is not in the segment (one a compaction
// dropped before the seal). One pass: a run of revisions shares the
// rehashing between them.
func (s *state[V]) sealedDigests(revs []int64, below int64, fn func(r int64, d chain.Digest)) error {
	t := s.tierOrNil()
	if t == nil {
		return nil
	}
	fm := s.floorMarkOf()
	rh := rehasher[V]{s: s}
	var cur digestMark // the last digest rehashed, if curOK
	curOK := false
	for _, rev := range revs {
		if d, ok := s.heldDigest(rev); ok || rev == 0 { // D(0) is 32 zero bytes
			fn(rev, d)
			continue
		}
		i := t.covering(rev)
		if i < 0 || rev > t.refs[i].Last || rev < below {
			continue
		}
		seg := t.segs[i]
		meta, err := t.meta(i)
		if err != nil {
			return err
		}
		from := digestMark{t.refs[i].First - 1, seg.Footer().Prev}
		if m, ok := meta.markAt(rev); ok {
			from = m
		}
		if fm.ok && fm.rev > from.rev && fm.rev <= rev {
			from = fm.digestMark
		}
		if curOK && cur.rev >= from.rev && cur.rev <= rev {
			from = cur // go on from the last one
		}
		if from.rev < below-1 {
			if d, ok := s.heldDigest(below - 1); ok && below-1 >= t.refs[i].First-1 {
				from = digestMark{below - 1, d}
			} else {
				curOK = false
				continue // it would rehash revisions below below
			}
		}
		if from.rev+1 < seg.Footer().TimesFrom { // revisions without locators
			curOK = false
			continue
		}
		cur, curOK = from, true
		for e, err := range seg.Revisions(from.rev+1, rev) {
			if err != nil {
				return corruptSegment(t.refs[i].Name(), err)
			}
			if e.Rev != cur.rev+1 { // a gap: on from a digest the store holds, if it does
				if cur.d, curOK = s.heldDigest(e.Rev - 1); !curOK {
					break
				}
			}
			cur = digestMark{e.Rev, rh.next(cur.d, &e)}
		}
		if curOK && cur.rev == rev {
			fn(rev, cur.d)
		} else {
			curOK = false
		}
	}
	return nil
}

// heldWalk answers heldDigest for a walk through a segment's revisions
// (verifySegment) without taking the chain's lock for each: below the
// chain's base it looks in heldOld, the chain's older digests copied once
// for a whole VerifySealed, and it asks the chain only at and above the
// base. A digest copied stays right if the chain lets it go meanwhile (a
// revision's digest never changes); one the chain takes meanwhile is not
// seen, which checks less, never wrongly.
type heldWalk[V any] struct {
	s    *state[V]
	base int64
	revs []int64 // ascending
	ds   []chain.Digest
	i    int // revs[:i] are below the last revision asked
}

// heldOld is the chain's older digests, in revision order, and its base.
type heldOld struct {
	base int64
	revs []int64
	ds   []chain.Digest
}

// heldOlder copies the chain's older digests (heldWalk).
func (s *state[V]) heldOlder() heldOld {
	s.disk.chainMu.Lock()
	defer s.disk.chainMu.Unlock()
	revs, ds := s.disk.chain.OldDigests()
	return heldOld{s.disk.chain.Base(), revs, ds}
}

// walkOf returns a heldWalk over revisions [lo, hi] of h.
func walkOf[V any](s *state[V], h heldOld, lo, hi int64) *heldWalk[V] {
	i, _ := slices.BinarySearch(h.revs, lo)
	j, _ := slices.BinarySearch(h.revs, hi+1)
	return &heldWalk[V]{s: s, base: h.base, revs: h.revs[i:j], ds: h.ds[i:j]}
}

// at is heldDigest(r); it is quickest where r does not go down from one
// call to the next.
func (h *heldWalk[V]) at(r int64) (chain.Digest, bool) {
	if r >= h.base {
		return h.s.heldDigest(r)
	}
	if h.i > 0 && h.revs[h.i-1] >= r {
		h.i = 0
	}
	for h.i < len(h.revs) && h.revs[h.i] < r {
		h.i++
	}
	if h.i < len(h.revs) && h.revs[h.i] == r {
		return h.ds[h.i], true
	}
	return chain.Digest{}, false
}

// heldDigest returns D(r) if the chain holds it.
func (s *state[V]) heldDigest(r int64) (chain.Digest, bool) {
	s.disk.chainMu.Lock()
	defer s.disk.chainMu.Unlock()
	return s.disk.chain.At(r)
}

// floorMarkOf returns D(f-1) for the floor f of the last compaction the
// store swept after (setFloorMark): annotations may be gone below f, and
// the digests of the kept entries below f are held. Until the sweep after
// a new compaction, it is still the last one's, which that sweep rehashes
// from.
func (s *state[V]) floorMarkOf() (fm struct {
	digestMark
	ok bool
}) {
	s.disk.chainMu.Lock()
	defer s.disk.chainMu.Unlock()
	return s.disk.floorMark
}

// setFloorMark sets the floor mark to D(floor-1), if the chain holds it:
// after Open, and after each sweep.
func (d *disk[V]) setFloorMark(floor int64) {
	d.chainMu.Lock()
	defer d.chainMu.Unlock()
	d.sweptFloor = floor
	if dg, ok := d.chain.At(floor - 1); ok && floor > 0 {
		d.floorMark.digestMark, d.floorMark.ok = digestMark{floor - 1, dg}, true
	}
}

// sweptSealed holds, before a compaction's sweep lets go of the
// annotations of the revisions it dropped, the digests of sealed history
// that can no longer be rehashed afterwards: those of need (the kept
// entries below the floor, their predecessors, and the floor's
// predecessor) that the chain let go of at a seal. The caller holds
// state.mu.
func (s *state[V]) sweptSealed(need map[int64]bool) error {
	d := s.disk
	d.chainMu.Lock()
	var missing []int64
	for r := range need {
		if _, ok := d.chain.At(r); !ok && r >= 0 {
			missing = append(missing, r)
		}
	}
	d.chainMu.Unlock()
	slices.Sort(missing)
	// Rehashed from the floor before this compaction's: its sweep has not
	// let go of the annotations between the two yet.
	d.chainMu.Lock()
	below := d.sweptFloor
	d.chainMu.Unlock()
	var got []digestMark
	err := s.sealedDigests(missing, below, func(r int64, dg chain.Digest) { got = append(got, digestMark{r, dg}) })
	d.chainMu.Lock()
	for _, m := range got {
		d.chain.AddOld(m.rev, m.d)
	}
	d.chainMu.Unlock()
	return err
}

// chainBreak is the ErrCorrupt of a segment whose entries after revision
// since do not give the digest held at revision at.
func chainBreak(ref segment.Ref, since, at int64) error {
	return detail(ErrCorrupt, "", fmt.Sprintf("%s: revisions %d to %d: the hash chain breaks", ref.Name(), since+1, at))
}
