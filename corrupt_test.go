package revkv_test

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
	"github.com/revkv/revkv/wal"
)

var corruptFull = flag.Bool("corrupt.full", false, "TestCorrupt*: damage every byte of every file, not a window")

// The tests of this file damage logs and snapshots: their stores are
// unsealed (WithMemory(-1)), so that Close leaves the log they damage.
// FuzzOpenSealed and TestSealedDamage damage segments and manifests.

// damageBase is a closed store on a Mem directory, and what it holds: the
// revisions of checkCrashHistory's workload, synced one write at a time.
type damageBase struct {
	m    *vfs.Mem
	rev  int64 // the last revision written, all of them acknowledged
	snap int64 // the revision of the snapshot, 0 if none
	seg  string
	log  []byte  // the last (only) segment
	recs []int   // the offsets of its records
	ends []int64 // the last revision of each record
}

// newDamageBase writes revs revisions under SyncAlways (single Puts, and an
// Update of three keys every fifth write, each value naming its batch's
// first revision), with a checkpoint after ckpt of them if ckpt > 0, and
// closes the store.
func newDamageBase(t testing.TB, revs, ckpt int64) *damageBase {
	m := vfs.NewMem()
	s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithMemory(-1)) // unsealed: its log stays
	require.NoError(t, err)
	b := &damageBase{m: m}
	for i := 0; int64(s.Rev()) < revs; i++ {
		if ckpt > 0 && b.snap == 0 && int64(s.Rev()) >= ckpt {
			require.NoError(t, s.Checkpoint())
			b.snap = int64(s.Rev())
		}
		_, err = writeNext(s, i%5 == 4)
		require.NoError(t, err)
	}
	b.rev = int64(s.Rev())
	require.NoError(t, s.Close())
	segs, err := wal.Segments(m, "/db")
	require.NoError(t, err)
	require.Len(t, segs, 1)
	b.seg = "/db/" + wal.SegmentName(segs[0])
	b.log = m.Bytes(b.seg)
	b.recs = recordOffsets(b.log)
	for _, off := range b.recs {
		n := binary.LittleEndian.Uint32(b.log[off:])
		batch, err := wal.DecodeEntries(wal.Kind(b.log[off+8]), b.log[off+9:off+9+int(n)])
		require.NoError(t, err)
		b.ends = append(b.ends, batch[len(batch)-1].Rev)
	}
	require.Equal(t, b.rev, b.ends[len(b.ends)-1])
	return b
}

// recordOffsets returns where the records of a log or snapshot file start,
// after its 16-byte header: each is a 4-byte length, a 4-byte checksum, a
// kind byte and length bytes of payload.
func recordOffsets(b []byte) []int {
	var offs []int
	for off := 16; off+9 <= len(b); off += 9 + int(binary.LittleEndian.Uint32(b[off:])) {
		offs = append(offs, off)
	}
	return offs
}

// recordAt returns the index of the record holding byte at, -1 for the
// file header.
func recordAt(offs []int, at int) int {
	i, found := slices.BinarySearch(offs, at)
	if !found {
		i--
	}
	return i
}

// firstDiff returns the first offset where a and b differ, or len(a) if b
// extends a, or -1 if they are equal.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) == len(b) {
		return -1
	}
	return min(len(a), len(b))
}

// openDamaged replaces file by data in a copy of base's directory and
// opens it. It returns the store's revision, after checking the store
// (Check) and its history (checkCrashHistory), or the error, which must be
// ErrCorrupt; then no file of the directory has changed.
func openDamaged(t *testing.T, m *vfs.Mem, file string, data []byte) (int64, error) {
	t.Helper()
	c := m.Crash(nil)
	c.WriteFile(file, data)
	before := dirBytes(t, c)
	s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(c), revkv.WithMemory(-1))
	if err != nil {
		require.True(t, errors.Is(err, revkv.ErrCorrupt), "not ErrCorrupt: %v", err)
		require.Equal(t, before, dirBytes(t, c), "a refused Open changes nothing on disk")
		return 0, err
	}
	defer s.Close()
	require.NoError(t, s.Check())
	checkCrashHistory(t, s)
	return int64(s.Rev()), nil
}

