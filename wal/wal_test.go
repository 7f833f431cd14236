package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/revkv/revkv/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testBatch(rev int64, n int) Batch {
	b := make(Batch, n)
	for i := range b {
		b[i] = Entry{Key: fmt.Sprint("k", rev+int64(i)), Op: 1, Rev: rev + int64(i), Sec: 1700000000 + rev, Nsec: 5, Zone: "Europe/Paris", Offset: 3600, Value: []byte(fmt.Sprint("v", rev))}
	}
	b[0].HasTTL, b[0].Expires = true, 1<<62
	return b
}

func TestPayloadsRoundTrip(t *testing.T) {
	b := testBatch(7, 3)
	b[2].Op, b[2].Value = 2, nil
	got, err := DecodeBatch(AppendBatch(nil, b))
	require.NoError(t, err)
	b[2].Value = []byte{}
	require.Equal(t, b, got)

	c := Compact{Rev: 9, Sec: -5, Nsec: 999999999}
	gc, err := DecodeCompact(AppendCompact(nil, c))
	require.NoError(t, err)
	require.Equal(t, c, gc)

	tr := Trim{Key: "", Lo: 12}
	gt, err := DecodeTrim(AppendTrim(nil, tr))
	require.NoError(t, err)
	require.Equal(t, tr, gt)

	// Every truncation of a payload is an error, never a panic.
	p := AppendBatch(nil, b)
	for i := range p {
		_, err := DecodeBatch(p[:i])
		require.Error(t, err, "truncated at %d", i)
	}
	_, err = DecodeBatch(append(p, 0))
	require.Error(t, err, "trailing byte")
	bad := testBatch(1, 2)
	bad[1].Rev = 5
	_, err = DecodeBatch(AppendBatch(nil, bad))
	require.ErrorContains(t, err, "not consecutive")
}

// writeLog writes n batch records, one revision each, rotating segments
// every few records, and returns the payloads.
func writeLog(t *testing.T, dir string, n int) [][]byte {
	t.Helper()
	w, err := OpenWriter(vfs.OS, dir, Tail{Segment: -1}, 1)
	require.NoError(t, err)
	w.SegmentSize = 200
	var ps [][]byte
	for rev := int64(1); rev <= int64(n); rev++ {
		p := AppendBatch(nil, testBatch(rev, 1))
		require.NoError(t, w.Append(KindBatch, p, rev+1))
		ps = append(ps, p)
	}
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	return ps
}

func replayAll(dir string) ([][]byte, Tail, error) {
	var got [][]byte
	tail, err := Replay(vfs.OS, dir, 0, func(k Kind, p []byte) error {
		if k != KindBatch {
			return fmt.Errorf("kind %d", k)
		}
		got = append(got, bytes.Clone(p))
		return nil
	})
	return got, tail, err
}

func TestLogReplaysInOrderAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	want := writeLog(t, dir, 40)
	segs, err := Segments(vfs.OS, dir)
	require.NoError(t, err)
	require.Greater(t, len(segs), 3, "rotation made several segments")
	got, tail, err := replayAll(dir)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.False(t, tail.Torn)

	// A writer reopened after the tail goes on appending.
	w, err := OpenWriter(vfs.OS, dir, tail, 41)
	require.NoError(t, err)
	p := AppendBatch(nil, testBatch(41, 1))
	require.NoError(t, w.Append(KindBatch, p, 42))
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	got, _, err = replayAll(dir)
	require.NoError(t, err)
	require.Equal(t, append(want, p), got)

	// LogBytes counts the segments Replay reads: from segs[2] on, the
	// segment that starts there and every later one.
	var sizes []int64
	for _, first := range segs {
		fi, err := os.Stat(filepath.Join(dir, SegmentName(first)))
		require.NoError(t, err)
		sizes = append(sizes, fi.Size())
	}
	for _, c := range []struct {
		from int64
		segs []int64 // the sizes it adds up
	}{{0, sizes}, {segs[2], sizes[2:]}, {segs[2] + 1, sizes[2:]}, {segs[len(segs)-1] + 100, sizes[len(sizes)-1:]}} {
		var want int64
		for _, n := range c.segs {
			want += n
		}
		got, err := LogBytes(vfs.OS, dir, c.from)
		require.NoError(t, err)
		require.Equal(t, want, got, "from %d", c.from)
	}
	n, err := LogBytes(vfs.OS, t.TempDir(), 1)
	require.NoError(t, err)
	require.Zero(t, n, "no log")

	// Skipping: segments wholly below from are not read.
	require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentName(segs[0])), []byte("garbage"), 0o644))
	_, err = Replay(vfs.OS, dir, segs[2], func(Kind, []byte) error { return nil })
	require.NoError(t, err, "the damaged first segment is below from")
}

