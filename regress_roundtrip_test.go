package revkv

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/revkv/revkv/vfs"
)

func roundTrip(t *testing.T, m vfs.FS, s *Store[string]) {
	t.Helper()
	var a bytes.Buffer
	if err := s.Export(&a, ""); err != nil {
		t.Fatal(err)
	}
	dst := fmt.Sprintf("/imp%d", time.Now().UnixNano())
	if _, err := Import(dst, StringCodec(), bytes.NewReader(a.Bytes()), WithFS(m)); err != nil {
		t.Fatalf("import: %v\n%s", err, a.String())
	}
	b, err := Open(dst, StringCodec(), WithFS(m), WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var bb bytes.Buffer
	if err := b.Export(&bb, ""); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), bb.Bytes()) {
		t.Errorf("export|import|export differs:\n%s\n---\n%s", a.String(), bb.String())
	}
}

func TestRegressRoundTripCompact(t *testing.T) {
	m := vfs.NewMem()
	s, err := Open("/a", StringCodec(), WithFS(m))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 10; i++ {
		s.Put(fmt.Sprint("k", i%3), "v")
	}
	s.Compact(8)
	roundTrip(t, m, s)
}

func TestRegressRoundTripUTCFixedZone(t *testing.T) {
	m := vfs.NewMem()
	clock := func() time.Time { return time.Now().In(time.FixedZone("UTC", 0)) }
	s, err := Open("/a", StringCodec(), WithFS(m), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Put("a", "1")
	roundTrip(t, m, s)
}

// TestRegressRoundTripCheckpointReopen: the round trip of a store reopened
// from its snapshot after compaction or the history cap, where the export's
// first lines have digests the store holds only for kept entries.
func TestRegressRoundTripCheckpointReopen(t *testing.T) {
	for name, c := range map[string]struct {
		opts  []Option
		write func(s *Store[string])
	}{
		"compact": {nil, func(s *Store[string]) {
			for i := range 10 {
				s.Put(fmt.Sprint("k", i%3), "v")
			}
			s.Compact(8)
		}},
		"one key, compact": {nil, func(s *Store[string]) {
			for i := range 10 {
				s.Put("a", fmt.Sprint(i))
			}
			s.Compact(9)
		}},
		"cap": {[]Option{WithMaxHistory(2)}, func(s *Store[string]) {
			for i := range 80 {
				if i == 40 {
					s.Put("cold", "x")
				}
				s.Put(fmt.Sprint("k", i%3), "v")
			}
			s.Trim()
		}},
	} {
		t.Run(name, func(t *testing.T) {
			m := vfs.NewMem()
			opts := append([]Option{WithFS(m)}, c.opts...)
			s, err := Open("/a", StringCodec(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			c.write(s)
			if err := s.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if s, err = Open("/a", StringCodec(), opts...); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			roundTrip(t, m, s)
		})
	}
}
