package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/segment"
)

// store is the store of a data directory; every directory holds []byte
// values (BytesCodec and StringCodec write the same bytes).
type store = revkv.Store[[]byte]

// open opens the directory: read-only (changing no byte of it) unless
// write. The directory must exist and hold a store's files: Open would
// create a missing one, and even a read-only Open creates the LOCK file.
// p, if not nil, reports Open's progress (and goes on to report the
// command's).
func (c *cli) open(write bool, p *progress) (*store, error) {
	if err := isStoreDir(c.dir); err != nil {
		return nil, err
	}
	opts := []revkv.Option{c.keepTiers()}
	if !write {
		opts = append(opts, revkv.WithReadOnly())
	}
	if p != nil {
		opts = append(opts, revkv.WithProgress(p.report))
	}
	s, err := revkv.Open(c.dir, revkv.BytesCodec(), opts...)
	p.done()
	if err != nil {
		return nil, c.openError(err)
	}
	return s, nil
}

// keepTiers is the memory bound that keeps the directory's shape: a
// directory that was never sealed (no manifest; written with
// WithMemory(-1), or by a revkv from before sealing) stays unsealed, so
// that a checkpoint, compaction or repair by the tool does not seal what
// its owner keeps in the log and snapshots; a sealed one seals as a store
// with the default bound does.
func (c *cli) keepTiers() revkv.Option {
	if _, err := os.Stat(filepath.Join(c.dir, segment.ManifestName)); err == nil {
		return revkv.WithMemory(revkv.DefaultMemory)
	}
	return revkv.WithMemory(-1)
}

// openRead opens the directory read-only, reporting progress when stderr
// is a terminal.
func (c *cli) openRead() (*store, error) {
	return c.open(false, c.progress("reading "+c.dir))
}

// openError turns Open's error into one sentence about the directory.
func (c *cli) openError(err error) error {
	switch {
	case errors.Is(err, revkv.ErrLocked):
		return fmt.Errorf("%s is in use by another process (a running revkv-server?)", c.dir)
	case errors.Is(err, revkv.ErrNewerFormat):
		detail := strings.ReplaceAll(corruptDetail(err), c.dir+string(filepath.Separator), "")
		return fmt.Errorf("%s was written by a newer revkv, not damaged: %s", c.dir, detail)
	case errors.Is(err, revkv.ErrCorrupt):
		// The file it names is in the directory: named once.
		detail := strings.ReplaceAll(corruptDetail(err), c.dir+string(filepath.Separator), "")
		return fmt.Errorf("%s is corrupt: %s", c.dir, detail)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no revkv directory at %s", c.dir)
	}
	return err
}

// corruptDetail is what Open says is corrupt, without "revkv: open DIR:"
// and its "corrupt data (...)" wrapping.
func corruptDetail(err error) string {
	msg := err.Error()
	var oe *revkv.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		msg = oe.Err.Error()
	}
	msg = strings.TrimPrefix(msg, "revkv: ")
	for _, wrap := range []string{"corrupt data (", "written by a newer revkv ("} {
		if inner, ok := strings.CutPrefix(msg, wrap); ok && strings.HasSuffix(inner, ")") {
			return strings.TrimSuffix(inner, ")")
		}
	}
	return msg
}

// isStoreDir says why dir is not a store's directory: missing, not a
// directory, or without a LOCK, log or snapshot file.
func isStoreDir(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no revkv directory at %s", dir)
	case err != nil:
		if st, serr := os.Stat(dir); serr == nil && !st.IsDir() {
			return fmt.Errorf("no revkv directory at %s: it is a file", dir)
		}
		return fmt.Errorf("cannot read %s: %v", dir, unwrapPath(err))
	}
	for _, e := range ents {
		if kind := fileKind(e.Name()); kind == "lock" || kind == "log" || kind == "snapshot" {
			return nil
		}
	}
	return fmt.Errorf("no revkv directory at %s: it holds no LOCK, log or snapshot file", dir)
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileKind names what a file of a data directory is, by its name.
func fileKind(name string) string {
	switch {
	case name == "LOCK":
		return "lock"
	case strings.HasSuffix(name, ".log"):
		return "log"
	case strings.HasSuffix(name, ".snap"):
		return "snapshot"
	case strings.HasSuffix(name, ".tmp"):
		return "unfinished"
	case strings.HasSuffix(name, ".damaged"):
		return "damaged"
	case strings.HasSuffix(name, ".seg"):
		return "segment"
	case name == segment.ManifestName:
		return "manifest"
	}
	return "other"
}

// annotations returns revision rev's annotations. A store that keeps none
// (its Annotations is errors.ErrUnsupported) has none to show.
func annotations(s *store, rev revkv.Revision) (map[string]string, error) {
	m, err := s.Annotations(rev)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil
	}
	return m, err
}

// annotationsOf caches annotations by revision: an Update's revisions come
// together in history and in changes.
type annotationsOf struct {
	s   *store
	rev revkv.Revision
	m   map[string]string
}

func (a *annotationsOf) get(rev revkv.Revision) (map[string]string, error) {
	if rev != a.rev || rev == 0 {
		m, err := annotations(a.s, rev)
		if err != nil {
			return nil, err
		}
		a.rev, a.m = rev, m
	}
	return a.m, nil
}

// digest returns the latest revision's digest in hex, or "" for a store
// that keeps no hash chain (errors.ErrUnsupported).
func digest(s *store) (string, error) {
	_, d, err := s.Digest()
	if errors.Is(err, errors.ErrUnsupported) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(d[:]), nil
}

// parseRev parses a revision: a whole number, 0 or more.
func parseRev(what, s string) (revkv.Revision, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, usagef("%s %q is not a revision (a whole number, 0 or more)", what, s)
	}
	return revkv.Revision(n), nil
}

// parseTime parses a TIME: RFC 3339, with its fraction of a second and its
// offset as given, or Unix milliseconds.
func parseTime(what, s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usagef("%s %q is not a time (RFC 3339, as 2024-03-01T12:00:00Z, or Unix milliseconds)", what, s)
	}
	return t, nil
}

// parseDigest parses a digest: 64 hex digits.
func parseDigest(s string) ([32]byte, error) {
	var d [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(d) {
		return d, usagef("--digest %q is not a digest (64 hex digits)", s)
	}
	copy(d[:], b)
	return d, nil
}

// pointInTime parses --rev or --at, of which at most one may be given.
func (c *cli) pointInTime() (rev *revkv.Revision, at *time.Time, err error) {
	if c.set["rev"] && c.set["at"] {
		return nil, nil, usagef("--rev and --at both say when: give one of them")
	}
	if c.set["rev"] {
		r, err := parseRev("--rev", c.rev)
		return &r, nil, err
	}
	if c.set["at"] {
		t, err := parseTime("--at", c.at)
		return nil, &t, err
	}
	return nil, nil, nil
}

// view opens the view --rev or --at asks for.
func view(s *store, rev *revkv.Revision, at *time.Time) (*revkv.View[[]byte], error) {
	if rev != nil {
		return s.At(*rev)
	}
	return s.AsOf(*at)
}

// when says "at revision N" or "as of TIME", for messages.
func (c *cli) when(rev *revkv.Revision) string {
	if rev != nil {
		return fmt.Sprintf("at revision %d", *rev)
	}
	return "as of " + c.at
}