// TestTornTailAtEveryByte cuts the last segment at every byte of its last
// record: Replay gives the records before it and Torn, changes nothing, and
// OpenWriter cuts the file back so that appending works.
func TestTornTailAtEveryByte(t *testing.T) {
	base := t.TempDir()
	want := writeLog(t, base, 6)
	segs, _ := Segments(vfs.OS, base)
	lastName := SegmentName(segs[len(segs)-1])
	full, err := os.ReadFile(filepath.Join(base, lastName))
	require.NoError(t, err)
	recLen := len(frameOf(want[len(want)-1]))
	for cut := len(full) - recLen + 1; cut < len(full); cut++ {
		dir := t.TempDir()
		copyDir(t, base, dir)
		name := filepath.Join(dir, lastName)
		require.NoError(t, os.WriteFile(name, full[:cut], 0o644))
		got, tail, err := replayAll(dir)
		require.NoError(t, err, "cut at %d", cut)
		require.True(t, tail.Torn)
		require.Equal(t, want[:len(want)-1], got)
		after, _ := os.ReadFile(name)
		require.Len(t, after, cut, "Replay changes nothing")

		w, err := OpenWriter(vfs.OS, dir, tail, 6)
		require.NoError(t, err)
		require.NoError(t, w.Append(KindBatch, want[len(want)-1], 7))
		require.NoError(t, w.Close())
		got, tail, err = replayAll(dir)
		require.NoError(t, err)
		require.False(t, tail.Torn)
		require.Equal(t, want, got)
	}
}

func frameOf(p []byte) []byte { return appendFrame(nil, KindBatch, p) }

func copyDir(t *testing.T, from, to string) {
	des, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(from, de.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, de.Name()), b, 0o644))
	}
}

// TestDamageIsCorrupt: a flipped byte anywhere but the last record, a bad
// header, or an unknown version is a *Corruption naming file and offset,
// and the files are left as they were.
func TestDamageIsCorrupt(t *testing.T) {
	base := t.TempDir()
	writeLog(t, base, 12)
	segs, _ := Segments(vfs.OS, base)
	for _, tc := range []struct {
		name string
		seg  int
		at   int
		want string
	}{
		{"payload byte of the first record", 0, headerSize + frameSize + 2, "checksum mismatch"},
		{"magic", 1, 0, "damaged header: its magic number reads \"2evkvlog\""},
		{"version", 0, 8, "damaged header: its format version reads 65"},
		{"version's high byte", 0, 10, "damaged header: its format version reads 4194305"},
		{"check", 0, 13, "damaged header"},
		{"magic, one byte", 0, 3, "damaged header: its magic number reads"},
		{"checksum of a middle record in the last segment", -1, headerSize + 5, "checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var name string
			if tc.seg < 0 { // one segment of three records: damage the first
				w, err := OpenWriter(vfs.OS, dir, Tail{Segment: -1}, 1)
				require.NoError(t, err)
				for rev := int64(1); rev <= 3; rev++ {
					require.NoError(t, w.Append(KindBatch, AppendBatch(nil, testBatch(rev, 1)), rev+1))
				}
				require.NoError(t, w.Close())
				name = filepath.Join(dir, SegmentName(1))
			} else {
				copyDir(t, base, dir)
				name = filepath.Join(dir, SegmentName(segs[tc.seg]))
			}
			b, _ := os.ReadFile(name)
			b[tc.at] ^= 0x40
			require.NoError(t, os.WriteFile(name, b, 0o644))
			_, _, err := replayAll(dir)
			var c *Corruption
			require.ErrorAs(t, err, &c)
			require.ErrorIs(t, err, ErrCorrupt)
			require.Equal(t, name, c.File)
			require.Contains(t, err.Error(), tc.want)
			after, _ := os.ReadFile(name)
			require.Equal(t, b, after, "nothing on disk changed")
		})
	}
}

