package chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// exampleRev is the package doc's worked example.
var exampleRev = Rev{Rev: 1, Key: "a", Op: 1, Sec: 1704067200, Value: []byte("1"), Notes: []string{"who", "alice"}}

func TestWorkedExample(t *testing.T) {
	enc := exampleRev.Append(nil)
	want := strings.Join(strings.Fields(`
		00 00 00 00 00 00 00 01
		00 00 00 01 61
		01
		00 00 00 00 65 92 00 80  00 00 00 00
		00  00 00 00 00 00 00 00 00
		00 00 00 01 31
		00 00 00 01
		00 00 00 03 77 68 6f  00 00 00 05 61 6c 69 63 65`), "")
	if got := hex.EncodeToString(enc); got != want {
		t.Fatalf("encoding\n got %s\nwant %s", got, want)
	}
	if len(enc) != exampleLen {
		t.Fatalf("the doc says %d bytes, the encoding has %d", exampleLen, len(enc))
	}
	var h Hasher
	d := h.Next(Digest{}, &exampleRev)
	if d != sha256.Sum256(append(make([]byte, 32), enc...)) {
		t.Fatal("Next is not SHA-256 of the previous digest and the encoding")
	}
	if d.String() != ExampleDigest {
		t.Fatalf("D(1) = %s, the doc says %s", d, ExampleDigest)
	}
}

// TestNextHead: a head kept apart from its annotations hashes as the
// revision whole, whatever the annotations and the previous digest.
func TestNextHead(t *testing.T) {
	var h, g Hasher
	prev := Digest{9}
	for _, notes := range [][]string{nil, {"who", "alice"}, {"a", "", "b", strings.Repeat("x", 300)}} {
		r := exampleRev
		r.Notes = notes
		want := h.Next(prev, &r)
		if got := g.NextHead(prev, r.AppendHead(nil), notes); got != want {
			t.Fatalf("notes %q: NextHead gives %s, Next %s", notes, got.Short(), want.Short())
		}
		prev = want
	}
}

// appendHeadRef is the head of the encoding the package doc gives, field
// by field: the model AppendHead's stores at offsets are checked against.
func appendHeadRef(dst []byte, r *Rev) []byte {
	b := binary.BigEndian
	dst = b.AppendUint64(dst, uint64(r.Rev))
	dst = b.AppendUint32(dst, uint32(len(r.Key)))
	dst = append(dst, r.Key...)
	dst = append(dst, r.Op)
	dst = b.AppendUint64(dst, uint64(r.Sec))
	dst = b.AppendUint32(dst, uint32(r.Nsec))
	if r.HasTTL {
		dst = b.AppendUint64(append(dst, 1), uint64(r.Expires))
	} else {
		dst = append(dst, make([]byte, 9)...)
	}
	dst = b.AppendUint32(dst, uint32(len(r.Value)))
	return append(dst, r.Value...)
}

// TestAppendHead checks AppendHead against the model over random
// revisions, appended after bytes already there.
func TestAppendHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		r := Rev{Rev: rng.Int64(), Key: strings.Repeat("k", rng.IntN(40)), Op: uint8(rng.IntN(4)),
			Sec: rng.Int64() - rng.Int64(), Nsec: rng.Int32N(1e9), HasTTL: rng.IntN(2) == 0, Expires: rng.Int64()}
		if !r.HasTTL {
			r.Expires = 0
		}
		if rng.IntN(2) == 0 {
			r.Value = make([]byte, rng.IntN(300))
			for i := range r.Value {
				r.Value[i] = byte(rng.IntN(256))
			}
		}
		pre := make([]byte, rng.IntN(5), rng.IntN(5)+5)
		want := appendHeadRef(slices.Clone(pre), &r)
		if got := r.AppendHead(pre); !bytes.Equal(got, want) {
			t.Fatalf("%+v:\n got %x\nwant %x", r, got, want)
		}
	}
}

