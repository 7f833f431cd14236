package revkv

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/segment"
	"github.com/revkv/revkv/wal"
)

// Sealing writes a range of revisions' history into a segment (package
// segment): the one place a segment is made. The store does not seal by
// itself yet: checkpoints still write every retained entry into their
// snapshot, and reads answer from memory. sealRange and the sealed tier
// (sealed.go) are the two halves that a checkpoint and the reads will
// call, built and tested against the store's own answers first.

// sealRange writes the retained entries of revisions [lo, hi], every
// revision's time and the chain's digests at lo-1 and hi into a new
// segment in the store's directory, durably, and returns its manifest
// entry. lo >= 1 and hi <= the head. The time column starts at the order's
// base if that is above lo: the times below it were forgotten with the
// history a compaction or trim dropped.
func (s *state[V]) sealRange(lo, hi int64) (segment.Ref, error) {
	d := s.disk
	ref := segment.Ref{First: lo, Last: hi}
	s.mu.Lock()
	switch {
	case lo < 1 || hi < lo || hi > s.order.Head().Rev:
		s.mu.Unlock()
		return ref, fmt.Errorf("seal [%d, %d]: outside the revisions [1, %d]", lo, hi, s.order.Head().Rev)
	case hi < s.order.Base():
		s.mu.Unlock()
		return ref, fmt.Errorf("seal [%d, %d]: the times below %d are forgotten", lo, hi, s.order.Base())
	}
	keys, times, held := s.tree.Clone(), s.order.Times(), s.order.Held()
	d.chainMu.Lock()
	prev, okPrev := d.chain.At(lo - 1)
	last, okLast := d.chain.At(hi)
	d.chainMu.Unlock()
	s.mu.Unlock()
	if !okPrev && lo > 1 || !okLast {
		return ref, fmt.Errorf("seal [%d, %d]: the chain no longer holds its digests", lo, hi)
	}
	ref.Digest = last

	name := filepath.Join(d.dir, ref.Name())
	f, err := d.fs.Create(name + ".tmp")
	if err != nil {
		return ref, err
	}
	w := segment.NewWriter(f, lo, hi, 0)
	var zt zoneTable
	var entries []revlog.Entry[V]
	var val []byte
	keys.Ascend(func(kl *keyLog[V]) bool {
		kl.mu.RLock()
		entries = kl.log.AppendRange(entries[:0], lo, hi, int(hi-lo+1))
		kl.mu.RUnlock()
		for i := range entries {
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
	if err == nil {
		ref.Size, err = w.Finish(prev, last, zt.encode())
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.fs.Rename(name+".tmp", name)
	}
	if err == nil {
		err = d.fs.SyncDir(d.dir)
	}
	if err != nil {
		d.fs.Remove(name + ".tmp")
		return ref, fmt.Errorf("seal [%d, %d]: %w", lo, hi, err)
	}
	return ref, nil
}

// segmentEntry is e of key as a segment holds it, its time's location
// numbered in zt; the value is the caller's to encode.
func segmentEntry[V any](key string, e *revlog.Entry[V], zones *revlog.Zones, zt *zoneTable) segment.Entry {
	var x wal.Entry
	t := e.Time(zones)
	logEntry(&x, key, e, t)
	return segment.Entry{Key: key, Rev: x.Rev, Sec: x.Sec, Nsec: x.Nsec, Zone: zt.number(x.Zone, x.Offset),
		Op: segment.Op(x.Op), HasTTL: x.HasTTL, Expires: x.Expires}
}

// zoneTable numbers the (location name, offset) pairs of a segment's
// entries' times, as the log writes them (logEntry): its encoding is the
// segment's meta.
type zoneTable struct {
	ids   map[zoneKey]uint32
	zones []zoneKey
}

type zoneKey struct {
	name   string
	offset int32
}

func (zt *zoneTable) number(name string, offset int32) uint32 {
	k := zoneKey{name, offset}
	if id, ok := zt.ids[k]; ok {
		return id
	}
	if zt.ids == nil {
		zt.ids = make(map[zoneKey]uint32)
	}
	zt.ids[k] = uint32(len(zt.zones))
	zt.zones = append(zt.zones, k)
	return uint32(len(zt.zones) - 1)
}

// encode returns the table: uvarint count, then per pair uvarint name
// length, name, varint offset.
func (zt *zoneTable) encode() []byte {
	b := binary.AppendUvarint(nil, uint64(len(zt.zones)))
	for _, z := range zt.zones {
		b = binary.AppendUvarint(b, uint64(len(z.name)))
		b = append(b, z.name...)
		b = binary.AppendVarint(b, int64(z.offset))
	}
	return b
}

// decodeZones decodes a zone table into the (name, offset) pairs it numbers.
func decodeZones(b []byte) ([]zoneKey, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("a zone table without its count")
	}
	b = b[k:]
	zs := make([]zoneKey, 0, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, fmt.Errorf("a zone name runs past the table")
		}
		name := string(b[k : k+int(l)])
		b = b[k+int(l):]
		off, k := binary.Varint(b)
		if k <= 0 || off < -24*3600 || off > 24*3600 {
			return nil, fmt.Errorf("zone %q has no offset, or one of more than a day", name)
		}
		b = b[k:]
		zs = append(zs, zoneKey{name, int32(off)})
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("bytes after the zone table")
	}
	return zs, nil
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
		t, err := openSealed[V](d.fs, d.dir, m)
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
	t, err := d.tier.Load().with(d.fs, d.dir, ref)
	if err != nil {
		return err
	}
	d.manifest = m
	d.tier.Store(t)
	s.evict(h)
	s.mu.Lock()
	s.order.Shed(h + 1) // the segments answer for their times now
	s.mu.Unlock()
	return nil
}

// evict drops from every key's log the entries older than its newest at
// or below h, a few hundred keys per hold of the write lock, so that
// writers wait for no more than that.
func (s *state[V]) evict(h int64) {
	s.mu.Lock()
	keys := s.tree.Clone()
	s.mu.Unlock()
	var batch []*keyLog[V]
	flush := func() {
		s.mu.Lock()
		for _, kl := range batch {
			kl.mu.Lock()
			kl.log.Seal(h)
			kl.mu.Unlock()
		}
		s.mu.Unlock()
		batch = batch[:0]
	}
	keys.Ascend(func(kl *keyLog[V]) bool {
		if batch = append(batch, kl); len(batch) == 256 {
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
	n := 0
	for _, err := range s.sealedRange(kl.key, was, lo-1) {
		if err != nil {
			break
		}
		n++
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

// VerifySealed re-hashes every sealed entry whose digests the store still
// holds: each one's link from the digest before it must give the digest at
// it, the ones the snapshot and the log gave Open (which checks the
// segments' footers, not their entries, so as not to read sealed history).
// It returns how many entries it checked; damage is ErrCorrupt naming the
// segment and the revision. progress, if not nil, is called after each
// segment with the last revision it covers. A store that never sealed,
// or made by New, has nothing to check.
func (s *Store[V]) VerifySealed(progress func(Revision)) (int64, error) {
	if s.disk == nil {
		return 0, nil
	}
	t := s.disk.tier.Load()
	if t == nil {
		return 0, nil
	}
	var (
		n    int64
		h    chain.Hasher
		link chain.Rev
		x    wal.Entry
	)
	for i, seg := range t.segs {
		for e, err := range seg.All() {
			if err != nil {
				return n, &OpError{Op: "verify", Key: t.refs[i].Name(), Err: corruptSegment(t.refs[i].Name(), err)}
			}
			s.disk.chainMu.Lock()
			prev, ok1 := s.disk.chain.At(e.Rev - 1)
			want, ok2 := s.disk.chain.At(e.Rev)
			s.disk.chainMu.Unlock()
			if !ok1 || !ok2 {
				continue // below what the chain keeps: compacted away
			}
			z := t.zones[i][min(int(e.Zone), len(t.zones[i])-1)]
			x = wal.Entry{Key: e.Key, Op: uint8(e.Op), Rev: e.Rev, Sec: e.Sec, Nsec: e.Nsec, Zone: z.name, Offset: z.offset,
				HasTTL: e.HasTTL, Expires: e.Expires, Value: e.Value}
			s.notes.mu.RLock()
			notes := s.notes.notesOf(e.Rev)
			s.notes.mu.RUnlock()
			linkOf(&link, &x, notes)
			if got := h.Next(prev, &link); got != want {
				err := detail(ErrCorrupt, "", fmt.Sprintf("%s: revision %d: the hash chain breaks: the store holds %x, the entry gives %x", t.refs[i].Name(), e.Rev, want[:8], got[:8]))
				return n, &OpError{Op: "verify", Key: t.refs[i].Name(), Err: err}
			}
			n++
		}
		if progress != nil {
			progress(Revision(t.refs[i].Last))
		}
	}
	return n, nil
}