func dirBytes(t *testing.T, m *vfs.Mem) map[string][]byte {
	names, err := m.List("/db")
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, n := range names {
		files[n] = m.Bytes("/db/" + n)
	}
	return files
}

// requireCorruptAt checks that err is ErrCorrupt naming file and offset,
// in one sentence.
func requireCorruptAt(t *testing.T, err error, file string, off int, what string) {
	t.Helper()
	require.Error(t, err, "%s: Open succeeded", what)
	require.True(t, errors.Is(err, revkv.ErrCorrupt), "%s: %v", what, err)
	msg := err.Error()
	require.Contains(t, msg, fmt.Sprintf("%s at offset %d:", file, off), "%s: the error names the file and offset", what)
	require.NotContains(t, msg, "\n", what)
}

// checkLogDamage opens base with its log replaced by data, whose first
// damaged byte is at, and checks the rule: damage before the last record
// is ErrCorrupt at the damaged record; damage to the last record only (the
// data holds every record before it whole) is a torn tail, cut back;
// bytes after the last record are a torn tail too, and leave every
// revision. tornOK says the damage reaches the end of the file without a
// whole record after it, so that Open may also take it for a torn tail
// starting at the damaged record.
func (b *damageBase) checkLogDamage(t *testing.T, data []byte, what string, tornOK bool) {
	t.Helper()
	at := firstDiff(b.log, data)
	rev, err := openDamaged(t, b.m, b.seg, data)
	last := len(b.recs) - 1
	switch i := recordAt(b.recs, at); {
	case at < 0 || at >= len(b.log):
		require.NoError(t, err, what)
		require.Equal(t, b.rev, rev, "%s: every revision", what)
	case i == last || tornOK && i >= 0:
		if err != nil && i < last {
			requireCorruptAt(t, err, b.seg, b.recs[i], what)
			return
		}
		require.NoError(t, err, "%s: a torn tail", what)
		require.Equal(t, b.revBefore(i), rev, "%s: cut back to the record at %d", what, b.recs[i])
	default:
		off := 0
		if i >= 0 {
			off = b.recs[i]
		}
		requireCorruptAt(t, err, b.seg, off, what)
	}
}

// revBefore returns the last revision before record i.
func (b *damageBase) revBefore(i int) int64 {
	if i == 0 {
		return b.snap
	}
	return b.ends[i-1]
}

// window returns the byte offsets of the log to damage: three whole records
// in the middle and the last two, or every byte with -corrupt.full.
func (b *damageBase) window() []int {
	if *corruptFull {
		offs := make([]int, len(b.log))
		for i := range offs {
			offs[i] = i
		}
		return offs
	}
	var offs []int
	mid := len(b.recs) / 2
	for i := b.recs[mid]; i < b.recs[mid+3]; i++ {
		offs = append(offs, i)
	}
	for i := b.recs[len(b.recs)-2]; i < len(b.log); i++ {
		offs = append(offs, i)
	}
	return offs
}

// flipBit says whether the bit flip tests flip bit of byte off: every bit
// of a byte that matters most (a record's header, the last record), one
// bit of the others; with -short one in three of those; with -corrupt.full
// all.
func flipBit(off, bit int, matters bool) bool {
	switch {
	case *corruptFull:
		return true
	case !matters && bit != off%8:
		return false
	}
	return !testing.Short() || (off*8+bit)%3 == 0
}

// inHeader reports whether byte off is in the file header or a record's
// header (length, checksum, kind).
func inHeader(offs []int, off int) bool {
	i := recordAt(offs, off)
	return i < 0 || off-offs[i] < 9
}

