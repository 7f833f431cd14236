package revkv

import (
	"errors"
	"io"
)

// The audit surface (contract §11). This file fixes the signatures; the
// implementations land with the hash chain.

// Export writes the store's history to w as JSON lines.
func (s *Store[V]) Export(w io.Writer, prefix string) error { return errors.ErrUnsupported }

// Import reads an export from r into dir, which must be empty or absent.
func Import[V any](dir string, codec Codec[V], r io.Reader, opts ...Option) (Revision, error) {
	return 0, errors.ErrUnsupported
}

// WithProgress makes Open (while it replays), Export and Import call fn
// now and then with the revision they have reached.
func WithProgress(fn func(rev Revision)) Option { return func(o *options) {} }
