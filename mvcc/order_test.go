package mvcc

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClockRule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	o := NewOrder(func() time.Time { return now })
	require.Equal(t, Stamp{}, o.Head())
	require.Equal(t, t0, o.Now(o.Head()))
	require.Equal(t, int64(1), o.Commit(o.Now(o.Head())))

	now = t0.Add(-time.Hour) // the clock goes back
	require.Equal(t, t0, o.Now(o.Head()), "times never decrease")
	require.Equal(t, int64(2), o.Commit(o.Now(o.Head())))

	now = time.Now() // a monotonic reading is dropped
	got := o.Now(o.Head())
	require.Equal(t, now.Round(0), got)
	require.Equal(t, Stamp{Rev: 2, Time: t0}, o.Head())
	first, ok := o.First()
	require.True(t, ok)
	require.Equal(t, t0, first)
}

func TestRevAtAndForget(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := NewOrder(time.Now)
	r, known := o.RevAt(t0)
	require.Equal(t, int64(0), r)
	require.Equal(t, Known, known, "an empty order knows rev 0")
	// revisions 1..6 at 1s 2s 2s 2s 5s 9s
	for _, s := range []int{1, 2, 2, 2, 5, 9} {
		o.Commit(t0.Add(time.Duration(s) * time.Second))
	}
	sec := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		s    int
		want int64
	}{{0, 0}, {1, 1}, {2, 4}, {3, 4}, {5, 5}, {8, 5}, {9, 6}, {100, 6}} {
		r, known := o.RevAt(sec(tc.s))
		require.Equal(t, Known, known)
		require.Equal(t, tc.want, r, "RevAt(%ds)", tc.s)
	}

	o.Forget(4)
	require.Equal(t, int64(4), o.Base())
	_, ok := o.TimeOf(3)
	require.False(t, ok)
	tm, ok := o.TimeOf(4)
	require.True(t, ok)
	require.Equal(t, sec(2), tm)
	r, known = o.RevAt(sec(1))
	require.Equal(t, Forgotten, known, "revision 1 is below the base")
	r, known = o.RevAt(sec(2))
	require.Equal(t, Known, known)
	require.Equal(t, int64(4), r, "the base's time itself is known")
	r, known = o.RevAt(sec(0))
	require.Equal(t, Known, known, "before the first revision is always rev 0")
	require.Equal(t, int64(0), r)

	o.Forget(100) // never past the head
	require.Equal(t, int64(6), o.Base())
	_, ok = o.TimeOf(6)
	require.True(t, ok)
	o.Forget(2) // never backwards
	require.Equal(t, int64(6), o.Base())
}

// TestShed: the times below Held are known but not held; RevAt says
// Below where one of them is the answer, and Forget moves Base within
// them without touching what is held.
func TestShed(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	o := NewOrder(time.Now)
	for _, s := range []int{1, 2, 3, 4, 5, 6} { // revisions 1..6
		o.Commit(sec(s))
	}
	o.Shed(4)
	require.Equal(t, int64(1), o.Base())
	require.Equal(t, int64(4), o.Held())
	_, ok := o.TimeOf(3)
	require.False(t, ok, "shed")
	tm, ok := o.TimeOf(4)
	require.True(t, ok)
	require.Equal(t, sec(4), tm)
	for _, tc := range []struct {
		s    int
		want int64
		a    Answer
	}{{0, 0, Known}, {1, 0, Below}, {3, 0, Below}, {4, 4, Known}, {9, 6, Known}} {
		r, a := o.RevAt(sec(tc.s))
		require.Equal(t, tc.a, a, "RevAt(%ds)", tc.s)
		require.Equal(t, tc.want, r, "RevAt(%ds)", tc.s)
	}
	o.Forget(2) // below Held: Base moves, nothing held goes
	require.Equal(t, int64(2), o.Base())
	require.Equal(t, int64(4), o.Held())
	_, a := o.RevAt(sec(3))
	require.Equal(t, Below, a)
	o.Forget(5) // past Held: both move
	require.Equal(t, int64(5), o.Base())
	require.Equal(t, int64(5), o.Held())
	_, a = o.RevAt(sec(3))
	require.Equal(t, Forgotten, a)
	o.Shed(100) // never the last time
	require.Equal(t, int64(6), o.Held())
	_, ok = o.TimeOf(6)
	require.True(t, ok)
	require.Equal(t, int64(5), o.Base())
}

func TestForgetGivesMemoryBack(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := NewOrder(time.Now)
	for i := range 10000 {
		o.Commit(t0.Add(time.Duration(i)))
		o.Forget(o.Head().Rev - 10)
	}
	require.Equal(t, int64(11), o.times.len(), "the times held are those kept")
	require.Len(t, o.times.blocks, 1, "blocks of forgotten times are freed")
}

// The timeline keeps instants outside what Unix nanoseconds hold, and
// orders them exactly; TimeOf gives the same instant back in UTC.
func TestTimelineEdges(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	times := []time.Time{
		{},
		time.Date(1000, 1, 1, 0, 0, 0, 0, loc),
		time.Date(1000, 1, 1, 0, 0, 0, 1, loc),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Unix(0, 0),
		time.Date(5000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	o := NewOrder(time.Now)
	for _, tm := range times {
		o.Commit(tm)
	}
	for i, tm := range times {
		rev := int64(i + 1)
		got, ok := o.TimeOf(rev)
		require.True(t, ok)
		require.True(t, tm.Equal(got), "TimeOf(%d) = %v, want %v", rev, got, tm)
		require.Equal(t, time.UTC, got.Location())
		r, known := o.RevAt(tm)
		require.Equal(t, Known, known)
		require.Equal(t, rev, r, "RevAt(%v)", tm)
		if i > 0 {
			r, _ = o.RevAt(tm.Add(-1))
			require.Equal(t, rev-1, r, "RevAt(%v - 1ns)", tm)
		}
	}
}

// A commit's own allocation is its share of a timeline block and of a block
// of heads, which must fill its size class (stampBlock): the bound fails if
// the block spills into the next class up. Counted from TotalAlloc over many
// commits; the rest is the growth of the first timeline block and of the
// list of blocks.
func TestCommitAllocatesLittle(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := NewOrder(time.Now)
	const n = 127 * 4096
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		o.Commit(t0.Add(time.Duration(i)))
	}
	runtime.ReadMemStats(&after)
	perRev := float64(after.TotalAlloc-before.TotalAlloc) / n
	require.Less(t, perRev, 16+33.0, "bytes allocated a commit: %.2f", perRev)
}

// TestCommitN: a batch takes consecutive revisions with one time, and a
// reader sees only the head after the whole batch.
func TestCommitN(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := NewOrder(func() time.Time { return t0 })
	require.Equal(t, int64(1), o.Commit(t0))
	require.Equal(t, int64(4), o.CommitN(3, t0.Add(time.Second)))
	require.Equal(t, Stamp{Rev: 4, Time: t0.Add(time.Second)}, o.Head())
	for rev := int64(2); rev <= 4; rev++ {
		at, ok := o.TimeOf(rev)
		require.True(t, ok)
		require.Equal(t, t0.Add(time.Second), at)
	}
	r, known := o.RevAt(t0.Add(time.Second))
	require.Equal(t, Known, known)
	require.Equal(t, int64(4), r, "a time read lands after the whole batch")
	r, _ = o.RevAt(t0)
	require.Equal(t, int64(1), r)
	require.Equal(t, int64(5), o.Next())
}