func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	w, err := CreateSnapshot(vfs.OS, dir, 42, []byte("state"))
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, w.Add(KindKey, []byte{byte(i)}))
	}
	require.NoError(t, w.Commit())
	revs, err := Snapshots(vfs.OS, dir)
	require.NoError(t, err)
	require.Equal(t, []int64{42}, revs)
	var got []string
	require.NoError(t, ReadSnapshot(vfs.OS, dir, 42, func(k Kind, p []byte, _ int64) error {
		got = append(got, fmt.Sprint(k, p))
		return nil
	}))
	require.Equal(t, []string{"5 [115 116 97 116 101]", "4 [0]", "4 [1]", "4 [2]"}, got)

	// Every truncation and every flipped byte is a *Corruption.
	name := filepath.Join(dir, SnapshotName(42))
	full, _ := os.ReadFile(name)
	for i := range full {
		for _, b := range [][]byte{full[:i], flip(full, i)} {
			require.NoError(t, os.WriteFile(name, b, 0o644))
			err := ReadSnapshot(vfs.OS, dir, 42, func(Kind, []byte, int64) error { return nil })
			require.ErrorIs(t, err, ErrCorrupt, "at %d", i)
		}
	}

	// An aborted snapshot leaves nothing; RemoveSnapshotsBefore clears the
	// temporary file a crash leaves and the older snapshots.
	a, err := CreateSnapshot(vfs.OS, dir, 50, nil)
	require.NoError(t, err)
	a.Abort()
	_, err = CreateSnapshot(vfs.OS, dir, 60, nil) // "crashes" before Commit
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(name, full, 0o644))
	require.NoError(t, RemoveSnapshotsBefore(vfs.OS, dir, 42))
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	require.Equal(t, []string{name}, left)
	require.NoError(t, RemoveSnapshotsBefore(vfs.OS, dir, 42))
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1
	return c
}

func TestRemoveBefore(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 40)
	segs, _ := Segments(vfs.OS, dir)
	require.NoError(t, RemoveBefore(vfs.OS, dir, segs[2]+1))
	left, _ := Segments(vfs.OS, dir)
	require.Equal(t, segs[2:], left, "the segment holding rev and those after stay")
}

// TestWriterFailsForever: after a failed write the writer returns that
// error to every call.
func TestWriterFailsForever(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(vfs.OS, dir, Tail{Segment: -1}, 1)
	require.NoError(t, err)
	w.f.Close() // every write now fails
	w.buf = w.buf[:0]
	err = w.Append(KindBatch, []byte("x"), 2)
	require.Error(t, err)
	require.Equal(t, err, w.Append(KindBatch, []byte("y"), 2))
	require.Equal(t, err, w.Sync())
	require.Equal(t, err, w.Err())
}

// TestFlushDuringCut: while a rotation is under way Flush waits for it,
// and the records buffered after the Cut land in the new segment, after
// those before it.
func TestFlushDuringCut(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(vfs.OS, dir, Tail{Segment: -1}, 1)
	require.NoError(t, err)
	before, after := AppendBatch(nil, testBatch(1, 1)), AppendBatch(nil, testBatch(2, 1))
	w.Buffer(KindBatch, before)
	c := w.Cut()
	w.Buffer(KindBatch, after)
	flushed := make(chan int)
	go func() {
		n, err := w.Flush()
		assert.NoError(t, err)
		flushed <- n
	}()
	select {
	case <-flushed:
		t.Fatal("Flush did not wait for the rotation")
	case <-time.After(20 * time.Millisecond):
	}
	require.NoError(t, c.Rotate(2))
	require.Equal(t, FrameSize(len(after)), <-flushed)
	n, err := w.Flush()
	require.NoError(t, err)
	require.Zero(t, n, "nothing left")
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())

	segs, err := Segments(vfs.OS, dir)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, segs)
	got, _, err := replayAll(dir)
	require.NoError(t, err)
	require.Equal(t, [][]byte{before, after}, got)
}

