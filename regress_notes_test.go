package revkv

import (
	"testing"
)

// An Update whose commit panics in the codec leaves its annotations in
// state.commitNotes: the next write, a plain Put, is annotated with them.
func TestRegressCodecPanicLeaksAnnotations(t *testing.T) {
	dir := t.TempDir()
	s, err := Open[string](dir, boomCodec{})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { recover() }()
		s.Update(func(tx *Txn[string]) error {
			tx.Annotate("who", "mallory")
			return tx.Put("k", "boom")
		})
	}()
	rev, err := s.Put("plain", "1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Annotations(rev)
	if err != nil {
		t.Fatal(err)
	}
	if got != nil {
		t.Errorf("a plain Put at %d carries the panicked Update's annotations: %v", rev, got)
	}
	s.Close()
}
