package revkv_test

import (
	"encoding/binary"
	"math/rand"
	"testing"
	"time"
)

// byteSource is a rand.Source that reads the fuzzer's bytes, so that every
// random decision of the harness is a byte the fuzzer can mutate. Once the
// bytes run out it returns 0 and reports done.
type byteSource struct {
	b    []byte
	done bool
}

func (s *byteSource) Int63() int64 {
	if len(s.b) == 0 {
		s.done = true
		return 0
	}
	var w [8]byte
	n := copy(w[:], s.b)
	s.b = s.b[n:]
	return int64(binary.BigEndian.Uint64(w[:]) >> 1)
}

func (s *byteSource) Seed(int64) {}

// fuzzOptions are the option sets FuzzStore picks from with its first byte.
var fuzzOptions = []struct {
	maxHistory int
	retention  time.Duration
}{{0, 0}, {1, 0}, {3, 0}, {0, 5 * time.Second}, {2, 4 * time.Second}}

// FuzzStore decodes its input into operations of SPEC §1 (every one a single
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
		b := make([]byte, 2048)
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
