// Package wal holds revkv's on-disk formats: the framing of a record, the
// log of revisions in segment files, and snapshot files. It knows nothing of
// the store: it moves typed, checksummed records to and from files, and
// encodes the few kinds of record the store writes.
//
// # Record framing
//
// Every record, in a log segment or a snapshot, is
//
//	length  uint32, little endian: the payload's length
//	crc     uint32, little endian: CRC-32C (Castagnoli) of kind and payload
//	kind    uint8
//	payload length bytes
//
// A file starts with a 16-byte header: an 8-byte magic ("revkvlog" or
// "revkvsnp"), the format version (uint32) and a check of it (uint32): 0
// for version 1, the version's bitwise complement for every later one. The
// check tells a newer format from damage: a header whose version is above
// Version and whose check matches it is a newer revkv's (ErrCorrupt, saying
// so: read it with that revkv); any other header that is not this
// version's, a flipped bit in the version included, is a damaged header,
// and a file whose magic is not ours in most of its bytes is not a revkv
// file at all.
//
// # Torn or damaged
//
// A crash can interrupt only the last write to the last log segment, so
// only there may records be torn: cut short, or followed by zeros or
// garbage, with no whole record (a frame whose length fits and whose
// checksum matches) anywhere after the first bad one. Replay stops before
// them, and OpenWriter cuts them. Anything else that does not read back as
// written is damage, ErrCorrupt naming the file and the offset: a bad
// record with a whole record after it (a flipped bit in a length field
// included, however far it sends the length), a bad record in any segment
// but the last, and any bad byte of a snapshot, which is written aside and
// renamed into place whole. Reading changes nothing on disk.
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// Version is the format version this package writes and reads.
const Version = 1

// ErrCorrupt is returned for a file that is damaged (anything but a torn
// tail of the last log segment: see Replay), of an unknown version, or not
// one of ours. The error names the file and the offset.
var ErrCorrupt = errors.New("corrupt file")

// Kind is a record's type. A log holds KindChained (KindBatch before the
// hash chain), KindCompact and KindTrim records (logKind, which tells a torn tail from damage, relies on it), a
// snapshot the others.
type Kind uint8

const (
	KindBatch   Kind = iota + 1 // one commit: entries at consecutive revisions
	KindCompact                 // a compaction: the revision and its time
	KindTrim                    // a key's log cut to start at a revision
	KindKey                     // snapshot: one key's retained entries
	KindState                   // snapshot: the store's revision, floors and compaction; first record
	KindEnd                     // snapshot: the last record, with the number of keys
	KindChained                 // one commit, with its annotations and the hash chain's digest after it
	KindDigests                 // snapshot: the digests of consecutive revisions
	KindNotes                   // snapshot: the annotations of one commit's revisions
)

// MaxRecord is the most bytes a record's payload may hold: a reader
// takes a longer length for damage.
const MaxRecord = maxRecord

const (
	headerSize  = 16
	frameSize   = 9 // length, crc, kind
	maxRecord   = 1 << 30
	magicLog    = "revkvlog"
	magicSnap   = "revkvsnp"
	versionSize = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// kindCRC[k] is the checksum of the kind byte k, where a record's checksum
// starts: crc32.Update has a fixed cost that showed for one byte.
var kindCRC = func() (t [256]uint32) {
	for k := range t {
		t[k] = crc32.Update(0, castagnoli, []byte{byte(k)})
	}
	return t
}()

// fileHeader returns the header of a file with the given magic.
func fileHeader(magic string) []byte {
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[8:], Version)
	binary.LittleEndian.PutUint32(h[12:], headerCheck(Version))
	return h
}

// newerFormat is checkHeader's error for a file of a newer format: not
// damage, and Corruption.Newer says so.
type newerFormat struct{ v uint32 }

func (e *newerFormat) Error() string {
	return fmt.Sprintf("format version %d, written by a newer revkv: this build reads version %d; open it with a revkv that reads version %d", e.v, Version, e.v)
}

// headerCorruption is the Corruption of a file whose header checkHeader
// refused with err.
func headerCorruption(name string, err error) *Corruption {
	var n *newerFormat
	return &Corruption{File: name, Offset: 0, Why: err.Error(), Newer: errors.As(err, &n)}
}

// headerCheck is the check a header of version v carries after it.
func headerCheck(v uint32) uint32 {
	if v == 1 {
		return 0
	}
	return ^v
}

// checkHeader reports whether h is a header of the given magic and of this
// version, with an error saying what is wrong: not a revkv file, a newer
// revkv's format, or a damaged header (see the package doc).
func checkHeader(h []byte, magic string) error {
	what := map[string]string{magicLog: "log", magicSnap: "snapshot"}[magic]
	if len(h) < headerSize {
		return fmt.Errorf("not a revkv %s file (%d bytes, shorter than a header)", what, len(h))
	}
	if m := string(h[:8]); m != magic {
		same := 0
		for i := range 8 {
			if m[i] == magic[i] {
				same++
			}
		}
		if same < 6 {
			return fmt.Errorf("not a revkv %s file", what)
		}
		return fmt.Errorf("damaged header: its magic number reads %q, not %q", m, magic)
	}
	v, check := binary.LittleEndian.Uint32(h[8:]), binary.LittleEndian.Uint32(h[12:])
	switch {
	case v == Version && check == headerCheck(v):
		return nil
	case v > Version && check == headerCheck(v):
		return &newerFormat{v}
	}
	return fmt.Errorf("damaged header: its format version reads %d with check %#x, which no revkv writes (this build reads version %d)", v, check, Version)
}

