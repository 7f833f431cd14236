package revkv

import (
	"testing"
)

// The chain hashes the bytes Encode gave at commit; a checkpoint
// re-encodes the decoded value. With the package's own JSONCodec the two
// differ for ordinary values, and the snapshot is refused at Open.
func TestRegressJSONCodecCheckpointRefused(t *testing.T) {
	for name, put := range map[string]func(dir string) error{
		"any int64": func(dir string) error {
			s, err := Open(dir, JSONCodec[any]())
			if err != nil {
				return err
			}
			s.Put("k", map[string]any{"id": int64(1<<60 + 1)})
			s.Close()
			if s, err = Open(dir, JSONCodec[any]()); err != nil {
				return err
			}
			if err := s.Checkpoint(); err != nil {
				return err
			}
			return s.Close()
		},
		"string invalid utf8": func(dir string) error {
			s, err := Open(dir, JSONCodec[string]())
			if err != nil {
				return err
			}
			s.Put("k", "caf\xe9")
			s.Close()
			if s, err = Open(dir, JSONCodec[string]()); err != nil {
				return err
			}
			if err := s.Checkpoint(); err != nil {
				return err
			}
			return s.Close()
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := put(dir); err != nil {
				t.Fatal(err)
			}
			var err error
			if name == "any int64" {
				var s *Store[any]
				s, err = Open(dir, JSONCodec[any]())
				if err == nil {
					s.Close()
				}
			} else {
				var s *Store[string]
				s, err = Open(dir, JSONCodec[string]())
				if err == nil {
					s.Close()
				}
			}
			if err != nil {
				t.Errorf("reopen after a checkpoint: %v", err)
			}
		})
	}
}
