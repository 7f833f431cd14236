package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A log is a sequence of segment files in one directory, each named by
// the first revision it may hold (16 hex digits, ".log"): a segment holds
// the records written from that revision until the next segment's. Only the
// last segment is ever written to; a crash can leave it with an incomplete
// last record, which Replay reports and Truncate cuts.

const logExt = ".log"

// SegmentName is the file name of the segment starting at rev.
func SegmentName(rev int64) string { return fmt.Sprintf("%016x%s", rev, logExt) }

// Segments returns the first revisions of dir's segments, in order.
func Segments(dir string) ([]int64, error) {
	return listFiles(dir, logExt)
}

func listFiles(dir, ext string) ([]int64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var revs []int64
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ext)
		if !ok || len(name) != 16 {
			continue
		}
		r, err := strconv.ParseInt(name, 16, 64)
		if err != nil || r < 0 {
			continue
		}
		revs = append(revs, r)
	}
	slices.Sort(revs)
	return revs, nil
}

// Corruption is the error of a damaged file: which file, at which offset,
// and what is wrong. It wraps ErrCorrupt.
type Corruption struct {
	File   string
	Offset int64
	Why    string
}

func (c *Corruption) Error() string {
	return fmt.Sprintf("%s at offset %d: %s: %s", c.File, c.Offset, ErrCorrupt, c.Why)
}

func (c *Corruption) Unwrap() error { return ErrCorrupt }

// Tail is where Replay found the log to end: the last segment and the
// length of its whole records. Torn is true when bytes after that are an
// incomplete record (a crash in the middle of a write).
type Tail struct {
	Segment int64 // first revision of the last segment; -1 if there is none
	Size    int64 // the length of the whole records in it, header included
	Torn    bool
}

// Replay reads every record of dir's log, segment by segment, and calls fn
// with each; fn's error stops it and is returned. Records in segments whose
// successor starts at or below from are skipped without being read.
// Damage anywhere but in the last record of the last segment is a
// *Corruption; a last record that is incomplete, or whole with a checksum
// that does not match and nothing after it, is the torn tail of a crash:
// Replay stops before it and says so in Tail. It changes nothing on disk.
func Replay(dir string, from int64, fn func(kind Kind, payload []byte) error) (Tail, error) {
	segs, err := Segments(dir)
	tail := Tail{Segment: -1}
	if err != nil {
		return tail, err
	}
	for i, first := range segs {
		last := i == len(segs)-1
		if !last && segs[i+1] <= from {
			continue
		}
		name := filepath.Join(dir, SegmentName(first))
		data, err := os.ReadFile(name)
		if err != nil {
			return tail, err
		}
		size, torn, err := replaySegment(name, data, last, fn)
		if err != nil {
			return tail, err
		}
		tail = Tail{Segment: first, Size: size, Torn: torn}
	}
	return tail, nil
}