// appendFrame appends a record of kind with payload to dst.
func appendFrame(dst []byte, kind Kind, payload []byte) []byte {
	return appendFrameFunc(dst, kind, func(d []byte) []byte { return append(d, payload...) })
}

// appendFrameFunc appends a record of kind whose payload fill appends to
// its argument, without copying the payload.
func appendFrameFunc(dst []byte, kind Kind, fill func([]byte) []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, frameSize)...)
	dst = fill(dst)
	payload := dst[start+frameSize:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	crc := kindCRC[kind]
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Update(crc, castagnoli, payload))
	dst[start+8] = byte(kind)
	return dst
}

// frameStatus says what parseFrame found at an offset.
type frameStatus int

const (
	frameOK        frameStatus = iota
	frameShort                 // the data ends inside the record
	frameBadCRC                // the record is whole and its checksum does not match
	frameBadLength             // the length cannot be a record's
)

// parseFrame reads the record at the start of b.
func parseFrame(b []byte) (kind Kind, payload []byte, size int, st frameStatus) {
	if len(b) < frameSize {
		return 0, nil, 0, frameShort
	}
	n := binary.LittleEndian.Uint32(b[0:])
	if n > maxRecord {
		return 0, nil, 0, frameBadLength
	}
	size = frameSize + int(n)
	if len(b) < size {
		return 0, nil, size, frameShort
	}
	kind, payload = Kind(b[8]), b[frameSize:size]
	crc := kindCRC[b[8]]
	if crc32.Update(crc, castagnoli, payload) != binary.LittleEndian.Uint32(b[4:]) {
		return 0, nil, size, frameBadCRC
	}
	return kind, payload, size, frameOK
}

// ---- payloads ----

// Entry is one revision of one key as the log keeps it: the store's entry
// with its time as Unix seconds and nanoseconds and its location's name.
type Entry struct {
	Key     string
	Op      uint8
	Rev     int64
	Sec     int64
	Nsec    int32
	Zone    string // the time's location: "" is UTC
	Offset  int32  // the location's offset from UTC at that time, in seconds
	HasTTL  bool
	Expires int64 // Unix nanoseconds, if HasTTL
	Value   []byte
}

// enc appends the fields of a payload.
type enc struct{ b []byte }

func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) bytes(p []byte)   { e.uvarint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

func (e *enc) entry(x *Entry, key bool) {
	if key {
		e.str(x.Key)
	}
	flags := x.Op
	if x.HasTTL {
		flags |= 0x80
	}
	e.b = append(e.b, flags)
	e.varint(x.Rev)
	e.varint(x.Sec)
	e.varint(int64(x.Nsec))
	e.str(x.Zone)
	e.varint(int64(x.Offset))
	if x.HasTTL {
		e.varint(x.Expires)
	}
	e.bytes(x.Value)
}

// dec reads the fields of a payload; the first error sticks.
type dec struct {
	b    []byte
	err  error
	zone string // the last zone name decoded: most entries share one
}

var errShortPayload = errors.New("payload ends early")

func (d *dec) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShortPayload
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShortPayload
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) raw() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errShortPayload
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) byte1() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errShortPayload
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *dec) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.err = errors.New("value out of range")
	}
	return int32(v)
}

func (d *dec) entry(x *Entry, key bool) {
	if key {
		x.Key = string(d.raw())
	}
	flags := d.byte1()
	x.Op, x.HasTTL = flags&0x7f, flags&0x80 != 0
	x.Rev = d.varint()
	x.Sec = d.varint()
	x.Nsec = d.int32()
	if z := d.raw(); string(z) != d.zone {
		d.zone = string(z)
	}
	x.Zone = d.zone
	x.Offset = d.int32()
	if x.HasTTL {
		x.Expires = d.varint()
	}
	x.Value = d.raw()
	if d.err == nil && (x.Op < 1 || x.Op > 3) {
		d.err = fmt.Errorf("entry of unknown op %d", x.Op)
	}
}

func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d bytes after the payload", len(d.b))
	}
	return d.err
}

// Batch is the payload of a KindBatch record: the entries one commit wrote,
// at consecutive revisions. Values point into the record: copy what must
// outlive it.
type Batch []Entry

// AppendBatch appends the payload of a batch to dst.
func AppendBatch(dst []byte, b Batch) []byte {
	e := enc{dst}
	e.uvarint(uint64(len(b)))
	for i := range b {
		e.entry(&b[i], true)
	}
	return e.b
}

// DecodeBatch decodes a KindBatch payload.
func DecodeBatch(p []byte) (Batch, error) {
	var d BatchDecoder
	return d.Decode(nil, p)
}

