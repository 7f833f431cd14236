package revkv

import (
	"bytes"
	"cmp"
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/segment"
)

// Verify: every sealed entry rehashed, segment by segment on every core,
// each read through once in the order of its file (segment.Records).

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
// It checks each entry memory keeps that a segment holds too (each key's
// newest at a seal, from the snapshot, whose link Open does not re-hash)
// against the segment's copy, as its walk comes to it. progress, if not nil, is called
// after each segment with the last revision it covers. A store that
// never sealed, or made by New, has nothing to check.
//
// A segment is read through in the order of its file (segment.Records),
// its links' heads set in revision order in memory, and rehashed: in
// about as many bytes in all as WithMemory's bound (DefaultMemory if it
// has none), shared by the segments being checked at once, and at least
// 16 MiB each. A segment larger than its share is read through once for
// each share's worth, up to four times; one larger still is read in
// revision order by windows (segment.Reader.Revisions). Besides, verify
// holds 16 bytes for each entry memory keeps of sealed revisions (each
// key's newest at a seal, as a rule), to check it on the walk.
func (s *Store[V]) VerifySealed(progress func(Revision)) (int64, error) {
	t := s.tierOrNil()
	if t == nil || len(t.segs) == 0 { // (no segment: no share of memory to divide)
		return 0, nil
	}
	// Segments are re-hashed on every core, each from its own digest
	// before (Open checked that the footers link up), the largest first
	// so that the cores finish together; their results are taken in
	// order, so progress and the error named are the same as one at a
	// time would give.
	type result struct {
		n   int64
		err error
	}
	old := s.heldOlder() // once: it walks every older digest under the chain's lock
	kept := s.keptRefs(t)
	workers := min(runtime.GOMAXPROCS(0), len(t.segs))
	budget := s.opts.memory
	if budget <= 0 {
		budget = DefaultMemory
	}
	// An int on a 32-bit build too.
	share := int(min(max(budget/int64(workers), 16<<20), math.MaxInt))
	order := make([]int, len(t.segs)) // the segments, largest first
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t.segs[b].Size(), t.segs[a].Size()) })
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
				k, err := s.verifySettled(t, i, old, share, keptIn(kept, t.refs[i]))
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
	return n, nil
}

// keptRef is an entry memory keeps that a segment holds too (each key's
// newest at a seal, which the snapshot carries and Open does not
// re-hash): verify compares it with the segment's copy, which it
// rehashes, when its walk through the segment comes to its revision.
// Memory's copy is read then, so that verify holds 16 bytes a key, not
// the key's entry.
type keptRef[V any] struct {
	rev int64
	kl  *keyLog[V]
}

// keptRefs returns the entries memory keeps at or below the tier's last
// revision, by revision.
func (s *state[V]) keptRefs(t *sealed[V]) []keptRef[V] {
	last := t.last()
	s.mu.Lock()
	keys := s.tree.Clone()
	s.mu.Unlock()
	var out []keptRef[V]
	keys.Ascend(func(kl *keyLog[V]) bool {
		kl.mu.RLock()
		for _, e := range kl.log.Entries() {
			if e.Rev > last {
				break
			}
			out = append(out, keptRef[V]{e.Rev, kl})
		}
		kl.mu.RUnlock()
		return true
	})
	slices.SortFunc(out, func(a, b keptRef[V]) int { return cmp.Compare(a.rev, b.rev) })
	return out
}

// keptIn returns those of kept in the segment ref's revisions.
func keptIn[V any](kept []keptRef[V], ref segment.Ref) []keptRef[V] {
	lo, _ := slices.BinarySearchFunc(kept, ref.First, func(k keptRef[V], r int64) int { return cmp.Compare(k.rev, r) })
	hi, _ := slices.BinarySearchFunc(kept, ref.Last+1, func(k keptRef[V], r int64) int { return cmp.Compare(k.rev, r) })
	return kept[lo:hi]
}

// keptHeads checks the entries memory keeps, kept, as the walk through
// segment ref comes to their revisions.
type keptHeads[V any] struct {
	s    *state[V]
	ref  segment.Ref
	kept []keptRef[V] // those the walk has not come to yet
	zt   zoneTable
	buf  []byte
}

// head appends the head of the link (appendHead) of k's entry, as memory
// keeps it; false if it keeps it no longer (a compaction since cut it).
func (h *keptHeads[V]) head(dst []byte, k keptRef[V]) ([]byte, bool, error) {
	k.kl.mu.RLock()
	defer k.kl.mu.RUnlock()
	es := k.kl.log.Entries()
	i, ok := slices.BinarySearchFunc(es, k.rev, func(e revlog.Entry[V], r int64) int { return cmp.Compare(e.Rev, r) })
	if !ok {
		return dst, false, nil
	}
	x := segmentEntry(k.kl.key, &es[i], &h.s.zones, &h.zt)
	if x.Op == segment.Put {
		var err error
		if x.Value, err = h.s.disk.codec.Encode(nil, es[i].Value); err != nil {
			return dst, false, err
		}
	}
	return appendHead(dst, &x), true, nil
}