// TestCorruptLogBitFlips flips every bit of a window of a closed store's
// log, one at a time (contract §8.6): a flip in any record but the last is
// ErrCorrupt naming the log and the record's offset, with nothing on disk
// changed — never a store that lacks acknowledged revisions; a flip in the
// last record makes it torn, and Open cuts it. Every bit of the last
// record is flipped, and of the records' headers in the log without a
// snapshot; one bit of each other byte (see flipBit).
func TestCorruptLogBitFlips(t *testing.T) {
	for _, ckpt := range []int64{0, 30} {
		b := newDamageBase(t, 90, ckpt)
		n := 0
		for _, off := range b.window() {
			for bit := range 8 {
				if !flipBit(off, bit, ckpt == 0 && inHeader(b.recs, off) || off >= b.recs[len(b.recs)-1]) {
					continue
				}
				data := slices.Clone(b.log)
				data[off] ^= 1 << bit
				b.checkLogDamage(t, data, fmt.Sprintf("snapshot at %d, bit %d of byte %d", b.snap, bit, off), false)
				n++
			}
		}
		t.Logf("snapshot at %d: %d flips of a %d-byte log", b.snap, n, len(b.log))
	}
}

// TestCorruptLogOverwrites damages the log as a bad disk or a stray write
// would: a few bytes overwritten, a run zeroed, bytes removed from the
// middle. Before the last record that is ErrCorrupt; what reaches the end
// of the file with no whole record after it may be a torn tail. Runs start
// at every byte of the records' headers, and one byte in three elsewhere.
func TestCorruptLogOverwrites(t *testing.T) {
	b := newDamageBase(t, 90, 20)
	rng := rand.New(rand.NewPCG(3, 4))
	lastRec := b.recs[len(b.recs)-1]
	for _, off := range b.window() {
		for _, n := range []int{2, 4, 7} {
			if !*corruptFull && (off+n)%3 != 0 && !inHeader(b.recs, off) {
				continue
			}
			end := min(off+n, len(b.log))
			tornOK := end > lastRec // the last record damaged too: nothing whole after
			data := slices.Clone(b.log)
			for i := off; i < end; i++ {
				data[i] = byte(rng.Uint32())
			}
			b.checkLogDamage(t, data, fmt.Sprintf("%d random bytes at %d", n, off), tornOK)
			data = slices.Clone(b.log)
			clear(data[off:end])
			b.checkLogDamage(t, data, fmt.Sprintf("%d zero bytes at %d", n, off), tornOK)
		}
	}
	// Longer runs in the middle: zeroed, and removed.
	mid := b.recs[len(b.recs)/2]
	for _, span := range [][2]int{{mid, mid + 40}, {mid + 3, mid + 100}, {16, 200}, {mid, b.recs[len(b.recs)/2+2]}, {b.recs[3], b.recs[4]}} {
		data := slices.Clone(b.log)
		clear(data[span[0]:span[1]])
		b.checkLogDamage(t, data, fmt.Sprintf("bytes %d-%d zeroed", span[0], span[1]), false)
		data = slices.Concat(b.log[:span[0]], b.log[span[1]:])
		b.checkLogDamage(t, data, fmt.Sprintf("bytes %d-%d removed", span[0], span[1]), false)
	}
}

// TestCorruptTornTail: the crash of a write leaves its last record cut
// anywhere, or its bytes zeroed from anywhere to the end of the file, or
// zeros and garbage after it (a file system that extended the file but
// lost the data): Open takes that for a torn tail and cuts it back, to
// every record before it.
func TestCorruptTornTail(t *testing.T) {
	b := newDamageBase(t, 60, 0)
	last := len(b.recs) - 1
	for cut := b.recs[last]; cut < len(b.log); cut++ {
		b.checkLogDamage(t, b.log[:cut], fmt.Sprintf("cut at %d", cut), false)
		data := slices.Clone(b.log)
		clear(data[cut:])
		b.checkLogDamage(t, data, fmt.Sprintf("zeroed from %d", cut), false)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 8, 9, 100, 5000} {
		garbage := make([]byte, n)
		for i := range garbage {
			garbage[i] = byte(rng.Uint32())
		}
		b.checkLogDamage(t, slices.Concat(b.log, make([]byte, n)), fmt.Sprintf("%d zeros after", n), false)
		b.checkLogDamage(t, slices.Concat(b.log, garbage), fmt.Sprintf("%d garbage bytes after", n), false)
		b.checkLogDamage(t, slices.Concat(b.log[:len(b.log)-3], garbage), fmt.Sprintf("last record cut, then %d garbage bytes", n), false)
	}
}

