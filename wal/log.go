package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/revkv/revkv/vfs"
)

// A log is a sequence of segment files in one directory, each named by
// the first revision it may hold (16 hex digits, ".log"): a segment holds
// the records written from that revision until the next segment's. Only the
// last segment is ever written to; a crash can leave it with a torn tail,
// which Replay reports and OpenWriter cuts. See Replay for what is torn and
// what is damage.

const logExt = ".log"

// SegmentName is the file name of the segment starting at rev.
func SegmentName(rev int64) string { return fmt.Sprintf("%016x%s", rev, logExt) }

// Segments returns the first revisions of dir's segments, in order.
func Segments(fs vfs.FS, dir string) ([]int64, error) {
	return listFiles(fs, dir, logExt)
}

func listFiles(fs vfs.FS, dir, ext string) ([]int64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var revs []int64
	for _, n := range names {
		name, ok := strings.CutSuffix(n, ext)
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
	// Frame is true when the record's frame itself is damaged (a length,
	// a checksum), false when a whole record's content was refused (a
	// value the codec cannot decode, revisions out of order): only the
	// first is damage a repair may cut away.
	Frame bool
	// Newer is true when the file is of a newer format than this build
	// reads (its header says so, with its check): not damage.
	Newer bool
}

func (c *Corruption) Error() string {
	return fmt.Sprintf("%s at offset %d: %s: %s", c.File, c.Offset, ErrCorrupt, c.Why)
}

func (c *Corruption) Unwrap() error { return ErrCorrupt }

// Tail is where Replay found the log to end: the last segment and the
// length of its whole records. Torn is true when bytes after that are the
// torn tail of a crash in the middle of a write (see Replay); Zeros, when
// only zeros follow them: the room a log written through a mapping had
// allocated ahead when a crash stopped it (vfs.MapAppend), which held
// nothing. End is where the file's bytes end, that room left out: the
// torn tail is the bytes from Size to End.
type Tail struct {
	Segment int64 // first revision of the last segment; -1 if there is none
	Size    int64 // the length of the whole records in it, header included
	End     int64
	Torn    bool
	Zeros   bool
}

// Replay reads every record of dir's log, segment by segment, and calls fn
// with each; fn's error stops it and is returned. Records in segments whose
// successor starts at or below from are skipped without being read. It
// changes nothing on disk.
//
// Only the end of the last segment can be torn: the records of the write a
// crash interrupted, cut anywhere, perhaps followed by zeros or garbage
// where the file system extended the file but lost the data. Replay calls
// a bad record there (cut short, a length no record has, a checksum that
// does not match) torn unless whole records (frames of a log's kind whose
// length fits and whose checksum matches), one after another, run from
// somewhere after it to exactly the end of the file: it stops before it
// and says so in Tail. Every other bad record is damage, a *Corruption
// naming the file and the record's offset: one in a segment before the
// last, and one in the last segment followed by whole records to the end,
// as a flipped bit in a length or a damaged run in the middle leaves it. A
// single whole record is not enough: a torn record's value may hold the
// bytes of one. Looking for that run reads the rest of the file into
// memory and takes time linear in its length (see findTail); a file that
// ends after its last whole record, as every cleanly closed one does,
// costs nothing more. Damage in the middle and a torn tail together (a
// crash after the damage) look like a torn write at the damage: Replay
// stops there.
//
// So a record damaged after it was synced is reported, however its length
// was changed, unless nothing whole follows it: damage to the last record,
// or reaching from a record to the end of the file, cannot be told from a
// torn write, and is cut. A crash that left a hole in the middle of one
// interrupted write (zeros where the file system had not written a page of
// it back, with whole records after them) is reported as damage too: the
// records after the hole were never synced, but Replay cannot know it.
//
// A log written through a mapping (vfs.MapAppend) has room allocated past
// its last record, zeros to a length that is a multiple of vfs.RoomAlign,
// which Close cuts off and a crash leaves in the last segment (a rotation
// cuts a segment's room before the sync that closes it). So in the last
// segment, when its length is such a multiple, the end of the file, above,
// is its last byte that is not zero; zeros alone after the last whole
// record are no record at all: Replay stops there and says so in
// Tail.Zeros (OpenWriter cuts them), and zeros where the header should be,
// after part of it or none, are an empty segment.
func Replay(fs vfs.FS, dir string, from int64, fn func(kind Kind, payload []byte) error) (Tail, error) {
	segs, err := Segments(fs, dir)
	tail := Tail{Segment: -1}
	if err != nil {
		return tail, err
	}
	for i, first := range segs {
		last := i == len(segs)-1
		if !holds(segs, i, from) {
			continue
		}
		name := filepath.Join(dir, SegmentName(first))
		f, err := fs.OpenRead(name)
		if err != nil {
			return tail, err
		}
		t, err := replaySegment(name, newFrameReader(f), last, fn)
		f.Close()
		if err != nil {
			return tail, err
		}
		t.Segment = first
		tail = t
	}
	return tail, nil
}

// holds says whether segment i of segs may hold revisions from from on:
// it is the last, or its successor starts after from.
func holds(segs []int64, i int, from int64) bool {
	return i == len(segs)-1 || segs[i+1] > from
}

// LogBytes returns the size of the segments Replay would read from from
// on: a measure of how much the log holds beyond a snapshot, known before
// reading it (after a crash, with the room of a mapped last segment).
func LogBytes(fs vfs.FS, dir string, from int64) (int64, error) {
	segs, err := Segments(fs, dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for i, first := range segs {
		if holds(segs, i, from) {
			size, err := fs.Size(filepath.Join(dir, SegmentName(first)))
			if err != nil {
				return 0, err
			}
			n += size
		}
	}
	return n, nil
}

// replaySegment replays one segment and returns where it ends (Tail's
// Size, Torn and Zeros).
func replaySegment(name string, fr *frameReader, last bool, fn func(Kind, []byte) error) (Tail, error) {
	readErr := func(err error) (Tail, error) { return Tail{}, fmt.Errorf("reading %s: %w", name, err) }
	if err := fr.fill(headerSize); err != nil {
		return readErr(err)
	}
	if h := fr.available(); len(h) < headerSize && last {
		// A crash while the segment was being created: nothing was in it.
		return Tail{End: int64(len(h)), Torn: len(h) > 0}, nil
	}
	if err := checkHeader(fr.available(), magicLog); err != nil {
		if last {
			// Zeros where the header should be, after as much of it as
			// reached the disk: a crash while a mapped segment was being
			// created, its room allocated but its header lost.
			rest, rerr := fr.rest()
			if rerr != nil {
				return readErr(rerr)
			}
			h := fileHeader(magicLog)
			k := 0
			for k < len(h) && k < len(rest) && rest[k] == h[k] {
				k++
			}
			if hasRoom(int64(len(rest))) && len(bytes.TrimRight(rest[k:], "\x00")) == 0 {
				return Tail{End: int64(k), Torn: k > 0, Zeros: k == 0}, nil
			}
		}
		return Tail{}, headerCorruption(name, err)
	}
	fr.skip(headerSize)
	for {
		off := fr.offset()
		kind, payload, n, st, err := fr.next()
		if err != nil {
			return readErr(err)
		}
		if st == frameShort && len(fr.available()) == 0 {
			return Tail{Size: off, End: off}, nil // the end of the file
		}
		if st != frameOK {
			why := map[frameStatus]string{frameShort: "the record runs past the end of the file", frameBadCRC: "checksum mismatch", frameBadLength: "impossible record length"}[st]
			if !last {
				return Tail{}, &Corruption{File: name, Offset: off, Why: why, Frame: true}
			}
			rest, err := fr.rest()
			if err != nil {
				return readErr(err)
			}
			end := len(rest)
			if hasRoom(off + int64(len(rest))) {
				end = len(bytes.TrimRight(rest, "\x00"))
			}
			if end == 0 {
				return Tail{Size: off, End: off, Zeros: true}, nil
			}
			// A torn write, or damage? Damage leaves whole records after
			// it, to the end of the file.
			if at := findTail(rest, 1, end); at >= 0 {
				why += fmt.Sprintf(", and whole records follow from offset %d to the end of the file: not a torn write", off+int64(at))
				return Tail{}, &Corruption{File: name, Offset: off, Why: why, Frame: true}
			}
			return Tail{Size: off, End: off + int64(end), Torn: true}, nil
		}
		if err := fn(kind, payload); err != nil {
			var c *Corruption
			if !errors.As(err, &c) {
				err = &Corruption{File: name, Offset: off, Why: err.Error()}
			}
			return Tail{}, err
		}
		fr.skip(n)
	}
}

// hasRoom reports whether a file of length n may have room past its
// records (see Replay).
func hasRoom(n int64) bool { return n > 0 && n%vfs.RoomAlign == 0 }

// Writer appends records to the last segment of a log and starts new ones.
// Its methods may be called from many goroutines: records reach the file
// in the order Buffer (or Append) took them, whichever goroutine's Flush
// writes them, so one goroutine may buffer under its own lock while
// another writes. After a failed write or sync every later call returns
// the same error: what reached the file is unknown, so nothing more may be
// written after it.
//
// Locks, in the order they are taken: wmu, then bufMu or syncMu.
type Writer struct {
	fs  vfs.FS
	dir string
	f   vfs.File // written under wmu; replaced under wmu and syncMu

	// bufMu guards buf: records buffered for the next Flush. It is held
	// only to append to buf or to swap it out.
	bufMu sync.Mutex
	buf   []byte
	// wmu is held across taking buf and writing it, so that flushes write
	// in the order they took their records; and across a segment switch.
	// It guards spare (the buffer the last Flush wrote, reused) and size.
	wmu   sync.Mutex
	spare []byte
	// syncMu is held across an fsync and across a segment switch, so that
	// a Sync never meets a file Rotate closed, while a Sync and a write to
	// the file may run together.
	syncMu sync.Mutex
	err    atomic.Pointer[error]
	// dirty is set by each write and cleared by the Sync that covers it,
	// so that a Sync with nothing new to sync costs nothing.
	dirty atomic.Bool
	// size is the length of the segment, buffered records excluded.
	size int64
	// SegmentSize is the size past which Append starts a new segment.
	SegmentSize int64
}

// DefaultSegmentSize is the size at which a segment is closed.
const DefaultSegmentSize = 64 << 20

// OpenWriter returns a writer appending to dir's log after tail (what Replay
// returned): it cuts a torn tail, and starts the first segment at next if
// there is none.
func OpenWriter(fs vfs.FS, dir string, tail Tail, next int64) (*Writer, error) {
	w := &Writer{fs: fs, dir: dir, SegmentSize: DefaultSegmentSize}
	if tail.Segment < 0 {
		if err := w.create(next); err != nil {
			return nil, err
		}
		return w, nil
	}
	name := filepath.Join(dir, SegmentName(tail.Segment))
	f, err := fs.OpenAppend(name)
	if err != nil {
		return nil, err
	}
	if tail.Size < headerSize {
		// Created but its header never reached the disk: start it again.
		// No sync: until one covers it (the first drain's, a rotation's or
		// Close's), a crash leaves either the old bytes, fewer than a
		// header (an empty segment to Replay), or a prefix of what is
		// written from now on.
		err = f.Truncate(0)
		if err == nil {
			_, err = f.Write(fileHeader(magicLog))
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		w.dirty.Store(true)
		tail.Size = headerSize
	} else if tail.Torn || tail.Zeros {
		if err := f.Truncate(tail.Size); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
	}
	w.f, w.size = vfs.MapAppend(f, tail.Size), tail.Size
	return w, nil
}

// create starts the segment of rev: its header written and its directory
// entry synced before any record goes into it. The header is synced with
// the first records: until then a crash leaves the file empty or shorter
// than a header, which Replay reads as an empty segment. The caller holds
// wmu and syncMu, or is the only user.
func (w *Writer) create(rev int64) error {
	name := filepath.Join(w.dir, SegmentName(rev))
	f, err := w.fs.Create(name)
	if err != nil {
		return err
	}
	if _, err = f.Write(fileHeader(magicLog)); err == nil {
		err = w.fs.SyncDir(w.dir)
	}
	if err != nil {
		f.Close()
		return err
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f, w.size = vfs.MapAppend(f, headerSize), headerSize
	w.dirty.Store(true) // the old segment was synced by Rotate; the new one's header waits for a sync
	return nil
}

func (w *Writer) fail(err error) error {
	w.err.CompareAndSwap(nil, &err)
	return *w.err.Load()
}

// Err returns the error that stopped the writer, if any.
func (w *Writer) Err() error {
	if e := w.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Buffer adds a record to those the next Flush writes.
func (w *Writer) Buffer(kind Kind, payload []byte) {
	w.bufMu.Lock()
	w.buf = appendFrame(w.buf, kind, payload)
	w.bufMu.Unlock()
}

// BufferBatch is Buffer of a KindBatch record of b, encoded straight into
// the buffer.
func (w *Writer) BufferBatch(b Batch) {
	w.bufMu.Lock()
	w.buf = appendFrameFunc(w.buf, KindBatch, func(dst []byte) []byte { return AppendBatch(dst, b) })
	w.bufMu.Unlock()
}

// BufferChained is Buffer of a KindChained record of c, encoded straight
// into the buffer.
func (w *Writer) BufferChained(c *Chained) {
	w.bufMu.Lock()
	w.buf = appendFrameFunc(w.buf, KindChained, func(dst []byte) []byte { return AppendChained(dst, c) })
	w.bufMu.Unlock()
}

// FrameSize is the number of bytes a record of n payload bytes takes.
func FrameSize(n int) int { return frameSize + n }

// Buffered returns the number of bytes buffered.
func (w *Writer) Buffered() int {
	w.bufMu.Lock()
	defer w.bufMu.Unlock()
	return len(w.buf)
}

// Flush writes the buffered records to the segment (to the operating system,
// not yet to stable storage: see Sync) and returns how many bytes it wrote.
func (w *Writer) Flush() (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.flushLocked()
}

// flushLocked is Flush for a caller holding wmu.
func (w *Writer) flushLocked() (int, error) {
	w.bufMu.Lock()
	b := w.buf
	w.buf = w.spare[:0]
	w.bufMu.Unlock()
	w.spare = b
	return w.writeLocked(b)
}

// writeLocked writes records to the segment, for a caller holding wmu.
func (w *Writer) writeLocked(b []byte) (int, error) {
	if err := w.Err(); err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, nil
	}
	n, err := w.f.Write(b)
	w.size += int64(n)
	w.dirty.Store(true)
	if err != nil {
		return n, w.fail(err)
	}
	return n, nil
}

// Append writes one record and what was buffered before it. next is the
// revision the first record after it will take: if the segment is past
// SegmentSize, the next records go to a new segment named by it.
func (w *Writer) Append(kind Kind, payload []byte, next int64) error {
	w.Buffer(kind, payload)
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if _, err := w.flushLocked(); err != nil {
		return err
	}
	if w.size >= w.SegmentSize {
		return w.rotateLocked(next)
	}
	return nil
}

// Sync makes every record flushed so far durable. It may run beside the
// other methods.
func (w *Writer) Sync() error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if err := w.Err(); err != nil {
		return err
	}
	if w.f == nil {
		return os.ErrClosed
	}
	if !w.dirty.Swap(false) {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return w.fail(err)
	}
	return nil
}

// Close closes the segment file; it neither writes what is buffered nor syncs.
func (w *Writer) Close() error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// A Cut is a rotation begun: the records buffered when it was made go to
// the current segment, and those buffered after it to the next, which
// Rotate starts. Nothing is written between Cut and Rotate, so a caller
// that buffers under its own lock can make the Cut under it, release it,
// and sync the old segment without holding up its writers; no record of
// the next segment is written before the old one is synced, so a crash
// never keeps a later record without an earlier one.
type Cut struct {
	w   *Writer
	old []byte
}

// Cut begins a rotation: see Cut. Until its Rotate, flushes wait.
func (w *Writer) Cut() *Cut {
	w.wmu.Lock()
	w.bufMu.Lock()
	old := w.buf
	w.buf = w.spare[:0]
	w.bufMu.Unlock()
	w.spare = nil
	return &Cut{w: w, old: old}
}

// Rotate writes the cut's records to the current segment, syncs it, and
// starts the segment of rev, so that the segments before it can be removed
// once a snapshot covers them. It must be called once; the caller
// guarantees no record it cut is at or above rev.
func (c *Cut) Rotate(rev int64) error {
	w := c.w
	defer w.wmu.Unlock()
	w.spare = c.old
	if _, err := w.writeLocked(c.old); err != nil {
		return err
	}
	return w.rotateLocked(rev)
}

// rotateLocked is Rotate, after the flush, for a caller holding wmu.
func (w *Writer) rotateLocked(rev int64) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if err := w.Err(); err != nil {
		return err
	}
	// Cut the room a mapped segment has past its records before the sync,
	// so that the sync makes the segment's length durable with them: only
	// the last segment may end in room after a crash (see Replay).
	if err := w.f.Truncate(w.size); err != nil {
		return w.fail(err)
	}
	if err := w.f.Sync(); err != nil {
		return w.fail(err)
	}
	if err := w.create(rev); err != nil {
		return w.fail(err)
	}
	return nil
}

// RemoveBefore deletes the segments that end before rev: every segment but
// the one holding rev and those after it. The caller guarantees a durable
// snapshot covers everything below rev, and syncs dir to make the removals
// durable (once for this and RemoveSnapshotsBefore).
func RemoveBefore(fs vfs.FS, dir string, rev int64) error {
	segs, err := Segments(fs, dir)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(segs) && segs[i+1] <= rev; i++ {
		if err := fs.Remove(filepath.Join(dir, SegmentName(segs[i]))); err != nil {
			return err
		}
	}
	return nil
}

// Current returns the first revision of the segment being written.
func (w *Writer) Current() (int64, error) {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	return strconv.ParseInt(strings.TrimSuffix(filepath.Base(w.f.Name()), logExt), 16, 64)
}