func replaySegment(name string, data []byte, last bool, fn func(Kind, []byte) error) (size int64, torn bool, err error) {
	if len(data) < headerSize && last {
		// A crash while the segment was being created: nothing was in it.
		return 0, len(data) > 0, nil
	}
	if err := checkHeader(data, magicLog); err != nil {
		return 0, false, &Corruption{File: name, Offset: 0, Why: err.Error()}
	}
	off := headerSize
	for off < len(data) {
		kind, payload, n, st := parseFrame(data[off:])
		switch {
		case st == frameOK:
		case last && st == frameShort:
			return int64(off), true, nil
		case last && st == frameBadCRC && off+n == len(data):
			return int64(off), true, nil
		case st == frameBadLength && last && allZero(data[off:]):
			return int64(off), true, nil // a tail the file system zero-filled
		default:
			why := map[frameStatus]string{frameShort: "the file ends inside a record", frameBadCRC: "checksum mismatch", frameBadLength: "impossible record length"}[st]
			return 0, false, &Corruption{File: name, Offset: int64(off), Why: why}
		}
		if err := fn(kind, payload); err != nil {
			var c *Corruption
			if !errors.As(err, &c) {
				err = &Corruption{File: name, Offset: int64(off), Why: err.Error()}
			}
			return 0, false, err
		}
		off += n
	}
	return int64(off), false, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Writer appends records to the last segment of a log and starts new ones.
// It is not safe for concurrent use. After a failed write or sync every
// later call returns the same error: what reached the file is unknown, so
// nothing more may be written after it.
type Writer struct {
	dir  string
	f    *os.File
	size int64 // bytes in f
	buf  []byte
	err  error
	// SegmentSize is the size past which Append starts a new segment.
	SegmentSize int64
}

// DefaultSegmentSize is the size at which a segment is closed.
const DefaultSegmentSize = 64 << 20

// OpenWriter returns a writer appending to dir's log after tail (what Replay
// returned): it cuts a torn tail, and starts the first segment at next if
// there is none.
func OpenWriter(dir string, tail Tail, next int64) (*Writer, error) {
	w := &Writer{dir: dir, SegmentSize: DefaultSegmentSize}
	if tail.Segment < 0 {
		if err := w.create(next); err != nil {
			return nil, err
		}
		return w, nil
	}
	name := filepath.Join(dir, SegmentName(tail.Segment))
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if tail.Size < headerSize {
		// Created but its header never reached the disk: start it again.
		if err := f.Truncate(0); err == nil {
			_, err = f.WriteAt(fileHeader(magicLog), 0)
		}
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		tail.Size = headerSize
	} else if tail.Torn {
		if err := f.Truncate(tail.Size); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
	}
	if _, err := f.Seek(tail.Size, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	w.f, w.size = f, tail.Size
	return w, nil
}

// create starts the segment of rev: written, synced, and its directory
// entry synced, before any record goes into it.
func (w *Writer) create(rev int64) error {
	name := filepath.Join(w.dir, SegmentName(rev))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(fileHeader(magicLog)); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = SyncDir(w.dir)
	}
	if err != nil {
		f.Close()
		return err
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f, w.size = f, headerSize
	return nil
}

// Append writes a record to the segment (to the operating system, not yet
// to stable storage: see Sync). next is the revision the first record after
// it will take; if the segment is past SegmentSize, the next record goes to
// a new segment named by it.
func (w *Writer) Append(kind Kind, payload []byte, next int64) error {
	if w.err != nil {
		return w.err
	}
	w.buf = appendFrame(w.buf[:0], kind, payload)
	n, err := w.f.Write(w.buf)
	w.size += int64(n)
	if err != nil {
		w.err = err
		return err
	}
	if w.size >= w.SegmentSize {
		if err := w.f.Sync(); err != nil {
			w.err = err
			return err
		}
		if err := w.create(next); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// Sync makes every record appended so far durable.
func (w *Writer) Sync() error {
	if w.err != nil {
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		w.err = err
	}
	return w.err
}

// Err returns the error that stopped the writer, if any.
func (w *Writer) Err() error { return w.err }

// Close closes the segment file; it does not sync.
func (w *Writer) Close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Current returns the first revision of the segment being written.
func (w *Writer) Current() (int64, error) {
	rev, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(w.f.Name()), logExt), 16, 64)
	return rev, err
}

// Rotate closes the current segment and starts one at rev, so that the
// segments before it can be removed once a snapshot covers them.
func (w *Writer) Rotate(rev int64) error {
	if w.err != nil {
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		w.err = err
		return err
	}
	if err := w.create(rev); err != nil {
		w.err = err
		return err
	}
	return nil
}

// RemoveBefore deletes the segments that end before rev: every segment but
// the one holding rev and those after it. The caller guarantees a durable
// snapshot covers everything below rev.
func RemoveBefore(dir string, rev int64) error {
	segs, err := Segments(dir)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(segs) && segs[i+1] <= rev; i++ {
		if err := os.Remove(filepath.Join(dir, SegmentName(segs[i]))); err != nil {
			return err
		}
	}
	return SyncDir(dir)
}

// SyncDir makes dir's entries (files created, renamed, removed) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