// A BatchDecoder decodes KindBatch payloads one after another, reusing
// what it can: the slice of entries, and the zone names.
type BatchDecoder struct {
	zone string
}

// Decode decodes the batch p into dst's storage, which it may grow, and
// returns it.
func (bd *BatchDecoder) Decode(dst Batch, p []byte) (Batch, error) {
	d := dec{b: p, zone: bd.zone}
	defer func() { bd.zone = d.zone }()
	n := d.uvarint()
	if n > uint64(len(p)) { // every entry takes several bytes
		return nil, errShortPayload
	}
	b := slices.Grow(dst[:0], int(n))[:n]
	clear(b)
	for i := range b {
		d.entry(&b[i], true)
	}
	for i := 1; d.err == nil && i < len(b); i++ {
		if b[i].Rev != b[i-1].Rev+1 {
			d.err = fmt.Errorf("batch revisions %d, %d are not consecutive", b[i-1].Rev, b[i].Rev)
		}
	}
	return b, d.done()
}

// Compact is the payload of a KindCompact record.
type Compact struct {
	Rev       int64
	Sec, Nsec int64 // the compaction's time
}

// AppendCompact appends the payload of a compaction to dst.
func AppendCompact(dst []byte, c Compact) []byte {
	e := enc{dst}
	e.varint(c.Rev)
	e.varint(c.Sec)
	e.varint(c.Nsec)
	return e.b
}

// DecodeCompact decodes a KindCompact payload.
func DecodeCompact(p []byte) (Compact, error) {
	d := dec{b: p}
	c := Compact{Rev: d.varint(), Sec: d.varint(), Nsec: d.varint()}
	return c, d.done()
}

// Trim is the payload of a KindTrim record: key's log now starts at Lo (its
// entries below were dropped), or the key was removed (Lo 0). Count says a
// count trim (the history cap) raised the floor to Lo with it.
type Trim struct {
	Key     string
	Lo      int64
	Count   bool
	Dropped int64 // the newest revision dropped from the key's log
}

// AppendTrim appends the payload of a trim to dst.
func AppendTrim(dst []byte, t Trim) []byte {
	e := enc{dst}
	e.str(t.Key)
	e.varint(t.Lo)
	e.b = append(e.b, boolByte(t.Count))
	e.varint(t.Dropped)
	return e.b
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// DecodeTrim decodes a KindTrim payload.
func DecodeTrim(p []byte) (Trim, error) {
	d := dec{b: p}
	t := Trim{Key: string(d.raw()), Lo: d.varint(), Count: d.byte1() == 1, Dropped: d.varint()}
	return t, d.done()
}

// Key is the payload of a snapshot's KindKey record: one key's retained
// entries, oldest first; Trimmed says older ones were dropped, Sealed that
// older ones are in the store's segments. A snapshot holds its keys in
// increasing byte order, each once (the store checks it at Open: that is
// how it finds a key written twice).
//
// Its flags byte is 1 for Trimmed, 2 for Sealed; a sealed key's Lo
// follows it.
type Key struct {
	Key     string
	Trimmed bool
	Sealed  bool    // the key's history below its first entry is sealed
	Lo      int64   // a sealed, trimmed key's oldest retained revision
	Dropped int64   // the newest revision dropped from the key's log
	Entries []Entry // their Key fields are not stored
}

const (
	keyTrimmed = 1
	keySealed  = 2
)

// AppendKey appends the payload of a key record to dst.
func AppendKey(dst []byte, k *Key) []byte {
	e := enc{dst}
	e.str(k.Key)
	flags := boolByte(k.Trimmed)
	if k.Sealed {
		flags |= keySealed
	}
	e.b = append(e.b, flags)
	if k.Sealed {
		e.varint(k.Lo)
	}
	e.varint(k.Dropped)
	e.uvarint(uint64(len(k.Entries)))
	for i := range k.Entries {
		e.entry(&k.Entries[i], false)
	}
	return e.b
}

// KeyOf returns the key of a KindKey payload, pointing into p, without
// decoding the rest.
func KeyOf(p []byte) ([]byte, error) {
	d := dec{b: p}
	k := d.raw()
	return k, d.err
}

// DecodeKeyInto decodes a KindKey payload into k, whose Entries' storage
// it reuses.
func DecodeKeyInto(k *Key, p []byte) error {
	d := dec{b: p}
	*k = Key{Key: string(d.raw()), Entries: k.Entries[:0]}
	flags := d.byte1()
	if flags&^(keyTrimmed|keySealed) != 0 {
		return errors.New("unknown key flags")
	}
	k.Trimmed, k.Sealed = flags&keyTrimmed != 0, flags&keySealed != 0
	if k.Sealed {
		k.Lo = d.varint()
	}
	k.Dropped = d.varint()
	n := d.uvarint()
	if n > uint64(len(p)) {
		return errShortPayload
	}
	k.Entries = slices.Grow(k.Entries, int(n))[:n]
	clear(k.Entries)
	for i := range k.Entries {
		d.entry(&k.Entries[i], false)
		k.Entries[i].Key = k.Key
	}
	return d.done()
}
