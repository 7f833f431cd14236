package revkv

import (
	"bytes"
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

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

// VerifySealed re-hashes every sealed entry: from each segment's digest
// before its first revision, revision by revision, every digest the
// segment's marks, its footer and the store hold must follow (the
// snapshot's and the log's chain, which Open checked, reaches the last
// segment's footer; Open checks that each footer links to the one before
// it, not the entries, so as not to read sealed history). Where a
// compaction dropped entries before their seal, the chain starts again at
// the next digest the segment or the store holds. It returns how many
// entries it re-hashed; damage is ErrCorrupt naming the segment and the
// revisions between the last digest that held and the one that broke.
// Last, it checks each entry memory keeps that a segment holds too (each
// key's newest at a seal, from the snapshot, whose link Open does not
// re-hash) against the segment's copy. progress, if not nil, is called
// after each segment with the last revision it covers. A store that
// never sealed, or made by New, has nothing to check.
//
// A segment is read through in the order of its file (segment.Records),
// its links' heads set in revision order in memory, and rehashed: about
// verifyMemory bytes in all, shared by the segments being checked at
// once. A segment larger than its share is read through once for each
// share's worth.
func (s *Store[V]) VerifySealed(progress func(Revision)) (int64, error) {
	t := s.tierOrNil()
	if t == nil {
		return 0, nil
	}
	// Segments are re-hashed on every core, each from its own digest
	// before (Open checked that the footers link up), the largest first
	// so that the cores finish together, and verifyKept beside them, last;
	// their results are taken in order, so progress and the error named
	// are the same as one at a time would give.
	type result struct {
		n   int64
		err error
	}
	old := s.heldOlder() // once: it walks every older digest under the chain's lock
	workers := min(runtime.GOMAXPROCS(0), len(t.segs)+1)
	budget := max(verifyMemory/min(workers, len(t.segs)), 16<<20)
	kept := make(chan error, 1)
	order := make([]int, len(t.segs)+1) // the items by size: a segment's index, or len(t.segs) for verifyKept
	for i := range order {
		order[i] = i
	}
	size := func(i int) int64 {
		if i == len(t.segs) {
			return 0
		}
		return t.segs[i].Size()
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(size(b), size(a)) })
	results := make([]chan result, len(t.segs))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait() // no worker reads a segment after VerifySealed returns
	defer stop.Store(true)
	for range workers {
		wg.Go(func() {
			for j := int(next.Add(1) - 1); j < len(order) && !stop.Load(); j = int(next.Add(1) - 1) {
				i := order[j]
				if i == len(t.segs) {
					kept <- s.verifyKept(t)
					continue
				}
				k, err := s.verifySettled(t, i, old, budget)
				results[i] <- result{k, err}
			}
		})
	}
	var n int64
	for i := range t.segs {
		r := <-results[i]
		n += r.n
		if r.err != nil {
			return n, &OpError{Op: "verify", Key: t.refs[i].Name(), Err: r.err}
		}
		if progress != nil {
			progress(Revision(t.refs[i].Last))
		}
	}
	if err := <-kept; err != nil {
		return n, &OpError{Op: "verify", Key: s.disk.dir, Err: err}
	}
	return n, nil
}

// verifyKept checks each entry memory keeps that a segment holds too
// (each key's newest at a seal, which the snapshot carries and Open does
// not re-hash) against the segment's copy, which verifySegment re-hashed:
// the same revision, op, time, expiry and value bytes.
func (s *state[V]) verifyKept(t *sealed[V]) error {
	last := t.last()
	s.mu.Lock()
	keys := s.tree.Clone()
	s.mu.Unlock()
	var (
		zt   zoneTable
		mine []segment.Entry
		err  error
	)
	keys.Ascend(func(kl *keyLog[V]) bool {
		mine = mine[:0]
		kl.mu.RLock()
		for _, e := range kl.log.Entries() {
			if e.Rev > last || err != nil {
				break
			}
			x := segmentEntry(kl.key, &e, &s.zones, &zt)
			if x.Op == segment.Put {
				x.Value, err = s.disk.codec.Encode(nil, e.Value)
			}
			mine = append(mine, x)
		}
		kl.mu.RUnlock()
		for i := 0; i < len(mine) && err == nil; i++ {
			x := &mine[i]
			j := t.covering(x.Rev)
			got, ok, gerr := t.segs[j].Get(x.Key, x.Rev)
			switch {
			case gerr != nil:
				err = corruptSegment(t.refs[j].Name(), gerr)
			case !ok || got.Rev != x.Rev || got.Op != x.Op || got.Sec != x.Sec || got.Nsec != x.Nsec ||
				got.HasTTL != x.HasTTL || got.Expires != x.Expires || !bytes.Equal(got.Value, x.Value):
				err = detail(ErrCorrupt, "", fmt.Sprintf("key %q revision %d: the entry memory keeps is not the one %s holds", x.Key, x.Rev, t.refs[j].Name()))
			}
		}
		return err == nil
	})
	return err
}