// TestCorruptSnapshot flips bits of a snapshot, and cuts it: any damage is
// ErrCorrupt naming the snapshot and the record's offset (0 for its
// header). Every bit of the file's header, of the first three records'
// headers and of the last two records is flipped, one bit of every third
// other byte (see flipBit).
func TestCorruptSnapshot(t *testing.T) {
	b := newDamageBase(t, 45, 40)
	name := "/db/" + wal.SnapshotName(b.snap)
	snap := b.m.Bytes(name)
	offs := recordOffsets(snap)
	n := 0
	for off := range snap {
		window := off < offs[3] && inHeader(offs, off) || off >= offs[len(offs)-2]
		for bit := range 8 {
			if !window && off%3 != 0 || !flipBit(off, bit, window) {
				continue
			}
			data := slices.Clone(snap)
			data[off] ^= 1 << bit
			_, err := openDamaged(t, b.m, name, data)
			at := 0
			if i := recordAt(offs, off); i >= 0 {
				at = offs[i]
			}
			requireCorruptAt(t, err, name, at, fmt.Sprintf("bit %d of byte %d", bit, off))
			n++
		}
		if window || *corruptFull {
			_, err := openDamaged(t, b.m, name, snap[:off])
			require.True(t, errors.Is(err, revkv.ErrCorrupt), "cut at %d: %v", off, err)
			require.True(t, strings.Contains(err.Error(), name), "cut at %d: %v", off, err)
		}
	}
	t.Logf("%d flips of a %d-byte snapshot", n, len(snap))
}

// TestRepair: WithRepair opens a damaged log to the revisions before the
// first damaged record, moves the bytes cut aside (nothing is deleted),
// and the store goes on from there; without it the same directory is
// ErrCorrupt. A damaged snapshot is ErrCorrupt with it too.
func TestRepair(t *testing.T) {
	b := newDamageBase(t, 90, 30)
	i := len(b.recs) / 2
	data := slices.Clone(b.log)
	data[b.recs[i]+1] ^= 0x10 // the length runs past the end of the file
	_, err := openDamaged(t, b.m, b.seg, data)
	requireCorruptAt(t, err, b.seg, b.recs[i], "without WithRepair")

	c := b.m.Crash(nil)
	c.WriteFile(b.seg, data)
	s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(c), revkv.WithRepair(), revkv.WithMemory(-1))
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(b.revBefore(i)), s.Rev())
	checkCrashHistory(t, s)
	require.NoError(t, s.Check())
	require.Equal(t, data[b.recs[i]:], c.Bytes(b.seg+".damaged"), "the bytes cut are kept")
	require.Equal(t, data[:b.recs[i]], c.Bytes(b.seg)[:b.recs[i]])
	for r := int64(s.Rev()) + 1; r <= b.rev; r++ { // write the lost revisions again
		_, err := s.Put(crashKey(r), fmt.Sprint(r))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(c.Crash(nil)), revkv.WithMemory(-1))
	require.NoError(t, err, "the repaired log opens without WithRepair")
	require.Equal(t, revkv.Revision(b.rev), s.Rev())
	checkCrashHistory(t, s)
	require.NoError(t, s.Close())

	// A second repair of the same segment keeps the first one's file.
	c = c.Crash(nil)
	log := c.Bytes(b.seg)
	data = slices.Clone(log)
	data[b.recs[i]+2] ^= 0x01
	c.WriteFile(b.seg, data)
	s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(c), revkv.WithRepair(), revkv.WithMemory(-1))
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(b.revBefore(i)), s.Rev())
	require.NoError(t, s.Close())
	require.Equal(t, data[b.recs[i]:], c.Bytes(b.seg+".damaged-2"))
	require.NotNil(t, c.Bytes(b.seg+".damaged"))

	name := "/db/" + wal.SnapshotName(b.snap)
	snap := slices.Clone(b.m.Bytes(name))
	snap[40] ^= 1
	c = b.m.Crash(nil)
	c.WriteFile(name, snap)
	before := dirBytes(t, c)
	_, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(c), revkv.WithRepair(), revkv.WithMemory(-1))
	require.ErrorIs(t, err, revkv.ErrCorrupt, "a damaged snapshot")
	require.Equal(t, before, dirBytes(t, c))

	// A whole record whose value the codec refuses is not damage to cut.
	c = b.m.Crash(nil)
	before = dirBytes(t, c)
	_, err = revkv.Open("/db", refusingCodec{revkv.StringCodec()}, revkv.WithFS(c), revkv.WithRepair(), revkv.WithMemory(-1))
	require.ErrorIs(t, err, revkv.ErrCorrupt, "a value the codec refuses")
	require.Equal(t, before, dirBytes(t, c), "nothing is cut for a codec's refusal")
}

