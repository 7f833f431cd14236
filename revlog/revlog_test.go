package revlog

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// entry returns an entry at time t, numbering its location in z (nil: UTC).
func entry[V any](rev int64, t time.Time, op Op, v V, z *Zones) Entry[V] {
	e := Entry[V]{Rev: rev, Op: op, Value: v}
	e.SetTime(t, z)
	return e
}

func put(rev int64, s int, v string) Entry[string] { return entry(rev, at(s), Put, v, nil) }

func del(rev int64, s int) Entry[string] { return entry(rev, at(s), Delete, "", nil) }

func logOf(es ...Entry[string]) *Log[string] {
	l := &Log[string]{}
	for _, e := range es {
		l.Append(e)
	}
	return l
}

func revs(l *Log[string]) []int64 {
	var out []int64
	for _, e := range l.Entries() {
		out = append(out, e.Rev)
	}
	return out
}

func TestAt(t *testing.T) {
	// put(2)@1s put(5)@3s del(9)@3s put(12)@7s
	l := logOf(put(2, 1, "a"), put(5, 3, "b"), del(9, 3), put(12, 7, "c"))
	for _, tc := range []struct {
		rev  int64
		want Status
		val  string
		op   Op
	}{
		{-1, Absent, "", 0},
		{0, Absent, "", 0},
		{1, Absent, "", 0},
		{2, Found, "a", Put},
		{4, Found, "a", Put},
		{5, Found, "b", Put},
		{9, Found, "", Delete},
		{11, Found, "", Delete},
		{12, Found, "c", Put},
		{1 << 62, Found, "c", Put},
	} {
		e, st := l.At(tc.rev)
		require.Equal(t, tc.want, st, "At(%d)", tc.rev)
		require.Equal(t, tc.val, e.Value, "At(%d)", tc.rev)
		require.Equal(t, tc.op, e.Op, "At(%d)", tc.rev)
	}
}

func TestEmptyLog(t *testing.T) {
	l := &Log[string]{}
	_, st := l.At(5)
	require.Equal(t, Absent, st)
	_, st = l.AsOf(at(5), 5)
	require.Equal(t, Absent, st)
	_, ok := l.Last()
	require.False(t, ok)
	require.Zero(t, l.Lo())
	n, empty := l.CutBefore(10)
	require.Zero(t, n)
	require.False(t, empty)
	require.Zero(t, l.TrimTo(1, 1<<62))
}

func TestAsOfEqualTimes(t *testing.T) {
	// Three revisions share 3s: the last of them is the answer at 3s.
	l := logOf(put(2, 1, "a"), put(5, 3, "b"), put(6, 3, "c"), put(7, 3, "d"), put(12, 7, "e"))
	for _, tc := range []struct {
		s      int
		maxRev int64
		want   string
		st     Status
	}{
		{0, 99, "", Absent},
		{1, 99, "a", Found},
		{2, 99, "a", Found},
		{3, 99, "d", Found},
		{3, 6, "c", Found}, // 7 is not yet published
		{3, 5, "b", Found},
		{3, 4, "a", Found},
		{7, 99, "e", Found},
		{7, 11, "d", Found},
		{100, 99, "e", Found},
	} {
		e, st := l.AsOf(at(tc.s), tc.maxRev)
		require.Equal(t, tc.st, st, "AsOf(%ds, %d)", tc.s, tc.maxRev)
		require.Equal(t, tc.want, e.Value, "AsOf(%ds, %d)", tc.s, tc.maxRev)
	}
}

