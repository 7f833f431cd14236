package revkv_test

import (
	"math/rand"
	"testing"
	"time"
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
