package revkv_test

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/wal"
)

// byteSource is a rand.Source that reads the fuzzer's bytes, so that every
// random decision of the harness is a byte the fuzzer can mutate. Each draw
// takes one byte, repeated across the 63 bits so that both rand's high-bit
// (Int31n) and low-bit (modulo) paths see it. Short inputs are what keep the
// fuzzer moving: each new interesting input is minimised, and the minimiser
// re-runs it once for every byte and every run of bytes it tries to remove,
// so its cost grows with the square of the input's length (a draw of eight
// bytes made inputs eight times longer, and a one-minute run spent most of
// its time minimising). Once the bytes run out it returns 0 and reports done.
type byteSource struct {
	b    []byte
	done bool
}

func (s *byteSource) Int63() int64 {
	if len(s.b) == 0 {
		s.done = true
		return 0
	}
	v := uint64(s.b[0])
	s.b = s.b[1:]
	return int64((v*0x0101_0101_0101_0101 ^ v<<5) >> 1)
}

func (s *byteSource) Seed(int64) {}

// fuzzOptions are the option sets FuzzStore picks from with its first byte.
var fuzzOptions = []struct {
	maxHistory int
	retention  time.Duration
}{{0, 0}, {1, 0}, {3, 0}, {0, 5 * time.Second}, {2, 4 * time.Second}}

// FuzzStore decodes its input into operations of contract §1 (every one a single
// goroutine can call, with a manual clock that stands still, goes back and
// jumps) and checks every answer against the reference model: the latest
// state after every step, and the whole history (every GetAt and GetAsOf,
// every open view) at the end and after Close.
func FuzzStore(f *testing.F) {
	f.Add(byte(0), []byte("put get delete history"))
	f.Add(byte(1), []byte{0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 80, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add(byte(4), make([]byte, 512))
	seed := rand.New(rand.NewSource(1))
	for i := range 5 {
		b := make([]byte, 600)
		seed.Read(b)
		f.Add(byte(i), b)
	}
	f.Fuzz(func(t *testing.T, opts byte, data []byte) {
		o := fuzzOptions[int(opts)%len(fuzzOptions)]
		src := &byteSource{b: data}
		h := newHarnessRand(t, rand.New(src), o.maxHistory, o.retention)
		for h.n = 0; h.n < 200 && !src.done; h.n++ {
			h.step()
			h.check(false)
		}
		h.check(true)
		h.closeAll()
	})
}

// FuzzOpen damages one file of a valid directory (a snapshot at revision
// 20, a log of revisions 21..40 after it) and opens it: Open must refuse
// with ErrCorrupt, changing nothing, or open to exactly what tornRule says
// is left — the whole state, or the revisions before a torn tail of the
// log — with every entry as written, passing Check (contract §8.6). The damage: bits
// flipped (data xored in at at), bytes overwritten by data, n bytes zeroed,
// n bytes removed, data inserted, or the file cut at at.
func FuzzOpen(f *testing.F) {
	base := newDamageBase(f, 40, 20)
	snapName := "/db/" + wal.SnapshotName(base.snap)
	snap := base.m.Bytes(snapName)
	for op := range byte(6) {
		f.Add(byte(0), op, uint16(base.recs[len(base.recs)/2]+1), uint16(3), []byte{0x40})
		f.Add(byte(0), op, uint16(base.recs[len(base.recs)-1]+5), uint16(9), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
		f.Add(byte(1), op, uint16(40), uint16(2), []byte{1, 2})
	}
	f.Fuzz(func(t *testing.T, file, op byte, at, n uint16, data []byte) {
		name, orig := base.seg, base.log
		if file%2 == 1 {
			name, orig = snapName, snap
		}
		b := damage(orig, op, int(at), int(n), data)
		rev, err := openDamaged(t, base.m, name, b)
		if name == snapName {
			if slices.Equal(b, orig) {
				require.NoError(t, err)
				require.Equal(t, base.rev, rev)
			} else {
				require.Error(t, err, "a damaged snapshot is ErrCorrupt")
			}
			return
		}
		want, corrupt := tornRule(b, base.snap)
		if corrupt {
			require.Error(t, err, "damage before the torn tail is ErrCorrupt")
			return
		}
		require.NoError(t, err, "a torn tail, or no damage, opens")
		require.Equal(t, want, rev, "the revisions before the torn tail, no fewer")
	})
}

// damage returns a copy of b damaged by op (see FuzzOpen) at at (modulo its
// length plus one).
func damage(b []byte, op byte, at, n int, data []byte) []byte {
	b = slices.Clone(b)
	at %= len(b) + 1
	end := min(at+n, len(b))
	switch op % 6 {
	case 0:
		for i, x := range data[:min(len(data), len(b)-at)] {
			b[at+i] ^= x
		}
	case 1:
		copy(b[at:], data)
	case 2:
		clear(b[at:end])
	case 3:
		b = slices.Delete(b, at, end)
	case 4:
		b = slices.Insert(b, at, data...)
	case 5:
		b = b[:at]
	}
	return b
}

// tornRule is the rule of contract §8.6 for a log segment, the last,
// written as plainly as possible: the records are read from the start, and
// the first that is not whole (cut short, or a checksum that does not
// match) starts a torn tail unless whole records, one after another, run
// from somewhere after it to the end of the file, and is damage if they
// do. It returns the revision Open must reach (snap,
// the snapshot's, plus the log's whole records up to a torn tail), or
// corrupt: Open must refuse. A record the store could not have written
// (revisions out of order) is damage too.
func tornRule(b []byte, snap int64) (rev int64, corrupt bool) {
	const header = 16
	rev = snap
	if len(b) < header {
		return rev, false // the segment's creation, torn
	}
	if string(b[:8]) != "revkvlog" || binary.LittleEndian.Uint32(b[8:]) != 1 || binary.LittleEndian.Uint32(b[12:]) != 0 {
		return 0, true
	}
	whole := func(off int) (payload []byte, ok bool) {
		if off+9 > len(b) {
			return nil, false
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if k := wal.Kind(b[off+8]); n > len(b)-off-9 || (k < wal.KindBatch || k > wal.KindTrim) && k != wal.KindChained {
			return nil, false
		}
		if crc32.Checksum(b[off+8:off+9+n], crc32.MakeTable(crc32.Castagnoli)) != binary.LittleEndian.Uint32(b[off+4:]) {
			return nil, false
		}
		return b[off+9 : off+9+n], true
	}
	for off := header; off < len(b); {
		p, ok := whole(off)
		if !ok { // damage if whole records run from somewhere after it to the end
			for o := off + 1; o < len(b); o++ {
				p := o
				for p < len(b) {
					q, ok := whole(p)
					if !ok {
						break
					}
					p += 9 + len(q)
				}
				if p == len(b) {
					return 0, true
				}
			}
			return rev, false
		}
		batch, err := wal.DecodeEntries(wal.Kind(b[off+8]), p)
		switch {
		case err != nil || len(batch) == 0:
			return 0, true
		case batch[len(batch)-1].Rev <= rev: // a snapshot holds it
		case batch[0].Rev != rev+1:
			return 0, true
		default:
			rev = batch[len(batch)-1].Rev
		}
		off += 9 + len(p)
	}
	return rev, false
}