// FuzzReplay: any bytes as the only segment replay without a panic, to
// whole records, a torn tail with no whole record after its start, or a
// *Corruption.
func FuzzReplay(f *testing.F) {
	dir := f.TempDir()
	writeLog(&testing.T{}, dir, 3)
	segs, _ := Segments(vfs.OS, dir)
	for _, s := range segs {
		b, _ := os.ReadFile(filepath.Join(dir, SegmentName(s)))
		f.Add(b)
	}
	f.Add([]byte("revkvlog"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentName(1)), data, 0o644))
		tail, err := Replay(vfs.OS, dir, 0, func(k Kind, p []byte) error {
			if k == KindBatch {
				_, err := DecodeBatch(p)
				return err
			}
			return nil
		})
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		require.LessOrEqual(t, tail.Size, int64(len(data)))
		end := len(data)
		if hasRoom(int64(end)) {
			end = len(bytes.TrimRight(data, "\x00")) // the end of a file with room
		}
		if tail.Zeros {
			require.False(t, tail.Torn)
			require.LessOrEqual(t, end, int(max(tail.Size, 0)), "only zeros after the whole records")
			return
		}
		if !tail.Torn {
			require.Equal(t, int64(len(data)), tail.Size, "whole records to the end")
			return
		}
		// A torn tail: no run of whole records, one after another, goes
		// from anywhere after its start to the end of the file, or to
		// where only zeros follow. Checked plainly here, record by record
		// from every offset.
		for o := int(tail.Size) + 1; o+frameSize <= len(data); o++ {
			p := o
			for p < len(data) {
				_, _, n, st := parseFrame(data[p:])
				if st != frameOK || !logKind(Kind(data[p+8])) {
					break
				}
				p += n
			}
			require.False(t, p > o && p >= end, "whole records from %d to the end after a torn tail at %d", o, tail.Size)
		}
	})
}

// TestDamagedLengthIsCorrupt flips each bit of each record's length in a
// log of four segments, the last of four records. Before the last record of the last segment that
// is a *Corruption at the record, whether the length now runs past the end
// of the file, falls short of the record, or cannot be a record's: the
// whole records after it say it is no torn write. In the last record it
// is a torn tail, and Replay gives every record before it. With -short,
// one bit in three.
func TestDamagedLengthIsCorrupt(t *testing.T) {
	base, want := lastHolds(t, 12, 4)
	segs, _ := Segments(vfs.OS, base)
	require.Greater(t, len(segs), 2)
	for _, room := range []bool{false, true} {
		t.Run(fmt.Sprintf("room=%v", room), func(t *testing.T) { damagedLengths(t, base, want, room) })
	}
}

// damagedLengths is TestDamagedLengthIsCorrupt of the log in base, with
// room (zeros to a multiple of vfs.RoomAlign) after the last record of
// its last segment: the room a mapped log had allocated when a crash
// stopped it.
func damagedLengths(t *testing.T, base string, want [][]byte, room bool) {
	segs, _ := Segments(vfs.OS, base)
	n := 0 // records in the segments before
	for si, first := range segs {
		name := SegmentName(first)
		full, err := os.ReadFile(filepath.Join(base, name))
		require.NoError(t, err)
		var offs []int
		for off := headerSize; off < len(full); off += FrameSize(int(binary.LittleEndian.Uint32(full[off:]))) {
			offs = append(offs, off)
		}
		for i, off := range offs {
			for bit := range 32 {
				if testing.Short() && bit%3 != 0 {
					continue
				}
				dir := t.TempDir()
				copyDir(t, base, dir)
				path := filepath.Join(dir, name)
				b := bytes.Clone(full)
				b[off+bit/8] ^= 1 << (bit % 8)
				if si == len(segs)-1 && room {
					b = append(b, make([]byte, vfs.RoomAlign-len(b)%vfs.RoomAlign)...)
				}
				require.NoError(t, os.WriteFile(path, b, 0o644))
				got, tail, err := replayAll(dir)
				what := fmt.Sprintf("segment %d, record %d, bit %d", si, i, bit)
				if si == len(segs)-1 && i == len(offs)-1 {
					require.NoError(t, err, what)
					require.True(t, tail.Torn, what)
					require.Equal(t, want[:len(want)-1], got, what)
					continue
				}
				var c *Corruption
				require.ErrorAs(t, err, &c, what)
				require.Equal(t, path, c.File, what)
				require.Equal(t, int64(off), c.Offset, what)
				after, _ := os.ReadFile(path)
				require.Equal(t, b, after, "%s: nothing on disk changed", what)
			}
		}
		n += len(offs)
	}
}

