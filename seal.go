package revkv

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/segment"
	"github.com/revkv/revkv/vfs"
	"github.com/revkv/revkv/wal"
)

// Sealing writes a range of revisions' history into a segment (package
// segment): the one place a segment is made. A store that seals
// (WithMemory) does so in every checkpoint, before the snapshot, which
// then holds only what memory keeps; the sealed tier (sealed.go) answers
// the reads below each key's mark.

// sealRange writes the retained entries of revisions [lo, hi], every
// revision's time and the chain's digests at lo-1 and hi into a new
// segment in the store's directory, durably, and returns its manifest
// entry. lo >= 1 and hi <= the head. The time column starts at the order's
// base if that is above lo: the times below it were forgotten with the
// history a compaction or trim dropped.
func (s *state[V]) sealRange(lo, hi int64) (segment.Ref, error) {
	d := s.disk
	ref := segment.Ref{First: lo, Last: hi}
	s.lockQuiet()
	switch head, base := s.order.Head().Rev, s.order.Base(); {
	case lo < 1 || hi < lo || hi > head:
		s.unlockQuiet()
		return ref, fmt.Errorf("seal [%d, %d]: outside the revisions [1, %d]", lo, hi, head)
	case hi < base:
		s.unlockQuiet()
		return ref, fmt.Errorf("seal [%d, %d]: the times below %d are forgotten", lo, hi, base)
	}
	keys, times, held := s.tree.Clone(), s.order.Times(), s.order.Held()
	d.chainMu.Lock()
	prev, okPrev := d.chain.At(lo - 1)
	last, okLast := d.chain.At(hi)
	// Marks every markEvery revisions, and at the first digest the chain
	// holds in full: below it a compaction may have dropped entries, and
	// a digest above it must not have to be rehashed from across the gap.
	var marks []digestMark
	if b := d.chain.Base(); b >= lo && b <= hi && b%markEvery != 0 {
		dg, _ := d.chain.At(b)
		marks = append(marks, digestMark{b, dg})
	}
	for r := (lo + markEvery - 1) / markEvery * markEvery; r <= hi; r += markEvery {
		if dg, ok := d.chain.At(r); ok {
			marks = append(marks, digestMark{r, dg})
		}
	}
	slices.SortFunc(marks, func(a, b digestMark) int { return cmp.Compare(a.rev, b.rev) })
	d.chainMu.Unlock()
	s.unlockQuiet()
	if n := len(d.manifest.Segments); !okPrev && n > 0 && d.manifest.Segments[n-1].Last == lo-1 {
		prev, okPrev = d.manifest.Segments[n-1].Digest, true // the chain let it go in a compaction
	}
	if !okPrev && lo > 1 || !okLast {
		return ref, fmt.Errorf("seal [%d, %d]: the chain no longer holds its digests", lo, hi)
	}
	ref.Digest = last

	var zt zoneTable
	var entries []revlog.Entry[V]
	var val []byte
	var pc pace
	err := writeSegment(d.fs, d.dir, &ref, prev, func(w *segment.Writer) (meta []byte, err error) {
		keys.Ascend(func(kl *keyLog[V]) bool {
			pc.step() // a key with nothing in the range costs a lock and a search
			kl.mu.RLock()
			entries = kl.log.AppendRange(entries[:0], lo, hi, int(hi-lo+1))
			kl.mu.RUnlock()
			for i := range entries {
				pc.step()
				x := segmentEntry(kl.key, &entries[i], &s.zones, &zt)
				if x.Op == segment.Put {
					if val, err = d.codec.Encode(val[:0], entries[i].Value); err != nil {
						return false
					}
					x.Value = val
				}
				if err = w.Add(&x); err != nil {
					return false
				}
			}
			return true
		})
		if err == nil {
			err = w.TimesFrom(max(lo, held))
		}
		for r := max(lo, held); err == nil && r <= hi; r++ {
			err = w.AddTime(times.At(r - held))
		}
		return zt.encode(marks), err
	})
	if err != nil {
		return ref, fmt.Errorf("seal [%d, %d]: %w", lo, hi, err)
	}
	return ref, nil
}

