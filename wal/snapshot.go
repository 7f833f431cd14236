package wal

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/revkv/revkv/vfs"
)

// A snapshot is one file, named by the revision it holds the state at (16
// hex digits, ".snap"): a KindState record first, then records the store
// chooses, then a KindEnd record that counts them. It is written to a
// temporary file, synced, renamed into place and the directory synced, so
// that a snapshot file either is whole or does not exist.

const (
	snapExt = ".snap"
	tmpExt  = ".tmp"
)

// SnapshotName is the file name of the snapshot at rev.
func SnapshotName(rev int64) string { return fmt.Sprintf("%016x%s", rev, snapExt) }

// Snapshots returns the revisions of dir's snapshots, in order.
func Snapshots(fs vfs.FS, dir string) ([]int64, error) { return listFiles(fs, dir, snapExt) }

// SnapshotWriter writes one snapshot.
type SnapshotWriter struct {
	fs       vfs.FS
	dir, tmp string
	rev      int64
	f        vfs.File
	buf      []byte
	n        uint64 // records written after the state
	size     int64  // bytes written to the file
	err      error
}

// Size returns the number of bytes the snapshot holds so far; after Commit,
// its size.
func (w *SnapshotWriter) Size() int64 { return w.size + int64(len(w.buf)) }

// CreateSnapshot starts the snapshot at rev, with the state record's payload.
func CreateSnapshot(fs vfs.FS, dir string, rev int64, state []byte) (*SnapshotWriter, error) {
	tmp := filepath.Join(dir, SnapshotName(rev)+tmpExt)
	f, err := fs.Create(tmp)
	if err != nil {
		return nil, err
	}
	w := &SnapshotWriter{fs: fs, dir: dir, tmp: tmp, rev: rev, f: f, buf: fileHeader(magicSnap)}
	w.buf = appendFrame(w.buf, KindState, state)
	return w, nil
}

// Add appends a record of kind (not KindState or KindEnd).
func (w *SnapshotWriter) Add(kind Kind, payload []byte) error {
	if w.err != nil {
		return w.err
	}
	w.buf = appendFrame(w.buf, kind, payload)
	w.n++
	if len(w.buf) >= 1<<20 {
		w.flush()
	}
	return w.err
}

func (w *SnapshotWriter) flush() {
	if w.err == nil && len(w.buf) > 0 {
		var n int
		n, w.err = w.f.Write(w.buf)
		w.size += int64(n)
		w.buf = w.buf[:0]
	}
}

// Commit ends the snapshot and puts it in place, durably.
func (w *SnapshotWriter) Commit() error {
	var e enc
	e.uvarint(w.n)
	w.buf = appendFrame(w.buf, KindEnd, e.b)
	w.flush()
	if w.err == nil {
		w.err = w.f.Sync()
	}
	if err := w.f.Close(); w.err == nil {
		w.err = err
	}
	if w.err == nil {
		w.err = w.fs.Rename(w.tmp, filepath.Join(w.dir, SnapshotName(w.rev)))
	}
	if w.err == nil {
		w.err = w.fs.SyncDir(w.dir)
	}
	if w.err != nil {
		w.fs.Remove(w.tmp)
	}
	return w.err
}

// Abort gives the snapshot up and removes its temporary file.
func (w *SnapshotWriter) Abort() {
	w.f.Close()
	w.fs.Remove(w.tmp)
}

// ReadSnapshot reads the snapshot at rev: fn gets the state record first,
// then every other record, each with its offset in the file (for a
// *Corruption of its own, if the caller checks the record later). A
// snapshot that is damaged, of an unknown version, or without its KindEnd
// record (or with more after it) is a *Corruption; so is fn's error, at
// the record's offset.
func ReadSnapshot(fs vfs.FS, dir string, rev int64, fn func(kind Kind, payload []byte, off int64) error) error {
	name := filepath.Join(dir, SnapshotName(rev))
	f, err := fs.OpenRead(name)
	if err != nil {
		return err
	}
	defer f.Close()
	fr := newFrameReader(f)
	readErr := func(err error) error { return fmt.Errorf("reading %s: %w", name, err) }
	if err := fr.fill(headerSize); err != nil {
		return readErr(err)
	}
	if err := checkHeader(fr.available(), magicSnap); err != nil {
		return headerCorruption(name, err)
	}
	fr.skip(headerSize)
	n := uint64(0)
	for first := true; ; first = false {
		off := fr.offset()
		kind, payload, size, st, err := fr.next()
		if err != nil {
			return readErr(err)
		}
		bad := func(why string) error { return &Corruption{File: name, Offset: off, Why: why} }
		if st != frameOK {
			if st != frameShort {
				return bad("damaged record")
			}
			return bad("the file ends without its end record")
		}
		switch {
		case first && kind != KindState:
			return bad("the first record is not the state")
		case !first && kind == KindState:
			return bad("a second state record")
		case kind == KindEnd:
			d := dec{b: payload}
			if count := d.uvarint(); d.done() != nil || count != n {
				return bad(fmt.Sprintf("the end record counts %d records, the file holds %d", count, n))
			}
			if ends, err := fr.endsAfter(size); err != nil {
				return readErr(err)
			} else if !ends {
				return bad("bytes after the end record")
			}
			return nil
		}
		if err := fn(kind, payload, off); err != nil {
			return bad(err.Error())
		}
		if !first {
			n++
		}
		fr.skip(size)
	}
}

// RemoveSnapshotsBefore deletes the snapshots below rev and any temporary
// files a crash left behind. The caller syncs dir to make it durable.
func RemoveSnapshotsBefore(fs vfs.FS, dir string, rev int64) error {
	revs, err := Snapshots(fs, dir)
	if err != nil {
		return err
	}
	for _, r := range revs {
		if r < rev {
			if err := fs.Remove(filepath.Join(dir, SnapshotName(r))); err != nil {
				return err
			}
		}
	}
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasSuffix(n, snapExt+tmpExt) {
			fs.Remove(filepath.Join(dir, n))
		}
	}
	return nil
}
