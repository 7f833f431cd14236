package revkv

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func copyLegacy(t *testing.T) string {
	dir := t.TempDir()
	ents, _ := os.ReadDir("testdata/legacy")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata/legacy", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
	}
	return dir
}

// A directory written by the previous version (a snapshot without digests):
// after one checkpoint by this version, Open refuses it.
func TestRegressLegacySnapshotCheckpointBricks(t *testing.T) {
	dir := copyLegacy(t)
	s, err := Open(dir, StringCodec())
	defer func() { _ = s.Close() }()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("floor %d rev %d", s.Floor(), s.Rev())
	if _, err := s.DigestAt(3); err != nil {
		t.Logf("DigestAt(3) above the floor: %v", err)
	}
	if err := s.Export(io.Discard, ""); err != nil {
		t.Logf("Export: %v", err)
	}
	if _, err := s.Put("x", "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	_, want, _ := s.Digest()
	var before bytes.Buffer
	if err := s.Export(&before, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, StringCodec())
	if err != nil {
		t.Fatalf("reopen after one checkpoint: %v", err)
	}
	defer s2.Close()
	if _, got, _ := s2.Digest(); got != want {
		t.Errorf("the digest changed across the checkpoint: %x, then %x", want, got)
	}
	var after bytes.Buffer
	if err := s2.Export(&after, ""); err != nil {
		t.Fatal(err)
	}
	if before.String() != after.String() {
		t.Errorf("the export changed across the checkpoint:\n%s\n%s", before.String(), after.String())
	}
	imported := filepath.Join(t.TempDir(), "imported")
	if _, err := Import(imported, StringCodec(), &after); err != nil {
		t.Fatalf("importing the upgraded directory's export: %v", err)
	}
}