// TestEveryFieldCounts: changing any one field, by the least step, changes
// the digest.
func TestEveryFieldCounts(t *testing.T) {
	var h Hasher
	base := Rev{Rev: 7, Key: "k", Op: 1, Sec: 100, Nsec: 5, HasTTL: true, Expires: 200e9, Value: []byte("v"), Notes: []string{"a", "1", "b", "2"}}
	d0 := h.Next(Digest{}, &base)
	for name, f := range map[string]func(r *Rev){
		"rev": func(r *Rev) { r.Rev++ }, "key": func(r *Rev) { r.Key = "l" }, "op": func(r *Rev) { r.Op = 2 },
		"sec": func(r *Rev) { r.Sec++ }, "nsec": func(r *Rev) { r.Nsec++ }, "ttl": func(r *Rev) { r.HasTTL = false },
		"expires": func(r *Rev) { r.Expires++ }, "value": func(r *Rev) { r.Value = []byte("w") },
		"note key": func(r *Rev) { r.Notes = []string{"a", "1", "c", "2"} }, "note value": func(r *Rev) { r.Notes = []string{"a", "1", "b", "3"} },
		"no notes": func(r *Rev) { r.Notes = nil }, "value into key": func(r *Rev) { r.Key, r.Value = "kv", nil },
	} {
		r := base
		f(&r)
		if h.Next(Digest{}, &r) == d0 {
			t.Errorf("changing the %s leaves the digest as it was", name)
		}
	}
	if h.Next(Digest{1}, &base) == d0 {
		t.Error("the previous digest does not count")
	}
}

// TestSeqModel checks Seq against a map of every digest pushed, with
// random pushes and forgets.
func TestSeqModel(t *testing.T) {
	for seed := range 20 {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		all := map[int64]Digest{0: {}}
		s := NewSeq(0, Digest{})
		kept := map[int64]bool{}
		floor := int64(0)
		for range 20000 {
			last, _ := s.Last()
			switch rng.IntN(10) {
			case 0:
				floor = min(floor+rng.Int64N(3000), last)
				s.Forget(floor, func(r int64) bool { return kept[r] })
			default:
				var d Digest
				d[0], d[1], d[2] = byte(last+1), byte((last+1)>>8), byte((last+1)>>16)
				s.Push(d)
				all[last+1] = d
				kept[last+1] = rng.IntN(50) == 0
			}
		}
		last, _ := s.Last()
		for r := int64(0); r <= last; r++ {
			want := r >= s.Base() || kept[r] || kept[r+1]
			d, ok := s.At(r)
			if ok != want || (ok && d != all[r]) {
				t.Fatalf("seed %d: At(%d) = %v, %v; want held %v (base %d)", seed, r, d, ok, want, s.Base())
			}
		}
	}
}

// TestForgetAllBut: the digests below rev-1 go but for those named, and
// D(rev-1) stays as the link before rev, as Forget keeps them.
func TestForgetAllBut(t *testing.T) {
	dg := func(r int64) Digest { return Digest{byte(r), byte(r >> 8)} }
	s := NewSeq(0, dg(0))
	for r := int64(1); r <= 5000; r++ {
		s.Push(dg(r))
	}
	s.ForgetAllBut(4001, []int64{7, 8, 3000, 4500})
	if s.Base() != 4000 {
		t.Fatalf("Base() = %d, want 4000", s.Base())
	}
	for r := int64(0); r <= 5000; r++ {
		d, ok := s.At(r)
		if want := r >= 4000 || r == 7 || r == 8 || r == 3000; ok != want || ok && d != dg(r) {
			t.Fatalf("At(%d) = %x, %v; want held %v", r, d[:2], ok, want)
		}
	}
	if old := s.Old(); len(old) != 3 || old[0] != 7 || old[1] != 8 || old[2] != 3000 {
		t.Fatalf("Old() = %v", old)
	}
}

// BenchmarkForgetAllBut lets go of a seal's worth of digests (1 M
// revisions) but for a few, from a frozen copy of the same sequence each
// time: what a seal does under the store's write lock, so it must cost
// the blocks it drops, not a call a revision.
func BenchmarkForgetAllBut(b *testing.B) {
	s := NewSeq(0, Digest{})
	for range 1 << 20 {
		s.Push(Digest{1})
	}
	keep := []int64{10, 11, 500_000, 999_998}
	for b.Loop() {
		s.Frozen().ForgetAllBut(1<<20, keep)
	}
}
