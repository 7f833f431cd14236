package revkv

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"path/filepath"
	"slices"

	"github.com/revkv/revkv/segment"
)

// Merging rewrites a run of adjacent segments as one. Every seal adds a
// segment, and a store that is opened and closed often adds a small one
// each time; a read of a key not written for a long time looks back
// through the segments one block read at a time, so their number must
// stay small. And a compaction only hides sealed entries: the space they
// take comes back when a merge leaves them out.
//
// A merge writes the new segment (writeSegment: a temporary name, a sync,
// a rename), syncs the log, replaces the manifest with one that lists the
// new segment in place of the run (the commit point), swaps the tier, and
// removes the run's files. A crash before the manifest leaves the old
// one, and the next Open removes the new file, which no manifest lists;
// after it, Open removes the old files. Readers that loaded the old tier
// read on from its files, which stay open until the last of them lets go
// of it (the files' own finalizers close them).
//
// What a merge leaves out: an entry below below (mergeBelow: the floor
// of the last compaction whose sweep is done and which a snapshot holds,
// and of the times the store keeps) that its key's log no longer counts
// on (countedFrom). Those are the entries a compaction hid: no read,
// View or digest reaches them again. The log is synced before the
// manifest is replaced, so that the hides that let them go are durable
// before they are.

const (
	// mergeFanIn is how many segments of one size class make a merge.
	mergeFanIn = 4
	// mergeUnit sets the size classes: class 0 holds sizes up to
	// 2*mergeUnit, class c those up to 2*mergeUnit*4^c.
	mergeUnit = 64 << 10
	// mergeMaxBytes and mergeMaxRevs bound a size-class merge: the
	// segment it writes (the sum of the run's sizes), and the revisions
	// it holds times for (the writer keeps four bytes a revision while
	// it writes).
	mergeMaxBytes = 64 << 20
	mergeMaxRevs  = 1 << 22
	// mergeMaxRun bounds the segments one merge reads.
	mergeMaxRun = 16
)

// sizeClass is a segment size's class for merging: runs of mergeFanIn
// segments of one class merge into one of a higher class.
func sizeClass(size int64) int {
	return bits.Len64(uint64(max(size, 1)-1)/mergeUnit) / 2
}

// pickMerge chooses the run of segments [i, j] to merge next, if any.
// refs are the manifest's segments and foot their footers; below is the
// revision under which a merge may drop what compactions hid.
//
// First the segments wholly below below, from the oldest, with the one
// below falls in if at least half of its revisions are below below: two or more
// that follow one another, or one alone that holds more entries than
// keys, with the segment after it (a merge needs two: the new segment
// takes the name of its range). Below below such a merge keeps at most
// a key's newest entry, whatever the run's size. Otherwise the newest run
// of mergeFanIn segments of one size class that follow one another,
// within mergeMaxBytes and mergeMaxRevs.
func pickMerge(refs []segment.Ref, foot []segment.Footer, below int64) (i, j int, ok bool) {
	touch := func(k int) bool { return refs[k-1].Last+1 == refs[k].First }
	n := 0
	for n < len(refs) && refs[n].Last < below && n < mergeMaxRun {
		if n > 0 && !touch(n) {
			break
		}
		n++
	}
	// The segment the floor falls in, if mostly below it: a compaction
	// hid most of what it holds below the floor.
	straddles := n < len(refs) && n < mergeMaxRun && (n == 0 || touch(n)) && refs[n].First < below &&
		below-refs[n].First >= (refs[n].Last-refs[n].First+1)/2 && refs[n].Size <= mergeMaxBytes
	switch {
	case n >= 1 && straddles:
		return 0, n, true
	case n >= 2:
		return 0, n - 1, true
	case n == 1 && foot[0].Entries > foot[0].Keys && len(refs) > 1 && touch(1) && refs[1].Size <= mergeMaxBytes:
		return 0, 1, true
	}
	for j := len(refs) - 1; j >= mergeFanIn-1; j-- {
		i := j - mergeFanIn + 1
		c, size := sizeClass(refs[j].Size), int64(0)
		good := true
		for k := i; k <= j && good; k++ {
			size += refs[k].Size
			good = sizeClass(refs[k].Size) == c && (k == i || touch(k))
		}
		if good && size <= mergeMaxBytes && refs[j].Last-mergedTimesFrom(refs[i:j+1], foot[i:j+1], below)+1 <= mergeMaxRevs {
			return i, j, true
		}
	}
	return 0, 0, false
}