// verifySegment re-hashes the tier's i-th segment (VerifySealed).
func (s *state[V]) verifySegment(t *sealed[V], i int, old heldOld, budget int) (int64, error) {
	ref, seg := t.refs[i], t.segs[i]
	meta, err := t.meta(i)
	if err != nil {
		return 0, err
	}
	rh := rehasher[V]{s: s}
	var n int64
	from := seg.Footer().TimesFrom
	if from > ref.First {
		// The entries without locators, below a compaction's floor when
		// sealed: each one is checked against the digests kept for it.
		for e, err := range seg.All() {
			if err != nil {
				return n, corruptSegment(ref.Name(), err)
			}
			if e.Rev < from {
				k, err := rh.checkHeld(ref, &e)
				if n += k; err != nil {
					return n, err
				}
			}
		}
	}
	c := segmentCheck[V]{ref: ref, rh: &rh, held: walkOf(s, old, ref.First-1, ref.Last).at, marks: meta.marks,
		d: seg.Footer().Prev, known: from == ref.First, since: ref.First - 1, next: from}
	floor := s.floor.Load()
	if floor > from {
		// Below the floor a sweep may have let go of annotations: only a
		// kept entry, against the digests held for it.
		for e, err := range seg.Revisions(from, min(floor-1, ref.Last)) {
			if err != nil {
				return n, corruptSegment(ref.Name(), err)
			}
			k, err := rh.checkHeld(ref, &e)
			if n += k; err != nil {
				return n, err
			}
			c.known, c.next = false, e.Rev+1
		}
	}
	for rec, err := range seg.Records(max(from, floor), ref.Last, budget, appendHead) {
		if err != nil {
			return n + c.n, corruptSegment(ref.Name(), err)
		}
		if err := c.step(rec.Rev, rec.Bytes); err != nil {
			return n + c.n, err
		}
	}
	if c.next != ref.Last+1 {
		c.known = false
	}
	return n + c.n, c.check(ref.Last, seg.Footer().Digest)
}

// segmentCheck follows the chain through a segment's revisions in order,
// from the digest before the first: each digest the segment's marks and
// the store hold must be the one rehashed.
type segmentCheck[V any] struct {
	ref   segment.Ref
	rh    *rehasher[V]
	held  func(r int64) (chain.Digest, bool)
	marks []digestMark // those not passed yet
	d     chain.Digest // D(since), if known
	known bool
	since int64
	next  int64 // the revision after the last one stepped over
	n     int64 // revisions rehashed
}

// step rehashes revision rev from the head of its link.
func (c *segmentCheck[V]) step(rev int64, head []byte) error {
	if rev != c.next { // a gap: the chain starts again where a digest is held
		c.known = false
	}
	if !c.known {
		c.d, c.known = c.held(rev - 1)
		c.since = rev - 1
	}
	if c.known {
		c.d = c.rh.nextHead(c.d, rev, head)
		c.n++
	}
	c.next = rev + 1
	for len(c.marks) > 0 && c.marks[0].rev <= rev {
		if c.marks[0].rev == rev {
			if err := c.check(rev, c.marks[0].d); err != nil {
				return err
			}
		}
		c.marks = c.marks[1:]
	}
	if want, ok := c.held(rev); ok {
		return c.check(rev, want)
	}
	return nil
}

// check takes want as D(r): a break if the digest rehashed differs.
func (c *segmentCheck[V]) check(r int64, want chain.Digest) error {
	if c.known && c.d != want {
		return chainBreak(c.ref, c.since, r)
	}
	c.d, c.known, c.since = want, true, r
	return nil
}

// verifyMemory is about how much memory VerifySealed holds the links of
// sealed entries in, while it puts them in revision order.
const verifyMemory = 256 << 20

// verifySettled is verifySegment, run again where it found a break while
// a compaction's sweep let annotations go: it rehashed from the floor it
// read before, across revisions whose annotations are gone since.
func (s *state[V]) verifySettled(t *sealed[V], i int, old heldOld, budget int) (int64, error) {
	for {
		gone := s.notes.gone.Load()
		n, err := s.verifySegment(t, i, old, budget)
		if err == nil || s.notes.gone.Load() == gone {
			return n, err
		}
	}
}

// chainBreak is the ErrCorrupt of a segment whose entries after revision
// since do not give the digest held at revision at.
func chainBreak(ref segment.Ref, since, at int64) error {
	return detail(ErrCorrupt, "", fmt.Sprintf("%s: revisions %d to %d: the hash chain breaks", ref.Name(), since+1, at))
}