func TestCutBefore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		log     []Entry[string]
		rev     int64
		dropped int
		empty   bool
		left    []int64
		lo      int64
	}{
		{"below everything", []Entry[string]{put(3, 1, "a"), put(5, 2, "b")}, 2, 0, false, []int64{3, 5}, 0},
		{"at the first", []Entry[string]{put(3, 1, "a"), put(5, 2, "b")}, 3, 0, false, []int64{3, 5}, 0},
		{"keeps the visible one", []Entry[string]{put(3, 1, "a"), put(5, 2, "b"), put(8, 3, "c")}, 7, 1, false, []int64{5, 8}, 5},
		{"above everything", []Entry[string]{put(3, 1, "a"), put(5, 2, "b")}, 9, 1, false, []int64{5}, 5},
		{"lone tombstone below rev", []Entry[string]{put(3, 1, "a"), del(5, 2)}, 6, 2, true, nil, 0},
		{"lone tombstone at rev stays", []Entry[string]{put(3, 1, "a"), del(5, 2)}, 5, 1, false, []int64{5}, 5},
		{"tombstone then a put", []Entry[string]{put(3, 1, "a"), del(5, 2), put(8, 3, "c")}, 6, 1, false, []int64{5, 8}, 5},
		{"tombstone above rev", []Entry[string]{put(3, 1, "a"), del(5, 2)}, 4, 0, false, []int64{3, 5}, 0},
		{"expire entry is a tombstone", []Entry[string]{put(3, 1, "a"), entry(5, at(2), Expire, "", nil)}, 7, 2, true, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := logOf(tc.log...)
			n, empty := l.CutBefore(tc.rev)
			require.Equal(t, tc.dropped, n)
			require.Equal(t, tc.empty, empty)
			require.Equal(t, tc.left, revs(l))
			require.Equal(t, tc.lo, l.Lo())
			if tc.lo > 0 {
				_, st := l.At(tc.lo - 1)
				require.Equal(t, Compacted, st, "below the oldest entry")
				_, st = l.AsOf(l.Entries()[0].Time(nil).Add(-1), 1<<62)
				require.Equal(t, Compacted, st, "before the oldest entry's time")
			}
			if tc.empty {
				_, st := l.At(tc.rev)
				require.Equal(t, Absent, st, "an emptied log is as new")
			}
		})
	}
}

func TestTrimTo(t *testing.T) {
	five := []Entry[string]{put(2, 1, "a"), put(4, 2, "b"), put(6, 3, "c"), put(8, 4, "d"), put(10, 5, "e")}
	const noPin = 1 << 62
	for _, tc := range []struct {
		name    string
		n       int
		pin     int64
		dropped int
		left    []int64
	}{
		{"under the cap", 5, noPin, 0, []int64{2, 4, 6, 8, 10}},
		{"to two", 2, noPin, 3, []int64{8, 10}},
		{"zero keeps the newest", 0, noPin, 4, []int64{10}},
		{"pinned in the middle", 1, 5, 1, []int64{4, 6, 8, 10}},
		{"pinned on an entry", 1, 6, 2, []int64{6, 8, 10}},
		{"pinned below every entry", 1, 1, 0, []int64{2, 4, 6, 8, 10}},
		{"pinned above the cut", 2, 9, 3, []int64{8, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := logOf(five...)
			require.Equal(t, tc.dropped, l.TrimTo(tc.n, tc.pin))
			require.Equal(t, tc.left, revs(l))
			if tc.dropped > 0 {
				require.Equal(t, tc.left[0], l.Lo())
				_, st := l.At(tc.left[0] - 1)
				require.Equal(t, Compacted, st)
			}
			if tc.pin < noPin {
				want, _ := logOf(five...).At(tc.pin)
				got, _ := l.At(tc.pin)
				require.Equal(t, want, got, "the pinned revision still reads the same")
			}
		})
	}
}

func TestDropFrontFreesValues(t *testing.T) {
	l := &Log[string]{}
	for i := range 100 {
		l.Append(put(int64(i+1), i, "v"))
	}
	full := l.entries[:cap(l.entries)]
	l.TrimTo(3, 1<<62)
	require.Equal(t, 3, l.Len())
	require.Less(t, cap(l.entries), 16, "a mostly empty backing array is given back")
	for i := 3; i < 100; i++ {
		require.Empty(t, full[i].Value, "dropped entries are cleared")
	}
}

func TestLive(t *testing.T) {
	e := put(1, 1, "a")
	require.True(t, e.Live(at(100).UnixNano()))
	require.True(t, e.Live(math.MinInt64), "no TTL: live at any time")
	require.True(t, e.ExpiresAt(nil).IsZero())
	e.Expires, e.HasTTL = at(5).UnixNano(), true
	require.True(t, e.Live(at(4).UnixNano()))
	require.False(t, e.Live(at(5).UnixNano()), "expired from its expiry time on")
	d := del(2, 1)
	require.False(t, d.Live(math.MinInt64))
}

