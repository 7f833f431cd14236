package segment

import (
	"encoding/binary"
	"fmt"
)

// loaded is a block read from the file and checked against its
// checksum, with its restart points split off.
type loaded struct {
	f        fence
	entries  []byte // the encoded entries
	restarts []byte // offsets in entries of every restartEvery-th entry, u32 each (restart)
}

// nRestarts is how many restart points b has.
func (b *loaded) nRestarts() int { return len(b.restarts) / 4 }

// restart is the offset in entries of restart point k.
func (b *loaded) restart(k int) uint32 { return binary.LittleEndian.Uint32(b.restarts[4*k:]) }

// load reads block i into buf (nil: a new buffer) and checks its
// checksum and restart points.
func (sr rd) load(i int, buf []byte) (loaded, error) {
	f := sr.fence(i)
	if int64(cap(buf)) < f.len {
		buf = make([]byte, f.len)
	}
	buf = buf[:f.len]
	sr.reads.Add(1)
	if _, err := sr.r.ReadAt(buf, f.off); err != nil {
		return loaded{}, fmt.Errorf("read segment block at offset %d: %w", f.off, err)
	}
	return sr.check(i, buf)
}

// readSpan reads blocks i to j, which follow one another in the file, in
// one read into buf (nil: a new buffer); check then checks each.
func (sr rd) readSpan(i, j int, buf []byte) ([]byte, error) {
	off := sr.offs[i]
	n := sr.offs[j+1] - off
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	sr.reads.Add(int64(j - i + 1))
	if _, err := sr.r.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("read segment blocks at offset %d: %w", off, err)
	}
	return buf, nil
}

// check checks block i's bytes, buf, against its checksum and restart
// points.
func (sr rd) check(i int, buf []byte) (loaded, error) {
	f := sr.fence(i)
	body := buf[:len(buf)-4]
	if checksum(body) != binary.LittleEndian.Uint32(buf[len(body):]) {
		return loaded{}, fmt.Errorf("%w: block at offset %d fails its checksum", ErrCorrupt, f.off)
	}
	m := int64(binary.LittleEndian.Uint32(body[len(body)-4:]))
	if m != (f.entries+restartEvery-1)/restartEvery || 4+4*m > int64(len(body)) {
		return loaded{}, fmt.Errorf("%w: block at offset %d has %d restart points for %d entries", ErrCorrupt, f.off, m, f.entries)
	}
	b := loaded{f: f, entries: body[:int64(len(body))-4-4*m]}
	b.restarts = body[len(b.entries) : int64(len(b.entries))+4*m]
	for k := range b.nRestarts() {
		if r := b.restart(k); k == 0 && r != 0 || k > 0 && r <= b.restart(k-1) || int(r) >= len(b.entries) {
			return loaded{}, fmt.Errorf("%w: block at offset %d has restart points out of order", ErrCorrupt, f.off)
		}
	}
	return b, nil
}
