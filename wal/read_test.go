package wal

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// TestFrameReader: reading records through a small buffer, however the
// reads are cut, finds what parsing the whole file finds — every record,
// the same status at the same offset for a torn or damaged tail, and the
// same answer about what follows.
func TestFrameReader(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var data []byte
	var offs []int
	for range 60 {
		offs = append(offs, len(data))
		p := make([]byte, rng.IntN(300))
		for i := range p {
			p[i] = byte(rng.IntN(256))
		}
		data = appendFrame(data, KindBatch, p)
	}
	cuts := []int{len(data), len(data) - 1, offs[59] + 3, offs[40]}
	for _, cut := range cuts {
		file := data[:cut]
		for _, chunk := range []int{1, 7, 64, 1 << 20} {
			for _, half := range []bool{false, true} {
				r := iotest.OneByteReader(bytes.NewReader(file))
				if half {
					r = iotest.HalfReader(bytes.NewReader(file))
				}
				fr := newFrameReaderSize(r, chunk)
				off := 0
				for {
					wantKind, wantPayload, wantSize, wantSt := parseFrame(file[off:])
					require.Equal(t, int64(off), fr.offset())
					kind, payload, size, st, err := fr.next()
					require.NoError(t, err)
					require.Equal(t, wantSt, st, "cut %d chunk %d at %d", cut, chunk, off)
					if st != frameOK {
						require.Equal(t, off == len(file), len(fr.available()) == 0)
						break
					}
					require.Equal(t, wantKind, kind)
					require.Equal(t, wantPayload, payload)
					require.Equal(t, wantSize, size)
					ends, err := fr.endsAfter(size)
					require.NoError(t, err)
					require.Equal(t, off+size == len(file), ends)
					fr.skip(size)
					off += size
				}
			}
		}
	}
	// rest returns the bytes from the offset to the end however they are
	// read, after part of them was read or consumed.
	for _, chunk := range []int{1, 5, 1 << 20} {
		for _, at := range []int{0, 3, 9, len(data) - 1, len(data)} {
			fr := newFrameReaderSize(iotest.HalfReader(bytes.NewReader(data)), chunk)
			require.NoError(t, fr.fill(at))
			fr.skip(at)
			rest, err := fr.rest()
			require.NoError(t, err)
			require.Equal(t, data[at:], rest, "chunk %d, from %d", chunk, at)
			require.Equal(t, int64(at), fr.offset(), "nothing consumed")
		}
	}
	// A read error is returned, not taken for the end of the file.
	fr := newFrameReaderSize(iotest.TimeoutReader(bytes.NewReader(data)), 4096)
	var err error
	for err == nil {
		var size int
		var st frameStatus
		_, _, size, st, err = fr.next()
		require.True(t, err != nil || st == frameOK, "status %d before the error", st)
		fr.skip(size)
	}
	require.ErrorIs(t, err, iotest.ErrTimeout)
}