// writeSegment writes the segment ref names into dir, durably, and sets
// its size: fill adds the entries and the times and returns the meta; the
// footer links ref's range to prev, the chain's digest before it, and
// ends at ref.Digest. It is written under a temporary name, synced, and
// renamed: a crash leaves the whole file or none by its name, and only a
// manifest that lists it makes it count. The one place a segment file is
// made: a seal's (sealRange) and an import's.
func writeSegment(fsys vfs.FS, dir string, ref *segment.Ref, prev chain.Digest, fill func(w *segment.Writer) ([]byte, error)) error {
	name := filepath.Join(dir, ref.Name())
	f, err := fsys.Create(name + ".tmp")
	if err != nil {
		return err
	}
	w := segment.NewWriter(f, ref.First, ref.Last, 0)
	meta, err := fill(w)
	if err == nil {
		ref.Size, err = w.Finish(prev, ref.Digest, meta)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(name+".tmp", name)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		fsys.Remove(name + ".tmp")
	}
	return err
}

// segmentEntry is e of key as a segment holds it, its time's location
// numbered in zt; the value is the caller's to encode.
func segmentEntry[V any](key string, e *revlog.Entry[V], zones *revlog.Zones, zt *zoneTable) segment.Entry {
	var x wal.Entry
	t := e.Time(zones)
	logEntry(&x, key, e, t)
	return zt.entry(key, &x)
}

// entry is the logged entry x of key as a segment holds it, with x's
// value; its time's location numbered in zt.
func (zt *zoneTable) entry(key string, x *wal.Entry) segment.Entry {
	return segment.Entry{Key: key, Rev: x.Rev, Sec: x.Sec, Nsec: x.Nsec, Zone: zt.number(x.Zone, x.Offset),
		Op: segment.Op(x.Op), HasTTL: x.HasTTL, Expires: x.Expires, Value: x.Value}
}

// locate returns a segment entry's time in its location, as Open does for
// a logged entry (timeOf).
func (s *state[V]) locate(x *segment.Entry, zones []zoneKey) (time.Time, error) {
	if int(x.Zone) >= len(zones) {
		return time.Time{}, fmt.Errorf("revision %d: zone %d of %d", x.Rev, x.Zone, len(zones))
	}
	z := zones[x.Zone]
	return s.timeOf(&wal.Entry{Rev: x.Rev, Sec: x.Sec, Nsec: x.Nsec, Zone: z.name, Offset: z.offset})
}

