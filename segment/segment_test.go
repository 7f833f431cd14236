package segment

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomEntries returns a random history of revisions [1, n] over keys
// drawn from a small set (the empty key, shared prefixes, a key longer
// than a block, bytes that are not UTF-8), sorted as a segment holds it.
func randomEntries(rng *rand.Rand, n int) []Entry {
	return randomEntriesOf(rng, n, []string{"", "a", "ab", "ab\x00\x00\x00\x00\x00\x00\x01", "abc", "b", "b\x00", "b\xff\x00", "k/00000001", "k/00000002", strings.Repeat("long", 300)})
}

// randomEntriesOf is randomEntries over the given keys.
func randomEntriesOf(rng *rand.Rand, n int, keys []string) []Entry {
	es := make([]Entry, n)
	// Times never go back from one revision to the next; some are extreme
	// instants, far past where Unix nanoseconds fit, and some repeat.
	times := make([][2]int64, n)
	for i := range times {
		times[i] = [2]int64{1_700_000_000 + rng.Int64N(int64(n)), rng.Int64N(1e9)}
		switch rng.IntN(60) {
		case 0:
			times[i][0] = []int64{math.MinInt64 / 2, -62135596800 - 1, 253402300800 + 7, math.MaxInt64 / 2}[rng.IntN(4)]
		case 1:
			times[i] = times[max(i-1, 0)]
		}
	}
	slices.SortFunc(times, func(a, b [2]int64) int {
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		return cmp.Compare(a[1], b[1])
	})
	for i := range es {
		e := &es[i]
		e.Key, e.Rev = keys[rng.IntN(len(keys))], int64(i+1)
		e.Sec, e.Nsec, e.Zone = times[i][0], int32(times[i][1]), uint32(rng.IntN(3))
		e.Op = Op(1 + rng.IntN(3))
		if e.Op == Put {
			e.Value = make([]byte, rng.IntN(40))
			if rng.IntN(100) == 0 {
				e.Value = make([]byte, 40_000) // larger than a block
			}
			for j := range e.Value {
				e.Value[j] = byte(rng.IntN(256))
			}
			if e.HasTTL = rng.IntN(3) == 0; e.HasTTL {
				e.Expires = rng.Int64()
			}
		}
	}
	slices.SortFunc(es, func(a, b Entry) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return int(a.Rev - b.Rev)
	})
	return es
}

// build writes es as a segment covering [1, last] with the given block size.
func build(t testing.TB, es []Entry, last int64, blockSize int) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, 1, last, blockSize)
	for i := range es {
		require.NoError(t, w.Add(&es[i]))
	}
	byRev := slices.Clone(es) // every revision has one entry here: its time is the revision's
	slices.SortFunc(byRev, func(a, b Entry) int { return cmp.Compare(a.Rev, b.Rev) })
	for i := int64(1); i <= last; i++ {
		sec, nsec := int64(0), int32(0)
		if len(byRev) > 0 {
			e := byRev[min(int(i), len(byRev))-1]
			sec, nsec = e.Sec, e.Nsec
		}
		require.NoError(t, w.AddTime(sec, nsec))
	}
	prev, dig := [32]byte{1}, [32]byte{2}
	n, err := w.Finish(prev, dig, []byte("zones"))
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), n)
	return buf.Bytes()
}