// Time and ExpiresAt give back the instants stored, in the location of the
// time set, whatever it is.
func TestTimeAndExpiresAt(t *testing.T) {
	var z Zones
	for _, loc := range []*time.Location{time.UTC, time.Local, time.FixedZone("X", -7*3600), time.FixedZone("X", -7*3600)} {
		now := time.Date(2026, 11, 21, 14, 2, 0, 5, loc)
		want := now.Add(90 * time.Minute)
		e := entry(1, now, Put, 0, &z)
		e.Expires, e.HasTTL = want.UnixNano(), true
		require.Equal(t, now, e.Time(&z), "%v", loc)
		require.Same(t, loc, e.Time(&z).Location())
		require.Equal(t, want, e.ExpiresAt(&z), "%v", loc)
		require.Same(t, loc, e.ExpiresAt(&z).Location())
	}
	for _, tt := range []time.Time{{}, time.Unix(-1, 999_999_999), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC), time.Date(-5000, 1, 1, 0, 0, 0, 1, time.UTC)} {
		e := entry(1, tt, Put, 0, &z)
		require.Equal(t, tt, e.Time(&z), "the pair holds times outside Unix nanoseconds")
	}
	epoch := entry(1, time.Unix(-1, 0), Put, 0, &z)
	epoch.Expires, epoch.HasTTL = 0, true
	require.True(t, epoch.ExpiresAt(&z).Equal(time.Unix(0, 0)), "0 is a real expiry time when HasTTL")
	require.False(t, epoch.Live(0))
}

// Zones numbers each location once, by pointer, and falls back to UTC (the
// same instant) once full; a nil Zones knows only UTC.
func TestZones(t *testing.T) {
	var z Zones
	require.Equal(t, Zone(0), z.Number(time.UTC))
	a, b := time.FixedZone("A", 3600), time.FixedZone("A", 3600)
	require.Equal(t, Zone(1), z.Number(a))
	require.Equal(t, Zone(2), z.Number(b), "told apart by pointer")
	require.Equal(t, Zone(1), z.Number(a))
	require.Equal(t, Zone(2), z.Number(b))
	require.Same(t, a, z.Location(1))
	require.Same(t, b, z.Location(2))
	require.Same(t, time.UTC, z.Location(0))

	for i := 3; i <= maxZones; i++ {
		require.Equal(t, Zone(i), z.Number(time.FixedZone("F", i)))
	}
	full := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("late", 60))
	e := entry(1, full, Put, 0, &z)
	require.True(t, full.Equal(e.Time(&z)), "the instant is kept")
	require.Same(t, time.UTC, e.Time(&z).Location(), "in UTC once full")
	require.Same(t, a, z.Location(1), "earlier numbers unchanged")

	var none *Zones
	require.Equal(t, Zone(0), none.Number(time.Local))
	require.Same(t, time.UTC, none.Location(0))
}

// checkRevs asserts the revs invariant: nil, or every entry's Rev in order.
func checkRevs[V any](t *testing.T, l *Log[V]) {
	t.Helper()
	if l.revIndex() == nil {
		require.Less(t, l.Len(), revsFrom, "a long log keeps revs")
		return
	}
	require.Len(t, l.revIndex(), l.Len())
	for i, e := range l.Entries() {
		require.Equal(t, e.Rev, l.revIndex()[i], "revs[%d]", i)
	}
}

// A long log searches revs; cuts and trims keep revs in step, drop it when
// the log gets short, and build it again when it grows back.
func TestRevsFollowEntries(t *testing.T) {
	var l Log[string]
	for i := range 100 {
		l.Append(put(int64(3*i+1), i, "v"))
		checkRevs(t, &l)
	}
	for r := int64(1); r <= 300; r++ {
		e, st := l.At(r)
		require.Equal(t, Found, st)
		require.Equal(t, (r-1)/3*3+1, e.Rev, "At(%d)", r)
	}
	l.CutBefore(150) // keeps the entry at 148 and newer
	checkRevs(t, &l)
	e, _ := l.At(151)
	require.Equal(t, int64(151), e.Rev)
	l.TrimTo(5, 1000)
	checkRevs(t, &l)
	require.Nil(t, l.revIndex(), "dropped when the log got short")
	for i := range 20 {
		l.Append(put(int64(400+i), 200, "w"))
		checkRevs(t, &l)
	}
	require.NotNil(t, l.revIndex(), "built again")
	e, _ = l.At(410)
	require.Equal(t, int64(410), e.Rev)
}

