package vfs

import (
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
)

// What a power cut leaves of a Mem: its durable namespace and bytes, and
// (with a random source) some of what was not yet synced.

// Crash returns what a power cut at this instant would leave: the entries
// each directory held at its last sync, each file with the bytes of its
// last sync. With rng non-nil, each change to a directory since its last
// sync also survives with probability 1/2, and each file whose unsynced
// bytes extend what was synced also keeps a random prefix of them, as an
// operating system that wrote back part of its cache would; and each file
// written through MapAppend since its last synced truncation gains, with
// probability 1/2, zeros after the bytes it keeps to a multiple of
// RoomAlign, the room a mapped file had allocated. Locks do not survive.
func (m *Mem) Crash(rng *rand.Rand) *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashLocked(rng)
}

func (m *Mem) crashLocked(rng *rand.Rand) *Mem {
	files, dirs := maps.Clone(m.durable), maps.Clone(m.durableDirs)
	if rng != nil {
		for _, dir := range slices.Sorted(maps.Keys(m.unsynced)) { // sorted: a seed replays
			for _, ch := range m.unsynced[dir] {
				if rng.IntN(2) == 0 {
					continue
				}
				for _, e := range ch {
					switch {
					case e.dir && e.gone:
						delete(dirs, e.name)
					case e.dir:
						dirs[e.name] = true
					case e.ino == nil:
						delete(files, e.name)
					default:
						files[e.name] = e.ino
					}
				}
			}
		}
	}
	c := NewMem()
	for d := range dirs {
		if reachable(dirs, d) {
			c.dirs[d], c.durableDirs[d] = true, true
		}
	}
	for name, ino := range files {
		if !c.dirs[filepath.Dir(name)] {
			continue // its directory vanished
		}
		data := slices.Clone(ino.synced)
		switch {
		case rng == nil:
		case ino.cut && rng.IntN(2) == 0:
			// The cut was not written back, but some of what was written
			// after it was: the old bytes past them show through.
			n := ino.low + rng.IntN(len(ino.data)-ino.low+1)
			data = append(slices.Clone(ino.data[:n]), ino.synced[min(n, len(ino.synced)):]...)
		case len(ino.data) > len(ino.synced) && string(ino.data[:len(ino.synced)]) == string(ino.synced):
			data = slices.Clone(ino.data[:len(ino.synced)+rng.IntN(len(ino.data)-len(ino.synced)+1)])
		}
		if ino.room && rng != nil && rng.IntN(2) == 0 {
			n := (len(data)+RoomAlign)&^(RoomAlign-1) + rng.IntN(2)*RoomAlign
			data = append(data, make([]byte, n-len(data))...)
		}
		n := &inode{data: data, synced: slices.Clone(data)}
		c.files[name], c.durable[name] = n, n
	}
	return c
}

// reachable says whether d and every directory above it are in dirs.
func reachable(dirs map[string]bool, d string) bool {
	for ; ; d = filepath.Dir(d) {
		if !dirs[d] {
			return false
		}
		if filepath.Dir(d) == d {
			return true
		}
	}
}