// randomSegment builds a segment of randomEntries(rng, n) with the given
// block size and opens it.
func randomSegment(t *testing.T, rng *rand.Rand, n int, blockSize int) (*Reader, []Entry) {
	es := randomEntries(rng, n)
	file := build(t, es, int64(n), blockSize)
	r, err := Open(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	return r, es
}

func same(t *testing.T, want, got Entry, what string) {
	t.Helper()
	if len(want.Value) == 0 && len(got.Value) == 0 {
		want.Value, got.Value = nil, nil
	}
	require.Equal(t, want, got, what)
}

// TestRoundTrip checks every read against a brute-force look at the
// entries written: All gives them back, Get answers every (key, revision)
// with one block read, History every range.
func TestRoundTrip(t *testing.T) {
	for _, bs := range []int{1, 64, 1024, DefaultBlockSize, 4 * DefaultBlockSize} {
		t.Run(fmt.Sprint("block=", bs), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(bs), 7))
			const n = 3000
			r, es := randomSegment(t, rng, n, bs)
			f := r.Footer()
			keys := map[string]bool{}
			for _, e := range es {
				keys[e.Key] = true
			}
			require.Equal(t, Footer{First: 1, Last: n, TimesFrom: 1, Entries: n, Keys: int64(len(keys)), Prev: [32]byte{1}, Digest: [32]byte{2}}, f)
			meta, err := r.Meta()
			require.NoError(t, err)
			require.Equal(t, []byte("zones"), meta)

			checkTimes(t, r, es)
			i := 0
			for e, err := range r.All() {
				require.NoError(t, err)
				same(t, es[i], e, fmt.Sprint("entry ", i))
				i++
			}
			require.Equal(t, n, i)

			for range 2000 {
				key, rev := es[rng.IntN(n)].Key, rng.Int64N(n+2)
				if rng.IntN(10) == 0 {
					key += "\x00" // between two keys, or after the last
				}
				var want Entry
				ok := false
				for _, e := range es {
					if e.Key == key && e.Rev <= rev {
						want, ok = e, true
					}
				}
				before := r.BlocksRead()
				got, gotOK, err := r.Get(key, rev)
				require.NoError(t, err)
				require.Equal(t, ok, gotOK, "Get(%q, %d)", key, rev)
				require.LessOrEqual(t, r.BlocksRead()-before, int64(1), "Get reads at most one block")
				if ok {
					same(t, want, got, fmt.Sprintf("Get(%q, %d)", key, rev))
				}

				lo := rng.Int64N(n + 2)
				hi := lo + rng.Int64N(n/3)
				var wantH, gotH []Entry
				for _, e := range es {
					if e.Key == key && e.Rev >= lo && e.Rev <= hi {
						wantH = append(wantH, e)
					}
				}
				for e, err := range r.History(key, lo, hi) {
					require.NoError(t, err)
					gotH = append(gotH, e)
				}
				require.Equal(t, len(wantH), len(gotH), "History(%q, %d, %d)", key, lo, hi)
				for j := range wantH {
					same(t, wantH[j], gotH[j], "History")
				}
			}
		})
	}
}

func TestWriterRefusesDisorder(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 10, 20, 0)
	require.NoError(t, w.Add(&Entry{Key: "b", Rev: 12, Op: Delete}))
	for _, e := range []Entry{
		{Key: "b", Rev: 12, Op: Delete}, // a repeat
		{Key: "b", Rev: 11, Op: Delete}, // back in revisions
		{Key: "a", Rev: 15, Op: Delete}, // back in keys
		{Key: "c", Rev: 9, Op: Delete},  // below the range
		{Key: "c", Rev: 21, Op: Delete}, // above it
		{Key: "c", Rev: 13, Op: 0},
		{Key: "c", Rev: 13, Op: 4},
		{Key: "c", Rev: 13, Op: Expire, HasTTL: true},
	} {
		require.ErrorIs(t, w.Add(&e), ErrOrder, "%+v", e)
	}
}

