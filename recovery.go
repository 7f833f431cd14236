package revkv

import (
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/revkv/revkv/wal"
)

// Recovery is what Open found at the end of a store's log that was not
// whole records, and what it did with those bytes. Open never passes over
// bytes in silence: a store that had none reports none (Store.Recovery's
// ok is false), and one that had some says where, how many, and which
// revisions they could have held.
//
// Two cases leave such bytes behind. A torn tail: a crash in the middle of
// a write, or damage to the last record that cannot be told from one
// (contract §7.6); Open cuts it (a store opened WithReadOnly leaves it in
// place and reports it all the same). And damage WithRepair cut: the bytes
// from the damaged record on, and every later segment, moved to files
// named after their segment with ".damaged" appended.
type Recovery struct {
	// File is the log segment the bytes are in; Offset is where they start
	// (the end of the last whole record); Bytes is how many there are: to
	// the end of the file for a torn tail (zeros a mapped log had allocated
	// past them left out), and with the later segments for a repair.
	File   string
	Offset int64
	Bytes  int64
	// Rev is the first revision the bytes could have held: the one after
	// the last whole record, Rev()+1 as Open left the store. How many they
	// held is not known (a record's size depends on its keys and values);
	// every revision from Rev on that a writer was told was written is in
	// them.
	Rev Revision
	// Reads, when not 0, is the last revision the first record in the
	// bytes reads as, its frame whole but its checksum wrong (a flipped
	// bit, say): its bytes say it held revisions Rev to Reads. They are
	// damaged bytes, so this is what they read as, not what was written.
	Reads Revision
	// Damaged is false for a torn tail, true for damage WithRepair cut;
	// Why then says what was wrong with the record at Offset.
	Damaged bool
	Why     string
	// Cut is true when Open removed the bytes from the log (false: a store
	// opened WithReadOnly left them there, and reads only what is before
	// them).
	Cut bool
	// Moved lists the files WithRepair wrote: the cut bytes of File, and
	// each later segment, renamed.
	Moved []string
}

// String says, as one sentence, what Open found and did.
func (r Recovery) String() string {
	var b strings.Builder
	what := "not whole records (a torn write, or damage to the last record)"
	if r.Damaged {
		what = "damaged (" + r.Why + ")"
	}
	fmt.Fprintf(&b, "%s: %d bytes from offset %d are %s; they could have held revision %d and later", r.File, r.Bytes, r.Offset, what, r.Rev)
	if r.Reads != 0 {
		fmt.Fprintf(&b, " (the first record there, whole but failing its checksum, reads as revisions %d to %d)", r.Rev, r.Reads)
	}
	switch {
	case len(r.Moved) > 0:
		fmt.Fprintf(&b, "; cut from the log and moved to %s", strings.Join(r.Moved, ", "))
	case r.Cut:
		b.WriteString("; cut from the log")
	default:
		b.WriteString("; left in place (read-only)")
	}
	return b.String()
}

// Recovery returns what Open found in the log that was not whole records,
// and what it did with it (see Recovery); ok is false when the log held
// only whole records, and for a store made by New. A server logs it; a
// tool that checks a directory reports it.
func (s *Store[V]) Recovery() (r Recovery, ok bool) {
	if s.disk == nil || s.disk.recovery == nil {
		return Recovery{}, false
	}
	r = *s.disk.recovery
	r.Moved = slices.Clone(r.Moved)
	return r, true
}

// tornTail records, for Store.Recovery, the torn tail Replay found; cut
// says whether OpenWriter cut it.
func (d *disk[V]) tornTail(tail wal.Tail, next int64, cut bool) {
	if !tail.Torn || d.recovery != nil {
		return
	}
	// The torn bytes end at tail.End: room a mapped log had allocated
	// past them is not theirs.
	name := filepath.Join(d.dir, wal.SegmentName(tail.Segment))
	d.recovery = &Recovery{File: name, Offset: tail.Size, Bytes: tail.End - tail.Size, Rev: Revision(next), Cut: cut}
	d.recovery.Reads = d.readsAs(name, tail.Size, next)
}

// readsAs returns the last revision of the record at offset off of file
// name, read with its checksum ignored, when its frame is whole (its
// length fits in the file) and its entries decode as consecutive
// revisions from next on; else 0. It is how a damaged last record says
// what it held, for Recovery.Reads: the bytes are damaged, so only a
// reading that fits every check of the record's shape is reported.
func (d *disk[V]) readsAs(name string, off, next int64) Revision {
	f, err := d.fs.OpenRead(name)
	if err != nil {
		return 0
	}
	defer f.Close()
	if _, err := io.CopyN(io.Discard, f, off); err != nil {
		return 0
	}
	rest, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil || len(rest) < 9 {
		return 0
	}
	n := int64(binary.LittleEndian.Uint32(rest))
	kind := wal.Kind(rest[8])
	if 9+n > int64(len(rest)) || kind != wal.KindChained && kind != wal.KindBatch {
		return 0
	}
	b, err := wal.DecodeEntries(kind, rest[9:9+n])
	if err != nil || len(b) == 0 {
		return 0
	}
	for i, e := range b {
		if e.Rev != next+int64(i) {
			return 0
		}
	}
	return Revision(b[len(b)-1].Rev)
}

// damagedFiles returns the files of dir a repair wrote, with their sizes.
func (d *disk[V]) damagedFiles() map[string]int64 {
	names, _ := d.fs.List(d.dir)
	out := map[string]int64{}
	for _, n := range names {
		if strings.Contains(n, ".damaged") {
			p := filepath.Join(d.dir, n)
			out[p], _ = d.fs.Size(p)
		}
	}
	return out
}

// repaired records, for Store.Recovery, what CutLog moved: the files in
// after that were not in before.
func (d *disk[V]) repaired(c *wal.Corruption, next int64, before map[string]int64) {
	r := &Recovery{File: c.File, Offset: c.Offset, Rev: Revision(next), Damaged: true, Why: c.Why, Cut: true}
	for name, size := range d.damagedFiles() {
		if _, ok := before[name]; !ok {
			r.Moved = append(r.Moved, name)
			r.Bytes += size
		}
	}
	slices.Sort(r.Moved)
	d.recovery = r
}
