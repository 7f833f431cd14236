package wal

import "fmt"

// Instant is a time as Unix seconds and nanoseconds.
type Instant struct {
	Sec  int64
	Nsec int32
}

// State is the payload of a snapshot's KindState record: the store's
// revisions, the times it keeps, its floors and its last compaction.
type State struct {
	Last       int64     // the revision the snapshot is at
	LastTime   Instant   // its time
	First      Instant   // revision 1's time
	Base       int64     // the oldest revision whose time is known
	Times      []Instant // the times of revisions Held..Last
	CompactRev int64     // 0: never compacted
	Compacted  Instant   // the compaction's time
	TrimFloor  int64
	// Held is the oldest revision whose time Times holds: the times of
	// Base..Held-1 are in the store's segments. Written only when it is
	// above Base (a snapshot from before segments has no such field, and
	// decodes with Held = Base).
	Held int64
	// Keys is about how many key records follow: a hint for the reader's
	// allocations, never trusted beyond the file's size. Written only
	// when above 0, after Held (which is then written even if it equals
	// Base); a snapshot from before it decodes with 0.
	Keys int64
}

// AppendState appends the payload of a state record to dst. Times are
// stored as differences from the one before, mostly a byte or two each.
func AppendState(dst []byte, s *State) []byte {
	e := enc{dst}
	e.varint(s.Last)
	e.instant(s.LastTime)
	e.instant(s.First)
	e.varint(s.Base)
	e.uvarint(uint64(len(s.Times)))
	var prev Instant
	for _, t := range s.Times {
		e.varint(t.Sec - prev.Sec)
		e.varint(int64(t.Nsec) - int64(prev.Nsec))
		prev = t
	}
	e.varint(s.CompactRev)
	e.instant(s.Compacted)
	e.varint(s.TrimFloor)
	if s.Held > s.Base || s.Keys > 0 {
		e.varint(s.Held)
	}
	if s.Keys > 0 {
		e.varint(s.Keys)
	}
	return e.b
}

func (e *enc) instant(t Instant) {
	e.varint(t.Sec)
	e.varint(int64(t.Nsec))
}

func (d *dec) instant() Instant { return Instant{Sec: d.varint(), Nsec: d.int32()} }

// DecodeState decodes a KindState payload.
func DecodeState(p []byte) (*State, error) {
	d := dec{b: p}
	s := &State{Last: d.varint(), LastTime: d.instant(), First: d.instant(), Base: d.varint()}
	n := d.uvarint()
	if n > uint64(len(p)) {
		return nil, errShortPayload
	}
	s.Times = make([]Instant, n)
	var prev Instant
	for i := range s.Times {
		prev = Instant{Sec: prev.Sec + d.varint(), Nsec: int32(int64(prev.Nsec) + d.varint())}
		s.Times[i] = prev
	}
	s.CompactRev = d.varint()
	s.Compacted = d.instant()
	s.TrimFloor = d.varint()
	s.Held = s.Base
	if d.err == nil && len(d.b) > 0 {
		if s.Held = d.varint(); d.err == nil && (s.Held < s.Base || s.Held > s.Last) {
			return nil, fmt.Errorf("the held times start at %d, outside [%d, %d]", s.Held, s.Base, s.Last)
		}
	}
	if d.err == nil && len(d.b) > 0 {
		if s.Keys = d.varint(); d.err == nil && s.Keys < 1 {
			return nil, fmt.Errorf("the key count %d is not positive", s.Keys)
		}
	}
	return s, d.done()
}