// TestTTLEntryLeavesRoomForItsExpiry: after an entry with a TTL, the log can
// take the OpExpire without growing, so a purge never allocates for it.
func TestTTLEntryLeavesRoomForItsExpiry(t *testing.T) {
	var l Log[string]
	for i := range 40 {
		e := put(int64(2*i+1), i, "v")
		e.Expires, e.HasTTL = at(i+1).UnixNano(), true
		l.Append(e)
		require.Greater(t, cap(l.entries), len(l.entries), "after TTL entry %d", i)
		l.Append(entry(int64(2*i+2), at(i+1), Expire, "", nil))
		checkRevs(t, &l)
	}
	l.Append(put(81, 50, "no TTL"))
	require.Len(t, l.Entries(), 81)

	// The room is made the way append grows a log, one doubling at a time:
	// a log of one becomes four, not three, so later capacities stay those
	// append picks (the heap under a history cap grew 5% when they did not).
	var m Log[string]
	m.Append(put(1, 0, "no TTL"))
	e := put(2, 1, "v")
	e.Expires, e.HasTTL = at(2).UnixNano(), true
	m.Append(e)
	require.Equal(t, 4, cap(m.entries))
}

func TestDropBefore(t *testing.T) {
	var l Log[string]
	for _, r := range []int64{2, 5, 9} {
		l.Append(Entry[string]{Rev: r, Op: Put})
	}
	require.Equal(t, 0, l.DropBefore(2))
	require.Equal(t, int64(0), l.Lo(), "nothing dropped: not trimmed")
	require.Equal(t, 1, l.DropBefore(5))
	require.Equal(t, int64(5), l.Lo())
	require.Equal(t, 1, l.DropBefore(100), "the newest entry stays")
	require.Equal(t, 1, l.Len())
	_, st := l.At(6)
	require.Equal(t, Compacted, st)
}

func TestDroppedAndFrom(t *testing.T) {
	var l Log[string]
	for _, r := range []int64{2, 5, 9, 12} {
		l.Append(Entry[string]{Rev: r, Op: Put})
	}
	require.Zero(t, l.Dropped())
	e, ok := l.From(6)
	require.True(t, ok)
	require.Equal(t, int64(9), e.Rev)
	e, _ = l.From(5)
	require.Equal(t, int64(5), e.Rev)
	_, ok = l.From(13)
	require.False(t, ok)
	l.DropBefore(9)
	require.Equal(t, int64(5), l.Dropped(), "the newest entry dropped")
	l.TrimTo(1, 100)
	require.Equal(t, int64(9), l.Dropped())
	var m Log[string]
	m.Append(Entry[string]{Rev: 7, Op: Put})
	m.MarkTrimmed()
	m.SetDropped(4)
	require.Equal(t, int64(4), m.Dropped(), "rebuilt: as recorded")
	m.SetDropped(3)
	require.Equal(t, int64(4), m.Dropped(), "never lowered")
}

// TestSeal drops what a seal moved to the sealed tier: reads below the
// oldest entry kept answer Sealed (Compacted below a trim made before the
// seal), Lo and Dropped stay, and a trim after the seal hides it all.
func TestSeal(t *testing.T) {
	l := logOf(put(2, 2, "a"), put(5, 5, "b"), del(9, 9), put(12, 12, "c"))
	require.Zero(t, l.Seal(1), "nothing at or below 1")
	require.Zero(t, l.Seal(4), "the newest at or below 4 is the oldest entry: nothing older to move")
	require.Equal(t, 2, l.Seal(10), "keeps del@9, the newest at or below 10")
	require.Equal(t, int64(9), l.SealedBelow())
	require.Zero(t, l.Lo())
	require.Zero(t, l.Dropped())
	for rev, want := range map[int64]Status{1: Absent, 2: Sealed, 5: Sealed, 8: Sealed, 9: Found, 11: Found, 12: Found} {
		_, st := l.At(rev)
		require.Equal(t, want, st, "At(%d)", rev)
	}
	_, st := l.AsOf(at(6), 100)
	require.Equal(t, Sealed, st)
	e, st := l.AsOf(at(10), 100)
	require.Equal(t, Found, st)
	require.Equal(t, int64(9), e.Rev)

	l.TrimTo(1, math.MaxInt64) // a trim after the seal: below it, Compacted
	require.Zero(t, l.SealedBelow())
	_, st = l.At(5)
	require.Equal(t, Compacted, st)

	l = logOf(put(2, 2, "a"), put(5, 5, "b"), put(7, 7, "x"), del(9, 9))
	l.CutBefore(5) // trimmed: Lo is 5
	require.Equal(t, int64(5), l.Lo())
	require.Equal(t, 2, l.Seal(9))
	require.Equal(t, int64(5), l.Lo(), "the trim's floor outlives the entry it was")
	for rev, want := range map[int64]Status{3: Compacted, 4: Compacted, 5: Sealed, 8: Sealed, 9: Found} {
		_, st := l.At(rev)
		require.Equal(t, want, st, "At(%d)", rev)
	}

	l = logOf(put(3, 3, "a"))
	l.MarkSealed(2, false)
	_, st = l.At(2)
	require.Equal(t, Sealed, st, "a log rebuilt from a snapshot, sealed below its entry")
	_, st = l.At(1)
	require.Equal(t, Absent, st, "below the key's first entry, which the tier holds")
	l.MarkSealed(2, true)
	_, st = l.At(1)
	require.Equal(t, Compacted, st)
}