// TestDamage flips every byte of a small segment and cuts it at every
// length: each is refused, by Open or by the read that meets it, as
// ErrCorrupt (ErrVersion only where the footer's checksum was redone);
// no damage ever yields a different entry.
func TestDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	es := randomEntries(rng, 60)
	file := build(t, es, 60, 256)
	// Open checks the index and meta at once; OpenFooter leaves them to
	// the first read, which must find the damage as surely.
	for _, open := range []func(io.ReaderAt, int64) (*Reader, error){Open, OpenFooter} {
		for i := range file {
			for _, bit := range []byte{0x01, 0x80} {
				bad := bytes.Clone(file)
				bad[i] ^= bit
				require.ErrorIs(t, readAll(open, bad, es), ErrCorrupt, "byte %d bit %#x", i, bit)
			}
		}
		for n := range len(file) {
			require.ErrorIs(t, readAll(open, file[:n], es), ErrCorrupt, "cut at %d", n)
		}
		bad := bytes.Clone(file) // a newer version, checksummed as a newer build would
		end := len(bad) - footerSize
		bad[end+fVersion]++
		copy(bad[end+fCRC:], le32(checksum(bad[end:end+fCRC])))
		require.ErrorIs(t, readAll(open, bad, es), ErrVersion)
		require.EqualError(t, readAll(open, file, es), "no damage seen")
	}
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// readAll opens file and reads it every way, failing the test on an
// answer that differs from es; it returns the first error met.
func readAll(open func(io.ReaderAt, int64) (*Reader, error), file []byte, es []Entry) error {
	r, err := open(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		return err
	}
	i := 0
	for e, err := range r.All() {
		if err != nil {
			return err
		}
		if i >= len(es) || e.Key != es[i].Key || e.Rev != es[i].Rev || !bytes.Equal(e.Value, es[i].Value) || e.Sec != es[i].Sec || e.Expires != es[i].Expires {
			return fmt.Errorf("a wrong entry %d: %+v", i, e)
		}
		i++
	}
	if i != len(es) {
		return fmt.Errorf("%d entries, want %d", i, len(es))
	}
	byRev := slices.Clone(es)
	slices.SortFunc(byRev, func(a, b Entry) int { return cmp.Compare(a.Rev, b.Rev) })
	j := 0
	for e, err := range r.Revisions(1, int64(len(es))) {
		if err != nil {
			return err
		}
		if j >= len(byRev) || e.Key != byRev[j].Key || e.Rev != byRev[j].Rev || !bytes.Equal(e.Value, byRev[j].Value) {
			return fmt.Errorf("a wrong entry in revision order at %d: %+v", j, e)
		}
		j++
	}
	if j != len(byRev) {
		return fmt.Errorf("%d entries in revision order, want %d", j, len(byRev))
	}
	for _, e := range es {
		sec, nsec, err := r.TimeOf(e.Rev)
		if err != nil {
			return err
		}
		if sec != e.Sec || nsec != e.Nsec {
			return fmt.Errorf("a wrong time at %d", e.Rev)
		}
	}
	return errors.New("no damage seen")
}

// FuzzSegment reads arbitrary bytes as a segment: never a panic, and every
// failure is ErrCorrupt or ErrVersion.
func FuzzSegment(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	f.Add(build(f, randomEntries(rng, 20), 20, 128))
	f.Add(build(f, nil, 1, 0))
	many := []string{"k/01", "k/02", "k/03", "k/10", "k/11", "k/2", "l"}
	f.Add(build(f, randomEntriesOf(rng, 60, many), 60, 256))
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := Open(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("Open: %v is neither ErrCorrupt nor ErrVersion", err)
			}
			return
		}
		for _, err := range r.All() {
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("All: %v is not ErrCorrupt", err)
			}
		}
		for _, err := range r.History("a", 0, math.MaxInt64) {
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("History: %v is not ErrCorrupt", err)
			}
		}
		if _, _, err := r.Get("a", math.MaxInt64); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Get: %v is not ErrCorrupt", err)
		}
		for _, err := range r.Revisions(0, math.MaxInt64) {
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Revisions: %v is not ErrCorrupt", err)
			}
		}
		for _, err := range r.revisions(0, math.MaxInt64, 3) { // runs resumed in many windows
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Revisions in windows of 3: %v is not ErrCorrupt", err)
			}
		}
		for _, err := range r.Records(0, math.MaxInt64, 1<<10, testRecord) { // in several passes
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Records: %v is not ErrCorrupt", err)
			}
		}
	})
}