// TestCutLog: cutting a log of several segments at a damaged record keeps
// the records before it, moves the rest of its segment and every later
// segment aside, and a writer goes on after it.
func TestCutLog(t *testing.T) {
	dir := t.TempDir()
	want := writeLog(t, dir, 12)
	segs, _ := Segments(vfs.OS, dir)
	require.Greater(t, len(segs), 2)
	name := filepath.Join(dir, SegmentName(segs[1]))
	b, _ := os.ReadFile(name)
	off := headerSize + len(frameOf(want[segs[1]-1])) // its second record
	b[off+5] ^= 1
	require.NoError(t, os.WriteFile(name, b, 0o644))
	_, _, err := replayAll(dir)
	var c *Corruption
	require.ErrorAs(t, err, &c)
	require.Equal(t, int64(off), c.Offset)

	tail, err := CutLog(vfs.OS, dir, c)
	require.NoError(t, err)
	require.Equal(t, Tail{Segment: segs[1], Size: int64(off)}, tail)
	left, _ := Segments(vfs.OS, dir)
	require.Equal(t, segs[:2], left)
	aside, _ := os.ReadFile(name + ".damaged")
	require.Equal(t, b[off:], aside)
	for _, s := range segs[2:] {
		_, err := os.Stat(filepath.Join(dir, SegmentName(s)+".damaged"))
		require.NoError(t, err, "segment %d moved aside", s)
	}
	kept := int(segs[1]) // the records of revisions 1..segs[1]
	got, _, err := replayAll(dir)
	require.NoError(t, err)
	require.Equal(t, want[:kept], got)

	w, err := OpenWriter(vfs.OS, dir, tail, int64(kept)+1)
	require.NoError(t, err)
	require.NoError(t, w.Append(KindBatch, want[kept], int64(kept)+2))
	require.NoError(t, w.Close())
	got, _, err = replayAll(dir)
	require.NoError(t, err)
	require.Equal(t, want[:kept+1], got)

	_, err = CutLog(vfs.OS, dir, &Corruption{File: filepath.Join(dir, SnapshotName(3))})
	require.ErrorIs(t, err, ErrCorrupt, "not a segment: returned as it is")
}

// TestKeyFlags round-trips a key record's flags (trimmed, sealed with its
// floor) and refuses flags it does not know; a record from before the
// sealed flag (byte 0 or 1, no floor) reads as it always did.
func TestKeyFlags(t *testing.T) {
	for _, k := range []Key{
		{Key: "a", Dropped: 3},
		{Key: "b", Trimmed: true, Dropped: 7},
		{Key: "c", Sealed: true},
		{Key: "d", Trimmed: true, Sealed: true, Lo: 42, Dropped: 9},
	} {
		k.Entries = []Entry{{Key: k.Key, Op: 1, Rev: 50, Sec: 1, Value: []byte("v")}}
		var got Key
		require.NoError(t, DecodeKeyInto(&got, AppendKey(nil, &k)))
		require.Equal(t, k, got)
	}
	p := AppendKey(nil, &Key{Key: "e", Entries: []Entry{{Key: "e", Op: 1, Rev: 1, Value: []byte{}}}})
	p[2] = 4 // the flags byte, after the key's length and its one byte
	require.Error(t, DecodeKeyInto(&Key{}, p), "an unknown flag")
}

// TestHeaderTellsDamageFromNewer: a header of a newer format (its version
// above this build's, its check matching) says so; a flipped bit in the
// version or the check is a damaged header, never "upgrade"; bytes that
// are not our magic are not a revkv file.
func TestHeaderTellsDamageFromNewer(t *testing.T) {
	header := func(v, check uint32) []byte {
		h := []byte(magicLog + "\x00\x00\x00\x00\x00\x00\x00\x00")
		binary.LittleEndian.PutUint32(h[8:], v)
		binary.LittleEndian.PutUint32(h[12:], check)
		return h
	}
	require.NoError(t, checkHeader(fileHeader(magicLog), magicLog))
	require.NoError(t, checkHeader(header(1, 0), magicLog))
	for _, tc := range []struct {
		name string
		h    []byte
		want string
	}{
		{"newer", header(2, ^uint32(2)), "format version 2, written by a newer revkv: this build reads version 1"},
		{"bit in the version", header(65537, 0), "damaged header: its format version reads 65537"},
		{"bit in the check", header(1, 4), "damaged header"},
		{"newer without its check", header(2, 0), "damaged header"},
		{"zero", header(0, 0), "damaged header"},
		{"text", []byte("hello, world, this is text"), "not a revkv log file"},
		{"short", []byte("revkv"), "not a revkv log file (5 bytes, shorter than a header)"},
	} {
		err := checkHeader(tc.h, magicLog)
		require.ErrorContains(t, err, tc.want, tc.name)
		if !strings.Contains(tc.want, "newer") {
			require.NotContains(t, err.Error(), "newer", tc.name)
		}
	}
}
