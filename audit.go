package revkv

import (
	"errors"
	"io"
)

// The audit surface (contract §11). This file fixes the signatures; the
// implementations land with the hash chain.

// Annotate attaches key and value (an actor, a reason, a ticket) to every
// revision the Update commits. A later Annotate of the same key replaces
// the value. An Update that writes nothing leaves no annotations.
func (t *Txn[V]) Annotate(key, value string) {}

// Annotations returns the annotations of revision rev: nil for a revision
// written without any.
func (s *Store[V]) Annotations(rev Revision) (map[string]string, error) {
	return nil, errors.ErrUnsupported
}

// Digest returns the latest revision and the hash chain's digest D there.
func (s *Store[V]) Digest() (Revision, [32]byte, error) {
	return 0, [32]byte{}, errors.ErrUnsupported
}

// DigestAt returns D(rev) for a retained revision rev.
func (s *Store[V]) DigestAt(rev Revision) ([32]byte, error) {
	return [32]byte{}, errors.ErrUnsupported
}

// Export writes the store's history to w as JSON lines.
func (s *Store[V]) Export(w io.Writer, prefix string) error { return errors.ErrUnsupported }

// Import reads an export from r into dir, which must be empty or absent.
func Import[V any](dir string, codec Codec[V], r io.Reader, opts ...Option) (Revision, error) {
	return 0, errors.ErrUnsupported
}

// WithProgress makes Open (while it replays), Export and Import call fn
// now and then with the revision they have reached.
func WithProgress(fn func(rev Revision)) Option { return func(o *options) {} }