// checkTimes checks TimeOf at every revision and RevAt at every entry's
// time, and just before and after it, against es (one entry a revision).
func checkTimes(t *testing.T, r *Reader, es []Entry) {
	byRev := slices.Clone(es)
	slices.SortFunc(byRev, func(a, b Entry) int { return cmp.Compare(a.Rev, b.Rev) })
	revAt := func(sec int64, nsec int32) int64 { // the last revision at or before
		i := sort.Search(len(byRev), func(i int) bool {
			return byRev[i].Sec > sec || byRev[i].Sec == sec && byRev[i].Nsec > nsec
		})
		return int64(i) // revisions are 1..n: i entries are at or before
	}
	for _, e := range byRev {
		sec, nsec, err := r.TimeOf(e.Rev)
		require.NoError(t, err)
		require.Equal(t, [2]int64{e.Sec, int64(e.Nsec)}, [2]int64{sec, int64(nsec)}, "TimeOf(%d)", e.Rev)
		for _, d := range []int32{-1, 0, 1} {
			s, ns := e.Sec, e.Nsec+d
			if ns < 0 || ns >= 1e9 {
				continue
			}
			got, known, err := r.RevAt(s, ns)
			require.NoError(t, err)
			require.True(t, known)
			require.Equal(t, revAt(s, ns), got, "RevAt(%d, %d)", s, ns)
		}
	}
	_, _, err := r.TimeOf(int64(len(es)) + 1)
	require.Error(t, err, "a revision past the segment")
}

// TestTimesFrom writes a segment whose time column starts above its first
// revision: the revisions below it have no time, and a time before the
// oldest it holds has no known revision.
func TestTimesFrom(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 10, 20, 0)
	require.NoError(t, w.Add(&Entry{Key: "k", Rev: 12, Op: Delete}))
	require.ErrorIs(t, w.TimesFrom(9), ErrOrder)
	require.ErrorIs(t, w.TimesFrom(21), ErrOrder)
	require.NoError(t, w.TimesFrom(15))
	for r := int64(15); r <= 20; r++ {
		require.NoError(t, w.AddTime(100+r, 0))
	}
	require.ErrorIs(t, w.TimesFrom(16), ErrOrder, "after the first time")
	_, err := w.Finish([32]byte{}, [32]byte{}, nil)
	require.NoError(t, err)
	r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	require.Equal(t, int64(15), r.Footer().TimesFrom)
	_, _, err = r.TimeOf(14)
	require.Error(t, err)
	sec, _, err := r.TimeOf(17)
	require.NoError(t, err)
	require.Equal(t, int64(117), sec)
	_, known, err := r.RevAt(114, 0)
	require.NoError(t, err)
	require.False(t, known, "before the oldest time held")
	rev, known, err := r.RevAt(118, 5)
	require.NoError(t, err)
	require.True(t, known)
	require.Equal(t, int64(18), rev)
}

// TestTimesFromFirst sets the time column's start before the first
// entry, as a merge does below a compaction: entries below it have no
// locator, the rest are found in revision order, and Times yields the
// column from any revision.
func TestTimesFromFirst(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 1, 3000, 64)
	require.NoError(t, w.TimesFrom(1500))
	var want []int64
	for i, rev := range []int64{10, 1499, 1500, 2999, 20, 3000, 1700} {
		require.NoError(t, w.Add(&Entry{Key: fmt.Sprint("k", i), Rev: rev, Op: Put, Value: []byte("v")}))
		if rev >= 1500 {
			want = append(want, rev)
		}
	}
	require.ErrorIs(t, w.TimesFrom(1400), ErrOrder, "below the locators' start")
	for r := int64(1500); r <= 3000; r++ {
		require.NoError(t, w.AddTime(r, int32(r)))
	}
	_, err := w.Finish([32]byte{}, [32]byte{}, nil)
	require.NoError(t, err)
	r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	var got []int64
	for e, err := range r.Revisions(1, 3000) {
		require.NoError(t, err)
		got = append(got, e.Rev)
	}
	slices.Sort(want)
	require.Equal(t, want, got)
	n := 0
	for range r.All() {
		n++
	}
	require.Equal(t, 7, n)
	for _, from := range []int64{0, 1500, 1501, 2523, 2524, 3000, 3001} {
		next := max(from, 1500)
		for tm, err := range r.Times(from) {
			require.NoError(t, err)
			require.Equal(t, [2]int64{next, next}, tm, "Times(%d)", from)
			next++
		}
		require.Equal(t, max(from, 3001), next, "Times(%d) ends at Last", from)
	}
}

