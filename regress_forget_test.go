package revkv

import (
	"errors"
	"testing"
)

// Compact forgets the chain's digests before its walk drops the entries:
// every compacted revision's digest moves into the old map, and stays.
func TestRegressCompactKeepsEveryDigest(t *testing.T) {
	s, err := Open(t.TempDir(), StringCodec())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var last Revision
	for i := 0; i < 5000; i++ {
		if last, err = s.Put("k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(last); err != nil {
		t.Fatal(err)
	}
	n := 0
	s.Check()
	ents := 0
	for range s.History("k") {
		ents++
	}
	s.disk.chainMu.Lock()
	n = len(s.disk.chain.Old())
	base := s.disk.chain.Base()
	s.disk.chainMu.Unlock()
	t.Logf("entries kept: %d; chain base %d; older digests held: %d", ents, base, n)
	if n > 4 {
		t.Errorf("%d older digests held for %d kept entries", n, ents)
	}
	if d, err := s.DigestAt(10); !errors.Is(err, ErrCompacted) {
		t.Errorf("DigestAt(10) after Compact(%d), entry 10 gone: %x, %v; want ErrCompacted", last, d[:4], err)
	}
	s.Trim()
	s.disk.chainMu.Lock()
	t.Logf("after Trim: older digests held: %d", len(s.disk.chain.Old()))
	s.disk.chainMu.Unlock()
}