// refusingCodec refuses to decode one value that the log holds.
type refusingCodec struct{ revkv.Codec[string] }

func (c refusingCodec) Decode(b []byte) (string, error) {
	if string(b) == "60" {
		return "", errors.New("refused")
	}
	return c.Codec.Decode(b)
}

// TestTornValueHoldingARecord: a client may store the bytes of a log
// record as a value (another store's log, say). A crash that cuts the
// write of that value short leaves a whole record inside the torn one;
// Open must still take it for a torn tail and cut it, not refuse the
// store as damaged.
func TestTornValueHoldingARecord(t *testing.T) {
	b := newDamageBase(t, 20, 0)
	inner := string(b.log[b.recs[3]:b.recs[4]]) + strings.Repeat("p", 100)
	s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(b.m), revkv.WithMemory(-1))
	require.NoError(t, err)
	_, err = s.Put("k", inner)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	log := b.m.Bytes(b.seg)
	for _, cut := range []int{1, 50, 99, 101, 150} {
		rev, err := openDamaged(t, b.m, b.seg, log[:len(log)-cut])
		require.NoError(t, err, "cut %d bytes short", cut)
		require.Equal(t, b.rev, rev, "the torn Put is cut, every revision before it kept")
	}
}

// TestRepairCutSynced: the cut a repair makes is synced before Open goes
// on. Otherwise a power cut after a write that is not synced (SyncNever)
// could undo the cut while that write's bytes survive, bringing the
// damage back behind it: the next Open would refuse the store again.
func TestRepairCutSynced(t *testing.T) {
	b := newDamageBase(t, 90, 0)
	i := len(b.recs) / 2
	data := slices.Clone(b.log)
	data[b.recs[i]+1] ^= 0x10 // the length runs past the end of the file
	for seed := range uint64(20) {
		m := b.m.Crash(nil)
		m.WriteFile(b.seg, data)
		s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithRepair(), revkv.WithSync(revkv.SyncNever), revkv.WithMemory(-1))
		require.NoError(t, err)
		next := b.revBefore(i) + 1
		_, err = s.Put(crashKey(next), fmt.Sprint(next))
		require.NoError(t, err)
		crashed := m.Crash(rand.New(rand.NewPCG(seed, 5)))
		require.NoError(t, s.Close())
		s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(crashed), revkv.WithMemory(-1))
		require.NoError(t, err, "seed %d: the repaired log opens after a power cut", seed)
		require.GreaterOrEqual(t, s.Rev(), revkv.Revision(b.revBefore(i)))
		checkCrashHistory(t, s)
		require.NoError(t, s.Close())
	}
}