// TestAppendWithin: a capped log's array stops at the cap's room, where
// append would have doubled it, and the log reads as one appended to.
func TestAppendWithin(t *testing.T) {
	var l Log[string]
	for i := range 50 {
		l.AppendWithin(put(int64(i+1), i, "v"), 3)
		if l.Len() > 2 {
			l.TrimTo(1, 1<<40)
		}
		require.LessOrEqual(t, cap(l.entries), 3, "after %d appends", i+1)
		e, st := l.At(int64(i + 1))
		require.Equal(t, Found, st)
		require.Equal(t, int64(i+1), e.Rev)
	}
	for i := 50; i < 60; i++ { // past most (a pinned reader kept the entries): append's growth
		l.AppendWithin(put(int64(i+1), i, "v"), 3)
	}
	require.Equal(t, int64(51), l.Entries()[l.Len()-10].Rev)
	checkRevs(t, &l)

	// With TTLs among the writes (each needs room for its expiry), under
	// caps of 1 to 4, trimmed as the store trims (past 2n, back to n): the
	// array never passes 2n+1, and every write is read back.
	rng := rand.New(rand.NewPCG(7, 8))
	for n := 1; n <= 4; n++ {
		var l Log[string]
		for i := range 2000 {
			e := put(int64(i+1), i, "v")
			if rng.IntN(3) == 0 {
				e.HasTTL, e.Expires = true, at(i+100).UnixNano()
			}
			l.AppendWithin(e, 2*n+1)
			require.LessOrEqual(t, cap(l.entries), 2*n+1, "cap %d, after %d writes", n, i+1)
			got, st := l.At(int64(i + 1))
			require.Equal(t, Found, st)
			require.Equal(t, e, got)
			if l.Len() > 2*n {
				l.TrimTo(n, 1<<40)
			}
		}
	}
}

// TestLogIsSmall: a store holds a Log per key, so a short log keeps its
// rare fields out of line: 40 bytes, and no ext once trims and seals are
// undone. The packed dropped revision and trimmed flag do not disturb
// each other.
func TestLogIsSmall(t *testing.T) {
	require.Equal(t, uintptr(40), unsafe.Sizeof(Log[[]byte]{}))
	l := logOf(put(1, 1, "a"), put(2, 2, "b"), put(3, 3, "c"))
	l.Seal(2)
	require.NotNil(t, l.ext, "a sealed log keeps its bounds")
	require.Equal(t, int64(2), l.SealedBelow())
	l.TrimTo(1, 10)
	require.Nil(t, l.ext, "a trim hides the tier: nothing rare is left")
	require.Equal(t, int64(2), l.Dropped())
	require.Equal(t, int64(3), l.Lo())
	l.SetDropped(1 << 61)
	require.Equal(t, int64(1<<61), l.Dropped())
	require.Equal(t, int64(3), l.Lo(), "still trimmed")
	l.SetDropped(5)
	require.Equal(t, int64(1<<61), l.Dropped(), "never lowered")
	l.SetDropped(math.MaxInt64) // read from a file: every revision is kept whole
	require.Equal(t, int64(math.MaxInt64), l.Dropped())
	require.Equal(t, int64(3), l.Lo(), "still trimmed")

	var u Log[string] // not trimmed: a huge dropped does not make it so
	u.Append(put(1, 1, "a"))
	u.SetDropped(1 << 62)
	require.Equal(t, int64(1<<62), u.Dropped())
	require.Zero(t, u.Lo(), "not trimmed")
}