// mergedTimesFrom is the first revision whose time the merge of refs
// keeps: none below below (the store no longer knows them either), nor
// below a gap in the run's times.
func mergedTimesFrom(refs []segment.Ref, foot []segment.Footer, below int64) int64 {
	from := foot[0].TimesFrom
	for k := 1; k < len(refs); k++ {
		if foot[k].TimesFrom > refs[k].First {
			from = foot[k].TimesFrom
		}
	}
	return max(from, min(below, refs[len(refs)-1].Last))
}

// mergeBelow is the revision under which a merge may drop what a
// compaction hid: the floor of the last compaction swept (whose hides
// are all made, and whose sweep no longer rehashes across the entries
// below it), of the times the store keeps, and snapFloor, the floor of
// the last snapshot. The digests of the entries kept below a floor are
// rehashed from the segments by its compaction's sweep, and held in
// memory from then on; the snapshot written after that sweep makes them
// durable. Were the merge to drop what lies under a floor no snapshot
// holds yet, an Open after a crash would replay that compaction and find
// nothing to rehash them from.
func (s *state[V]) mergeBelow(snapFloor int64) int64 {
	d := s.disk
	d.chainMu.Lock()
	swept := d.sweptFloor
	d.chainMu.Unlock()
	s.lockQuiet()
	defer s.unlockQuiet()
	if s.sweepsDue > 0 {
		return 0 // a compaction's walk is under way: its sweep may rehash below its floor
	}
	return min(swept, s.order.Base(), snapFloor)
}

// mergeSome merges one run of segments, if pickMerge finds one; the
// caller holds ckptMu, and has written a snapshot at floor snapFloor.
func (s *state[V]) mergeSome(snapFloor int64) error {
	t := s.disk.tier.Load()
	if t == nil || len(t.refs) < 2 {
		return nil
	}
	below := s.mergeBelow(snapFloor)
	foot := make([]segment.Footer, len(t.segs))
	for k, sr := range t.segs {
		foot[k] = sr.Footer()
	}
	i, j, ok := pickMerge(t.refs, foot, below)
	if !ok {
		return nil
	}
	return s.merge(t, i, j, below)
}

// merge rewrites the segments [i, j] of the tier t as one, leaving out
// what compactions hid below below; the caller holds ckptMu.
func (s *state[V]) merge(t *sealed[V], i, j int, below int64) error {
	d := s.disk
	run := t.refs[i : j+1]
	ref := segment.Ref{First: run[0].First, Last: run[len(run)-1].Last, Digest: run[len(run)-1].Digest}
	foot := make([]segment.Footer, len(run))
	metas := make([]*segMeta, len(run))
	var marks []digestMark
	for k := range run {
		foot[k] = t.segs[i+k].Footer()
		m, err := t.meta(i + k)
		if err != nil {
			return fmt.Errorf("merge [%d, %d]: %w", ref.First, ref.Last, err)
		}
		metas[k], marks = m, append(marks, m.marks...)
	}
	timesFrom := mergedTimesFrom(run, foot, below)
	var zt zoneTable
	err := writeSegment(d.fs, d.dir, &ref, foot[0].Prev, func(w *segment.Writer) ([]byte, error) {
		if err := w.TimesFrom(timesFrom); err != nil {
			return nil, err
		}
		if err := s.mergeEntries(t, i, j, below, metas, &zt, w.Add); err != nil {
			return nil, err
		}
		for k := i; k <= j; k++ {
			for tm, err := range t.segs[k].Times(timesFrom) {
				if err == nil {
					err = w.AddTime(tm[0], int32(tm[1]))
				}
				if err != nil {
					return nil, corruptSegment(t.refs[k].Name(), err)
				}
			}
		}
		return zt.encode(marks), nil
	})
	if err != nil {
		return fmt.Errorf("merge [%d, %d]: %w", ref.First, ref.Last, err)
	}
	// The compaction and the hides that let go of what the new segment
	// leaves out must be durable before the manifest makes it count.
	if err := d.w.Sync(); err != nil {
		return d.fail(err)
	}
	m := segment.Manifest{Gen: d.manifest.Gen + 1, Segments: slices.Concat(t.refs[:i], []segment.Ref{ref}, t.refs[j+1:])}
	if err := segment.WriteManifest(d.fs, d.dir, &m); err != nil {
		return fmt.Errorf("merge [%d, %d]: %w", ref.First, ref.Last, err)
	}
	nt, err := t.replacing(d.fs, d.dir, i, j, ref)
	if err != nil {
		return err
	}
	d.manifest = m
	d.tier.Store(nt)
	// The cache keeps no index of the replaced segments from now on; a
	// question still on the tier before reads one for itself.
	for _, r := range t.segs[i : j+1] {
		d.ixCache.Forget(r)
	}
	// The old files count for nothing now. One left by a failed removal
	// is removed by the next Open, as any file no manifest lists.
	for _, r := range run {
		d.fs.Remove(filepath.Join(d.dir, r.Name()))
	}
	return nil
}