// openTier opens the segments of the directory's manifest, if it has one,
// and (unless read-only) removes the segment files a seal wrote but no
// manifest lists: a crash before the manifest was replaced left them, and
// they count for nothing.
func (d *disk[V]) openTier(readOnly bool) error {
	m, ok, err := segment.ReadManifest(d.fs, d.dir)
	if err != nil {
		return corruptSegment(segment.ManifestName, err)
	}
	if ok {
		t, err := openSealed[V](d.fs, d.dir, m, d.ixCache)
		if err != nil {
			return err
		}
		d.tier.Store(t)
		d.manifest = m
	}
	if readOnly {
		return nil
	}
	names, err := d.fs.List(d.dir)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, r := range m.Segments {
		listed[r.Name()] = true
	}
	for _, n := range names {
		if (strings.HasSuffix(n, ".seg") || strings.HasSuffix(n, ".seg.tmp")) && !listed[n] {
			if err := d.fs.Remove(filepath.Join(d.dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// tierWithin checks that the segments hold no revision above last, the
// latest the snapshot and the log recovered: a seal syncs the log up to
// its range before it writes the manifest, so a manifest beyond the
// history is damage (or an Import cut short), not a store at last.
func (d *disk[V]) tierWithin(last int64) error {
	if t := d.tier.Load(); t != nil && t.last() > last {
		return fmt.Errorf("%s lists segments up to revision %d, but the snapshot and the log end at %d: %w", segment.ManifestName, t.last(), last, ErrCorrupt)
	}
	return nil
}

// checkSealed checks a snapshot's sealed key against the tier: its sealed
// history must lie in the manifest's segments.
func (s *state[V]) checkSealed(k *wal.Key, last int64) error {
	t := s.disk.tier.Load()
	switch {
	case t == nil:
		return fmt.Errorf("key %q: its older history is sealed, but the directory has no manifest: %w", k.Key, ErrCorrupt)
	case len(k.Entries) > 0 && k.Entries[0].Rev-1 > t.last():
		return fmt.Errorf("key %q: its history is sealed below revision %d, but the segments end at %d: %w", k.Key, k.Entries[0].Rev, t.last(), ErrCorrupt)
	}
	return nil
}

// seal moves the history up to revision h, the head a checkpoint took,
// out of memory: it writes the revisions since the last seal into a
// segment, durably, replaces the manifest with one that lists it, opens
// it, and then drops from each key's log the entries older than its
// newest at or below h, which the tier now answers for. The caller holds
// ckptMu. A crash anywhere leaves the old manifest (the new segment file
// counts for nothing, and the next Open removes it) or the new one; the
// snapshot written after this holds each key's mark.
func (s *state[V]) seal(h int64) error {
	d := s.disk
	lo := int64(1)
	if n := len(d.manifest.Segments); n > 0 {
		lo = d.manifest.Segments[n-1].Last + 1
	}
	if h < lo {
		return nil
	}
	ref, err := s.sealRange(lo, h)
	if err != nil {
		return err
	}
	m := segment.Manifest{Gen: d.manifest.Gen + 1, Segments: append(slices.Clone(d.manifest.Segments), ref)}
	if err := segment.WriteManifest(d.fs, d.dir, &m); err != nil {
		return err
	}
	t, err := d.tier.Load().with(d.fs, d.dir, ref, d.ixCache)
	if err != nil {
		return err
	}
	d.manifest = m
	d.tier.Store(t)
	s.evict(h)
	// The segments answer for the times and digests up to h now: but for
	// the digests the kept entries at or below h need (and h's own, the
	// link before the next seal), they leave memory.
	s.lockQuiet()
	s.order.Shed(h + 1)
	if s.revs != nil {
		s.revs.forget(h) // the tier answers which key made them
	}
	s.unlockQuiet()
	s.dropUnneeded(h, func(c *chain.Seq, need map[int64]bool) {
		c.ForgetAllBut(h+1, slices.Collect(maps.Keys(need)))
	})
	return nil
}

// evictBatch is how many keys evict cuts per hold of the write lock: a
// writer that arrives meanwhile waits for one batch (bench/README.md,
// "The log through a shared mapping", measures 256, 64 and 16).
const evictBatch = 64

// evict drops from every key's log the entries older than its newest at
// or below h, evictBatch keys per hold of the write lock, so that
// writers wait for no more than that.
func (s *state[V]) evict(h int64) {
	s.lockQuiet()
	keys := s.tree.Clone()
	s.unlockQuiet()
	var batch []*keyLog[V]
	flush := func() {
		s.lockQuiet()
		for _, kl := range batch {
			kl.mu.Lock()
			kl.log.Seal(h)
			kl.mu.Unlock()
		}
		s.unlockQuiet()
		batch = batch[:0]
	}
	keys.Ascend(func(kl *keyLog[V]) bool {
		if batch = append(batch, kl); len(batch) == evictBatch {
			flush()
		}
		return true
	})
	flush()
}

// hideSealed hides kl's sealed entries below the one visible at cut, and
// logs the cut as a trim for Open to replay.
func (d *disk[V]) hideSealed(s *state[V], kl *keyLog[V], cut int64) int {
	return d.hide(s, kl, cut, true)
}

// hide reads from the tier the entry of kl visible at cut and the one
// before it, and hides what lies below the first; with the entry visible
// at cut in memory (cut at or above the sealed mark), every sealed entry.
// Where the tier cannot be read, it hides every sealed entry below cut:
// the read that needed the one visible at cut answers ErrCompacted rather
// than a guess.
func (d *disk[V]) hide(s *state[V], kl *keyLog[V], cut int64, log bool) int {
	kl.mu.RLock()
	sb, was := kl.log.SealedBelow(), kl.log.SealedFrom()
	kl.mu.RUnlock()
	lo, dropped := min(cut, sb), int64(0)
	if t := d.tier.Load(); t != nil {
		v, ok, err := s.sealedAt(t, kl.key, min(cut, sb-1))
		switch {
		case err != nil:
		case !ok:
			return 0 // every sealed entry is above cut: nothing to hide
		case cut >= sb:
			dropped = int64(v.Rev) // the newest sealed entry
		default:
			lo = int64(v.Rev)
			if p, ok, err := s.sealedAt(t, kl.key, lo-1); err == nil && ok {
				dropped = int64(p.Rev)
			}
		}
	}
	if lo <= was {
		return 0 // hidden already
	}
	// Trim returns how many it dropped: it reads them to count them.
	// Compact returns no count, and the trimmer asks only whether a key
	// was trimmed: 1 says it was, without reading any.
	n := 1
	if s.countingHidden > 0 {
		n = 0
		for _, err := range s.sealedRange(kl.key, was, lo-1) {
			if err != nil {
				break
			}
			n++
		}
	}
	kl.mu.Lock()
	kl.log.HideSealed(lo, dropped)
	kl.mu.Unlock()
	if log {
		d.rec = wal.AppendTrim(d.rec[:0], wal.Trim{Key: kl.key, Lo: lo, Dropped: kl.log.Dropped()})
		d.writeNow(wal.KindTrim, d.rec)
	}
	return n
}
