package mvcc

import (
	"slices"
	"sort"
)

// timeBlock is how many times one full block of a timeline holds (64 KiB).
const timeBlock = 4096

// timeline is a sequence of revision times that grows at the back and is
// dropped from the front. It keeps them in blocks of timeBlock, so that a
// push never copies the times already held: one slice grown by append copies
// each time several times over as it grows, which showed in every write's
// cost on long histories, and at each growth holds the old array and the new.
//
// Invariants: the times held are blocks[0][off:], then blocks[1], ...,
// in order; every block but the last is full (len timeBlock); n counts
// them. Only the first block grows by append (a small store never pays for
// a whole block); later blocks are made full-sized.
type timeline struct {
	blocks [][]instant
	off    int   // index in blocks[0] of the oldest time held
	n      int64 // times held
}

func (tl *timeline) len() int64 { return tl.n }

// push appends i as the newest time. O(1), and never copies a time.
func (tl *timeline) push(i instant) {
	last := len(tl.blocks) - 1
	if last < 0 || len(tl.blocks[last]) == timeBlock {
		tl.blocks = append(tl.blocks, nil)
		last++
		if last > 0 {
			tl.blocks[last] = make([]instant, 0, timeBlock)
		}
	}
	tl.blocks[last] = append(tl.blocks[last], i)
	tl.n++
}

// at returns the k-th time held, 0 <= k < len().
func (tl *timeline) at(k int64) instant {
	j := int64(tl.off) + k
	return tl.blocks[j/timeBlock][j%timeBlock]
}

// frozen returns a timeline holding what tl holds now that tl's writer
// never changes: it copies the list of blocks, not the blocks. A push
// writes only past the length of tl's last block, or into a new block, and
// dropFront only forgets blocks, so the copy's times stay as they were.
func (tl *timeline) frozen() timeline {
	return timeline{blocks: slices.Clone(tl.blocks), off: tl.off, n: tl.n}
}

// search returns how many of the times held are at or before i. O(log n).
func (tl *timeline) search(i instant) int64 {
	return int64(sort.Search(int(tl.n), func(k int) bool { return tl.at(int64(k)).after(i) }))
}

// dropFront forgets the oldest d times, d < len(), freeing each block once
// none of its times is held.
func (tl *timeline) dropFront(d int64) {
	j := int64(tl.off) + d
	full := int(j / timeBlock)
	clear(tl.blocks[:full])
	tl.blocks = tl.blocks[full:]
	tl.off = int(j % timeBlock)
	tl.n -= d
}