// take takes the first of the kept entries not checked yet, with
// memory's head of it (in h.buf); ok is false where memory keeps it no
// longer.
func (h *keptHeads[V]) take() (k keptRef[V], mine []byte, ok bool, err error) {
	k, h.kept = h.kept[0], h.kept[1:]
	mine, ok, err = h.head(h.buf[:0], k)
	h.buf = mine
	return k, mine, ok, err
}

// at is the walk at revision rev, whose head in the segment is seg (nil:
// past the segment's last): each entry memory keeps below it is one the
// segment does not hold, and one at it must be the segment's.
func (h *keptHeads[V]) at(rev int64, seg []byte) error {
	for len(h.kept) > 0 && h.kept[0].rev <= rev {
		k, mine, ok, err := h.take()
		switch {
		case err != nil:
			return err
		case ok && (k.rev != rev || !bytes.Equal(mine, seg)):
			return h.differs(k)
		}
	}
	return nil
}

// end is the walk past the segment's last revision: an entry memory keeps
// that it did not come to is one the segment does not hold.
func (h *keptHeads[V]) end() error {
	for len(h.kept) > 0 {
		if k, _, ok, err := h.take(); err != nil || ok {
			return cmp.Or(err, h.differs(k))
		}
	}
	return nil
}

// checkGet checks, through the segment's Get, the entries memory keeps
// below revision below, which the walk in revision order does not come
// to (those without a locator, or below the floor).
func (h *keptHeads[V]) checkGet(seg *segment.Reader, below int64) error {
	for len(h.kept) > 0 && h.kept[0].rev < below {
		k, mine, ok, err := h.take()
		switch {
		case err != nil:
			return err
		case !ok:
			continue // a compaction since cut it
		}
		got, found, err := seg.Get(k.kl.key, k.rev)
		if err != nil {
			return corruptSegment(h.ref.Name(), err)
		}
		if found {
			h.buf = appendHead(h.buf, &got)
		}
		if !found || !bytes.Equal(mine, h.buf[len(mine):]) {
			return h.differs(k)
		}
	}
	return nil
}

// differs is the ErrCorrupt of an entry memory keeps that the segment
// does not hold alike.
func (h *keptHeads[V]) differs(k keptRef[V]) error {
	return detail(ErrCorrupt, "", fmt.Sprintf("key %q revision %d: the entry memory keeps is not the one %s holds", k.kl.key, k.rev, h.ref.Name()))
}

// verifySegment re-hashes the tier's i-th segment (VerifySealed).
func (s *state[V]) verifySegment(t *sealed[V], i int, old heldOld, budget int, kept []keptRef[V]) (int64, error) {
	ref, seg := t.refs[i], t.segs[i]
	meta, err := t.meta(i)
	if err != nil {
		return 0, err
	}
	rh := rehasher[V]{s: s}
	var n int64
	from, floor := seg.Footer().TimesFrom, s.floor.Load()
	h := keptHeads[V]{s: s, ref: ref, kept: kept}
	if err := h.checkGet(seg, max(from, floor)); err != nil {
		return 0, err
	}
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
	for rec, err := range heads(seg, max(from, floor), ref.Last, budget) {
		if err != nil {
			return n + c.n, corruptSegment(ref.Name(), err)
		}
		if err := h.at(rec.Rev, rec.Bytes); err != nil {
			return n + c.n, err
		}
		if err := c.step(rec.Rev, rec.Bytes); err != nil {
			return n + c.n, err
		}
	}
	if err := h.end(); err != nil {
		return n + c.n, err
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

// heads yields, in revision order, the head of the link (appendHead) of
// each of seg's entries in revisions [lo, hi]: through Records, which
// reads the segment through once for each share of memory, where a few
// passes take it whole; else through Revisions, which holds a window of
// revisions and reads the segment again for each, but not once for each
// entry of a segment many times larger than the share.
func heads(seg *segment.Reader, lo, hi int64, share int) iter.Seq2[segment.Record, error] {
	// A record of W takes 2.6 bytes for each of the file's.
	if seg.Size() <= int64(share)/3*recordPasses {
		return seg.Records(lo, hi, share, appendHead)
	}
	return func(yield func(segment.Record, error) bool) {
		var buf []byte
		for e, err := range seg.Revisions(lo, hi) {
			if err != nil {
				yield(segment.Record{}, err)
				return
			}
			buf = appendHead(buf[:0], &e)
			if !yield(segment.Record{Rev: e.Rev, Bytes: buf}, nil) {
				return
			}
		}
	}
}

// recordPasses is how many passes through a segment heads lets Records
// take before it reads in revision order by windows instead.
const recordPasses = 4

// verifySettled is verifySegment, run again where it found a break while
// a compaction's sweep let annotations go: it rehashed from the floor it
// read before, across revisions whose annotations are gone since.
func (s *state[V]) verifySettled(t *sealed[V], i int, old heldOld, budget int, kept []keptRef[V]) (int64, error) {
	for {
		gone := s.notes.gone.Load()
		n, err := s.verifySegment(t, i, old, budget, kept)
		if err == nil || s.notes.gone.Load() == gone {
			return n, err
		}
	}
}
