package revlog

import (
	"sync/atomic"
	"time"
)

// Zone is the number of a location in a Zones; 0 is UTC.
type Zone uint16

// maxZones is how many locations other than UTC a Zones numbers.
const maxZones = 1<<16 - 1

// Zones numbers the locations of a store's times, so that an entry keeps its
// location in two bytes instead of an 8-byte pointer. A clock gives times in
// one location or a few (time.Now: Local), so the table stays tiny. It
// numbers the first 65,535 locations other than UTC it is given; a time in a
// location after those is kept as the same instant in UTC. Locations are told
// apart by pointer, as time.Time's == does.
//
// Number is for one writer at a time (the store's write lock); Location is
// safe for concurrent use, with Number too. A nil *Zones knows only UTC.
//
// Invariant: *known holds the locations numbered 1..len(*known) in order;
// a published slice is never changed within its length.
type Zones struct {
	known atomic.Pointer[[]*time.Location] // read by anyone; replaced by the writer

	// The writer's own: ids mirrors known, last is the location numbered
	// most recently looked up (checked first, so a clock's usual location
	// costs one comparison).
	ids    map[*time.Location]Zone
	last   *time.Location
	lastID Zone
}

// Number returns loc's number, numbering it if it is new (0: UTC, or the
// table is full). Call it with the store's write lock held.
func (z *Zones) Number(loc *time.Location) Zone {
	switch {
	case z == nil || loc == time.UTC:
		return 0
	case loc == z.last:
		return z.lastID
	}
	id, ok := z.ids[loc]
	if !ok {
		var locs []*time.Location
		if p := z.known.Load(); p != nil {
			locs = *p
		}
		if len(locs) == maxZones {
			return 0
		}
		// Appending in place is safe: readers of the old slice never read
		// past its length.
		locs = append(locs, loc)
		id = Zone(len(locs))
		if z.ids == nil {
			z.ids = make(map[*time.Location]Zone)
		}
		z.ids[loc] = id
		z.known.Store(&locs)
	}
	z.last, z.lastID = loc, id
	return id
}

// Location returns the location numbered id; UTC for 0.
func (z *Zones) Location(id Zone) *time.Location {
	if id == 0 || z == nil {
		return time.UTC
	}
	return (*z.known.Load())[id-1]
}
