package chain

import (
	"maps"
	"slices"
)

// seqBlock is how many digests one full block of a Seq holds (64 KiB).
const seqBlock = 2048

// Seq is the digests a store keeps: D(r) of every revision from Base to
// Last, and of a few older ones (each retained entry below Base needs its
// own digest and the one before it, to be checked). It is not safe for
// concurrent use.
//
// Invariants: blocks hold D(base), D(base+1), ..., D(base+n-1) in order,
// from blocks[0][off]; every block but the last is full. old holds no
// revision at or above base.
type Seq struct {
	blocks [][]Digest
	off    int
	base   int64
	n      int64
	old    map[int64]Digest
}

// NewSeq returns a sequence holding only D(base) = d.
func NewSeq(base int64, d Digest) *Seq {
	s := &Seq{base: base, old: make(map[int64]Digest)}
	s.Push(d)
	return s
}

// Base returns the oldest revision of the sequence proper.
func (s *Seq) Base() int64 { return s.base }

// Last returns the newest revision held and its digest.
func (s *Seq) Last() (int64, Digest) {
	last := s.base + s.n - 1
	d, _ := s.At(last)
	return last, d
}

// Push appends the digest of revision Last()+1.
func (s *Seq) Push(d Digest) {
	last := len(s.blocks) - 1
	if last < 0 || len(s.blocks[last]) == seqBlock {
		size := seqBlock
		if last < 0 {
			size = 16 // a small store never pays for a whole block
		}
		s.blocks = append(s.blocks, make([]Digest, 0, size))
		last++
	}
	s.blocks[last] = append(s.blocks[last], d)
	s.n++
}

// At returns D(rev), if it is held.
func (s *Seq) At(rev int64) (Digest, bool) {
	if i := rev - s.base; i >= 0 && i < s.n {
		j := int64(s.off) + i
		return s.blocks[j/seqBlock][j%seqBlock], true
	}
	d, ok := s.old[rev]
	return d, ok
}

// AddOld holds D(rev), for a revision below Base (a snapshot's).
func (s *Seq) AddOld(rev int64, d Digest) {
	if rev < s.base {
		s.old[rev] = d
	}
}

// Forget drops the digests of the revisions below rev-1 (never the last
// one's), keeping D(q) of each q that kept(q) or kept(q+1) reports: a
// retained entry q is checked against D(q-1) and D(q). D(rev-1) stays, as
// the link before rev. O(revisions dropped).
func (s *Seq) Forget(rev int64, kept func(r int64) bool) {
	rev = min(rev-1, s.base+s.n-1)
	for q := s.base; q < rev; q++ {
		if kept(q) || kept(q+1) {
			d, _ := s.At(q)
			s.old[q] = d
		}
	}
	s.dropBelow(rev)
}

// dropBelow lets go of the sequence proper's digests below rev, a block
// at a time.
func (s *Seq) dropBelow(rev int64) {
	for drop := rev - s.base; drop > 0; {
		n := min(drop, int64(len(s.blocks[0])-s.off))
		if int64(s.off)+n == int64(len(s.blocks[0])) && len(s.blocks) > 1 {
			s.blocks[0] = nil
			s.blocks, s.off = s.blocks[1:], 0
		} else {
			s.off += int(n)
		}
		s.base += n
		s.n -= n
		drop -= n
	}
}

// ForgetAllBut drops the digests of the revisions below rev-1 (never the
// last one's), as Forget does, but for those of keep: O(len(keep) +
// blocks dropped), not O(revisions dropped).
func (s *Seq) ForgetAllBut(rev int64, keep []int64) {
	rev = min(rev-1, s.base+s.n-1)
	for _, q := range keep {
		if q >= s.base && q < rev {
			d, _ := s.At(q)
			s.old[q] = d
		}
	}
	s.dropBelow(rev)
}

// KeepOld drops the older digests that kept(r) no longer asks for.
func (s *Seq) KeepOld(kept func(r int64) bool) {
	maps.DeleteFunc(s.old, func(r int64, _ Digest) bool { return !kept(r) })
}

// OldDigests returns the older digests with their revisions, in
// revision order.
func (s *Seq) OldDigests() (revs []int64, ds []Digest) {
	revs = s.Old()
	ds = make([]Digest, len(revs))
	for i, r := range revs {
		ds[i] = s.old[r]
	}
	return revs, ds
}

// Old returns the revisions of the older digests, in order.
func (s *Seq) Old() []int64 { return slices.Sorted(maps.Keys(s.old)) }

// Frozen returns a copy of s that s's later calls never change, without
// copying the digests: Push writes past the copy's end, and Forget only
// lets go of blocks the copy still holds.
func (s *Seq) Frozen() *Seq {
	return &Seq{blocks: slices.Clone(s.blocks), off: s.off, base: s.base, n: s.n, old: maps.Clone(s.old)}
}

// Spans calls fn with runs of consecutive digests, at most max each: the
// sequence proper from Base to Last first, then the older ones.
func (s *Seq) Spans(max int, fn func(first int64, ds [][32]byte) error) error {
	buf := make([][32]byte, 0, min(int64(max), s.n))
	flush := func(first int64) error {
		if len(buf) == 0 {
			return nil
		}
		err := fn(first, buf)
		buf = buf[:0]
		return err
	}
	first := s.base
	for r := s.base; r < s.base+s.n; r++ {
		d, _ := s.At(r)
		buf = append(buf, d)
		if len(buf) == max {
			if err := flush(first); err != nil {
				return err
			}
			first = r + 1
		}
	}
	if err := flush(first); err != nil {
		return err
	}
	old := s.Old()
	for i, r := range old {
		if len(buf) > 0 && (r != old[i-1]+1 || len(buf) == max) {
			if err := flush(first); err != nil {
				return err
			}
		}
		if len(buf) == 0 {
			first = r
		}
		buf = append(buf, s.old[r])
	}
	return flush(first)
}