// TestTimesReadOnce: TimeOf for every revision in order reads each time
// block once (the last one read is kept), as an export or a watch from an
// old revision asks for them.
func TestTimesReadOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	const n = 3*timesPerBlock + 17
	es := randomEntries(rng, n)
	file := build(t, es, n, DefaultBlockSize)
	r, err := Open(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	before := r.BlocksRead()
	for rev := int64(1); rev <= n; rev++ {
		_, _, err := r.TimeOf(rev)
		require.NoError(t, err)
	}
	require.Equal(t, int64(4), r.BlocksRead()-before, "four time blocks, each read once")
}

// TestKeysOutOfOrderAreCorrupt: a block whose checksum holds but whose
// keys go back (a forger's, or a writer's bug) is ErrCorrupt to a read
// that decodes past the place where they do. (A point read stops at the
// first key after its own, so one for kB stops at kC and finds nothing.)
func TestKeysOutOfOrderAreCorrupt(t *testing.T) {
	es := []Entry{{Key: "kA", Rev: 1, Op: Delete}, {Key: "kB", Rev: 2, Op: Delete}, {Key: "kC", Rev: 3, Op: Delete}}
	file := build(t, es, 3, 0)
	r, err := Open(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	f := mustIndex(t, r).fence(0)
	block := file[f.off : f.off+f.len]
	body := block[:len(block)-4]
	iB, iC := bytes.IndexByte(body, 'B'), bytes.IndexByte(body, 'C')
	require.True(t, iB > 0 && iC > iB && bytes.Count(body, []byte("B")) == 1 && bytes.Count(body, []byte("C")) == 1, "one B and one C in the block")
	body[iB], body[iC] = 'C', 'B' // kA, kC, kB
	binary.LittleEndian.PutUint32(block[len(body):], checksum(body))

	r, err = Open(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	_, _, err = r.Get("kC", 3)
	require.ErrorIs(t, err, ErrCorrupt)
	for _, err := range r.All() {
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
	}
	t.Fatal("All read a block out of order")
}

// TestFenceAfter: the fence search (binary searches of the keys' heads,
// then of the whole keys among the fences with key's head) finds the
// first fence after (key, rev), as a walk of every fence does,
// with runs of one head from one fence to hundreds (block size 1: a fence
// per entry; keys sharing their first eight bytes).
func TestFenceAfter(t *testing.T) {
	for _, bs := range []int{1, 64, DefaultBlockSize} {
		rng := rand.New(rand.NewPCG(uint64(bs), 11))
		const n = 3000
		sr, es := randomSegment(t, rng, n, bs)
		r := mustIndex(t, sr)
		for range 3000 {
			key, rev := es[rng.IntN(n)].Key, rng.Int64N(n+2)
			switch rng.IntN(8) {
			case 0:
				key += "\x00"
			case 1:
				key = key[:len(key)/2]
			}
			want := r.blocks()
			for i := range r.blocks() {
				if f := r.fence(i); less(key, rev, f.key, f.rev) {
					want = i
					break
				}
			}
			require.Equal(t, want, r.fenceAfter(key, rev), "block size %d, key %q, rev %d", bs, key, rev)
		}
	}
}

// mustIndex returns r with its index loaded.
func mustIndex(t testing.TB, r *Reader) rd {
	t.Helper()
	x, err := r.index()
	require.NoError(t, err)
	return x
}
