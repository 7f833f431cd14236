package revkv

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"time"

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
	keys, times, base := s.tree.Clone(), s.order.Times(), s.order.Base()
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
		err = w.TimesFrom(max(lo, base))
	}
	for r := max(lo, base); err == nil && r <= hi; r++ {
		err = w.AddTime(times.At(r - base))
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