// mergeEntries adds the entries of the tier's segments [i, j] to a
// segment in (key, revision) order, through add, each zone renumbered in
// zt, leaving out those a compaction hid below below. metas are the
// segments' metas.
func (s *state[V]) mergeEntries(t *sealed[V], i, j int, below int64, metas []*segMeta, zt *zoneTable, add func(*segment.Entry) error) error {
	type source struct {
		next func() (segment.Entry, error, bool)
		e    segment.Entry
		ok   bool
	}
	srcs := make([]source, j-i+1)
	advance := func(k int) error {
		src := &srcs[k]
		var err error
		src.e, err, src.ok = src.next()
		if err != nil {
			src.ok = false
			return corruptSegment(t.refs[i+k].Name(), err)
		}
		return nil
	}
	for k := range srcs {
		var stop func()
		srcs[k].next, stop = iter.Pull2(t.segs[i+k].All())
		defer stop()
		if err := advance(k); err != nil {
			return err
		}
	}
	key, from, started := "", int64(0), false
	var pc pace
	for {
		pc.step()
		// The segments hold disjoint revision ranges, oldest first: of
		// two heads with one key, the earlier segment's is the older.
		k := -1
		for c := range srcs {
			if srcs[c].ok && (k < 0 || srcs[c].e.Key < srcs[k].e.Key) {
				k = c
			}
		}
		if k < 0 {
			return nil
		}
		e := &srcs[k].e
		if !started || e.Key != key {
			key, from, started = e.Key, s.countedFrom(e.Key), true
		}
		if e.Rev >= below || e.Rev >= from {
			zones := metas[k].zones
			if int(e.Zone) >= len(zones) {
				return corruptSegment(t.refs[i+k].Name(), fmt.Errorf("%w: revision %d: zone %d of %d", segment.ErrCorrupt, e.Rev, e.Zone, len(zones)))
			}
			z := zones[e.Zone]
			e.Zone = zt.number(z.name, z.offset)
			if err := add(e); err != nil {
				return err
			}
		}
		if err := advance(k); err != nil {
			return err
		}
	}
}

// countedFrom returns the revision from which key's log counts on its
// sealed entries: SealedFrom for a sealed log. A log not marked sealed
// holds its whole history in memory, but the segments may hold copies of
// its entries (a seal whose revision is below its second entry marks
// nothing), and the seal that marks it counts on the copies from its
// oldest entry on. MaxInt64 if the key has no log (it was removed) or an
// empty one.
func (s *state[V]) countedFrom(key string) int64 {
	kl := s.lookup(key)
	if kl == nil {
		return math.MaxInt64
	}
	kl.mu.RLock()
	defer kl.mu.RUnlock()
	if f := kl.log.SealedFrom(); f > 0 {
		return f
	}
	if es := kl.log.Entries(); len(es) > 0 {
		return es[0].Rev
	}
	return math.MaxInt64
}
