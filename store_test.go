package revkv_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

func newStore(t *testing.T, opts ...revkv.Option) (*revkv.Store[string], *manualClock) {
	t.Helper()
	c := newClock(epoch)
	s := revkv.New[string](append([]revkv.Option{revkv.WithClock(c.Now)}, opts...)...)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, c
}

// unchanged asserts that a failed call wrote nothing.
func unchanged(t *testing.T, s *revkv.Store[string], rev revkv.Revision, hist map[string][]revkv.Entry[string]) {
	t.Helper()
	require.Equal(t, rev, s.Rev(), "a failed call took no revision")
	for k, h := range hist {
		require.Equal(t, h, s.History(k), "a failed call changed %q", k)
	}
}

func TestBadInputErrors(t *testing.T) {
	s, c := newStore(t)
	_, err := s.Put("live", "v")
	require.NoError(t, err)
	_, err = s.PutTTL("ttl", "v", time.Minute)
	require.NoError(t, err)
	rev := s.Rev() // 2: "live" was written at 1, "ttl" at 2
	hist := map[string][]revkv.Entry[string]{"live": s.History("live"), "ttl": s.History("ttl"), "missing": nil}

	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"Delete missing", func() error { _, err := s.Delete("missing"); return err }, revkv.ErrNotFound},
		{"Expire missing", func() error { _, err := s.Expire("missing", time.Second); return err }, revkv.ErrNotFound},
		{"Persist missing", func() error { _, err := s.Persist("missing"); return err }, revkv.ErrNotFound},
		{"TTL missing", func() error { _, err := s.TTL("missing"); return err }, revkv.ErrNotFound},
		{"Persist without TTL", func() error { _, err := s.Persist("live"); return err }, revkv.ErrNoTTL},
		{"TTL without TTL", func() error { _, err := s.TTL("live"); return err }, revkv.ErrNoTTL},
		{"PutTTL zero", func() error { _, err := s.PutTTL("live", "x", 0); return err }, revkv.ErrInvalidTTL},
		{"PutTTL negative", func() error { _, err := s.PutTTL("live", "x", -time.Second); return err }, revkv.ErrInvalidTTL},
		{"PutTTL past 2262", func() error { _, err := s.PutTTL("live", "x", math.MaxInt64); return err }, revkv.ErrInvalidTTL},
		{"Expire zero", func() error { _, err := s.Expire("live", 0); return err }, revkv.ErrInvalidTTL},
		{"Expire past 2262", func() error { _, err := s.Expire("ttl", math.MaxInt64); return err }, revkv.ErrInvalidTTL},
		{"CompareAndPut stale" /* live was written at 1, rev is 2 */, func() error { _, err := s.CompareAndPut("live", rev, "x"); return err }, revkv.ErrConflict},
		{"CompareAndPut 0 on a live key", func() error { _, err := s.CompareAndPut("live", 0, "x"); return err }, revkv.ErrConflict},
		{"CompareAndPut on a missing key", func() error { _, err := s.CompareAndPut("missing", 1, "x"); return err }, revkv.ErrConflict},
		{"CompareAndPut negative", func() error { _, err := s.CompareAndPut("live", -1, "x"); return err }, revkv.ErrConflict},
		{"GetAt future", func() error { _, _, err := s.GetAt("live", rev+1); return err }, revkv.ErrFutureRevision},
		{"GetAt MaxInt64", func() error { _, _, err := s.GetAt("live", math.MaxInt64); return err }, revkv.ErrFutureRevision},
		{"GetAsOf future", func() error { _, _, err := s.GetAsOf("live", c.Now().Add(1)); return err }, revkv.ErrFutureRevision},
		{"At future", func() error { _, err := s.At(rev + 1); return err }, revkv.ErrFutureRevision},
		{"AsOf future", func() error { _, err := s.AsOf(c.Now().Add(time.Hour)); return err }, revkv.ErrFutureRevision},
		{"Compact future", func() error { return s.Compact(rev + 1) }, revkv.ErrFutureRevision},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), "revkv: ")
			unchanged(t, s, rev, hist)
		})
	}

	// The empty state is always known.
	v, ok, err := s.GetAt("live", 0)
	require.NoError(t, err)
	require.False(t, ok)
	require.Empty(t, v)
	_, ok, err = s.GetAt("live", -5)
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = s.GetAsOf("live", time.Time{})
	require.NoError(t, err)
	require.False(t, ok)
}

func TestCompactedErrors(t *testing.T) {
	s, c := newStore(t)
	for _, v := range []string{"1", "2", "3", "4"} {
		c.Add(time.Second)
		_, err := s.Put("k", v)
		require.NoError(t, err)
	}
	require.NoError(t, s.Compact(3))
	require.Equal(t, revkv.Revision(3), s.Floor())
	rev := s.Rev()

	_, _, err := s.GetAt("k", 2)
	require.ErrorIs(t, err, revkv.ErrCompacted)
	_, _, err = s.GetAt("never-written", 2)
	require.ErrorIs(t, err, revkv.ErrCompacted, "compaction is global: every key")
	_, _, err = s.GetAsOf("k", epoch.Add(2*time.Second))
	require.ErrorIs(t, err, revkv.ErrCompacted)
	_, err = s.At(2)
	require.ErrorIs(t, err, revkv.ErrCompacted)
	_, err = s.AsOf(epoch.Add(2 * time.Second))
	require.ErrorIs(t, err, revkv.ErrCompacted)
	require.Equal(t, rev, s.Rev())

	got, ok, err := s.GetAt("k", 3)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "3", got)
	got, ok, err = s.GetAsOf("k", epoch.Add(3*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "3", got)
	require.NoError(t, s.Compact(2), "at or below the last compaction: a no-op")
	require.NoError(t, s.Compact(-1))
	require.Len(t, s.History("k"), 2, "entries below 3 were freed at once")
}

func TestMaxHistoryPerKey(t *testing.T) {
	s, _ := newStore(t, revkv.WithMaxHistory(2))
	for _, v := range []string{"1", "2", "3", "4"} { // revs 1..4: never more than 2n
		_, err := s.Put("hot", v)
		require.NoError(t, err)
	}
	_, err := s.Put("cold", "c") // rev 5
	require.NoError(t, err)
	require.Len(t, s.History("hot"), 4, "2n entries are allowed between trims")
	_, err = s.Put("hot", "5") // rev 6: over 2n, cut back to n at once
	require.NoError(t, err)
	require.Len(t, s.History("hot"), 2)
	require.Equal(t, revkv.Revision(4), s.Floor())

	_, _, err = s.GetAt("hot", 3)
	require.ErrorIs(t, err, revkv.ErrCompacted)
	v, ok, err := s.GetAt("hot", 4)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "4", v)
	v, ok, err = s.GetAt("cold", 5)
	require.NoError(t, err, "other keys are unaffected")
	require.True(t, ok)
	require.Equal(t, "c", v)
	_, ok, err = s.GetAt("cold", 3)
	require.NoError(t, err)
	require.False(t, ok)
	_, err = s.At(3)
	require.ErrorIs(t, err, revkv.ErrCompacted, "no consistent view below the floor")
}

func TestNegativeOptionsPanic(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  revkv.Option
	}{
		{"WithExpiryInterval", revkv.WithExpiryInterval(-1)},
		{"WithMaxHistory", revkv.WithMaxHistory(-1)},
		{"WithRetention", revkv.WithRetention(-time.Second)},
		{"WithTrimInterval", revkv.WithTrimInterval(-1)},
		{"WithClock", revkv.WithClock(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "New must panic")
				require.Contains(t, r, tc.name, "the panic names the option")
			}()
			revkv.New[int](tc.opt)
		})
	}
}

func TestClosedStore(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.PutTTL("k", "v", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	rev := s.Rev()
	for name, call := range map[string]func() error{
		"Put":           func() error { _, err := s.Put("k", "x"); return err },
		"PutTTL":        func() error { _, err := s.PutTTL("k", "x", time.Second); return err },
		"CompareAndPut": func() error { _, err := s.CompareAndPut("k", rev, "x"); return err },
		"Delete":        func() error { _, err := s.Delete("k"); return err },
		"Expire":        func() error { _, err := s.Expire("k", time.Second); return err },
		"Persist":       func() error { _, err := s.Persist("k"); return err },
		"Compact":       func() error { return s.Compact(rev) },
	} {
		require.ErrorIs(t, call(), revkv.ErrClosed, name)
	}
	require.Zero(t, s.PurgeExpired())
	require.Zero(t, s.Trim())
	require.Equal(t, rev, s.Rev())
	v, ok := s.Get("k")
	require.True(t, ok, "reads still answer")
	require.Equal(t, "v", v)
}

// TestPurgeWritesManyExpiriesInOrder purges more expiries than one run of
// reads (32) and one hold of the write lock (256): every one is written once,
// as consecutive revisions in order of expiry time and then key, each at its
// key's expiry time; and the expiries not yet due stay pending.
func TestPurgeWritesManyExpiriesInOrder(t *testing.T) {
	s, c := newStore(t)
	const n = 1000
	ttlOf := func(i int) time.Duration { return time.Duration(i%7+1) * time.Second }
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		_, err := s.PutTTL(fmt.Sprintf("k%04d", i), "v", ttlOf(i))
		require.NoError(t, err)
	}
	type expiry struct {
		at  time.Time
		key string
	}
	var due []expiry
	for i := range n {
		due = append(due, expiry{epoch.Add(ttlOf(i)), fmt.Sprintf("k%04d", i)})
	}
	slices.SortFunc(due, func(a, b expiry) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})

	check := func(from int, to time.Duration) int {
		t.Helper()
		base := s.Rev()
		c.Add(epoch.Add(to).Sub(c.Now()))
		got := s.PurgeExpired()
		for i, d := range due[from : from+got] {
			require.False(t, d.at.After(epoch.Add(to)), "%s was not due", d.key)
			h := s.History(d.key)
			require.Len(t, h, 2, d.key)
			require.Equal(t, revkv.OpExpire, h[1].Op, d.key)
			require.Equal(t, base+revkv.Revision(i+1), h[1].Rev, d.key)
			require.Equal(t, d.at, h[1].Time, d.key)
		}
		require.Equal(t, base+revkv.Revision(got), s.Rev())
		return from + got
	}
	done := check(0, 3500*time.Millisecond)
	short := 0
	for i := range n {
		if ttlOf(i) <= 3*time.Second {
			short++
		}
	}
	require.Equal(t, short, done, "keys with a TTL of 1, 2 or 3 seconds")
	require.Equal(t, n-done, s.Len())
	done = check(done, time.Minute)
	require.Equal(t, n, done)
	require.Zero(t, s.Len())
	require.Zero(t, s.PurgeExpired())
}

func TestExpiryIsWrittenIntoHistory(t *testing.T) {
	s, c := newStore(t)
	rev, err := s.PutTTL("session", "alice", 30*time.Second)
	require.NoError(t, err)
	e, ok := s.GetEntry("session")
	require.True(t, ok)
	expiresAt := epoch.Add(30 * time.Second)
	require.Equal(t, expiresAt, e.ExpiresAt)
	left, err := s.TTL("session")
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, left)

	c.Add(45 * time.Second)
	_, ok = s.Get("session")
	require.False(t, ok, "invisible from its expiry time on, with nothing run")
	_, err = s.TTL("session")
	require.ErrorIs(t, err, revkv.ErrNotFound)
	require.Zero(t, s.Len())
	require.Equal(t, rev, s.Rev(), "reads never write")
	require.Len(t, s.History("session"), 1)

	require.Equal(t, 1, s.PurgeExpired())
	h := s.History("session")
	require.Len(t, h, 2)
	require.Equal(t, revkv.OpExpire, h[1].Op)
	require.Equal(t, expiresAt, h[1].Time, "the entry's time is exactly the expiry time")
	require.Equal(t, rev+1, h[1].Rev)
	require.True(t, h[1].ExpiresAt.IsZero())
	require.Zero(t, s.PurgeExpired())

	// The past stays answerable by time: alive just before, gone at ExpiresAt.
	v, ok, err := s.GetAsOf("session", expiresAt.Add(-1))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "alice", v)
	_, ok, err = s.GetAsOf("session", expiresAt)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestFailedWriteStillMaterialisesExpiries(t *testing.T) {
	s, c := newStore(t)
	_, err := s.PutTTL("a", "v", time.Second)
	require.NoError(t, err)
	c.Add(2 * time.Second)
	_, err = s.Delete("missing")
	require.ErrorIs(t, err, revkv.ErrNotFound)
	require.Equal(t, revkv.Revision(2), s.Rev(), "the expiry took revision 2 before the write failed")
	require.Equal(t, revkv.OpExpire, s.History("a")[1].Op)

	_, err = s.PutTTL("b", "v", 0) // fails its argument check: nothing at all happens
	require.ErrorIs(t, err, revkv.ErrInvalidTTL)
	require.Equal(t, revkv.Revision(2), s.Rev())
}

func TestNewerWriteCancelsExpiry(t *testing.T) {
	s, c := newStore(t)
	_, err := s.PutTTL("k", "old", time.Second)
	require.NoError(t, err)
	_, err = s.Put("k", "new") // SET semantics: the TTL is gone
	require.NoError(t, err)
	c.Add(time.Hour)
	v, ok := s.Get("k")
	require.True(t, ok, "a stale expiry never removes a newer value")
	require.Equal(t, "new", v)
	require.Zero(t, s.PurgeExpired())

	_, err = s.Expire("k", time.Second)
	require.NoError(t, err)
	_, err = s.Persist("k")
	require.NoError(t, err)
	c.Add(time.Hour)
	require.Zero(t, s.PurgeExpired())
	h := s.History("k")
	require.Len(t, h, 4)
	for _, e := range h[1:] {
		require.Equal(t, "new", e.Value, "Expire and Persist carry the value")
	}
}

func TestClockGoesBack(t *testing.T) {
	s, c := newStore(t)
	_, err := s.Put("k", "1")
	require.NoError(t, err)
	c.Add(-time.Hour)
	_, err = s.Put("k", "2")
	require.NoError(t, err)
	h := s.History("k")
	require.Equal(t, h[0].Time, h[1].Time, "the store keeps its last time")
	_, _, err = s.GetAsOf("k", epoch)
	require.NoError(t, err, "now is the later of the clock and the last revision")
}

// Entries give back the clock's times exactly, in the clock's location,
// whichever it is and however often it changes; expiry entries and
// ExpiresAt take the location of the write that set the TTL.
func TestTimesKeepTheClocksLocation(t *testing.T) {
	var i int
	locs := []*time.Location{time.Local, time.UTC, time.FixedZone("A", 5*3600), time.FixedZone("B", -7*3600)}
	var last time.Time
	clock := func() time.Time {
		i++
		last = time.Date(2026, 11, 21, 14, 2, i, 123_456_789, time.UTC).In(locs[i%len(locs)])
		return last
	}
	s := revkv.New[string](revkv.WithClock(clock))
	defer s.Close()
	var want []time.Time
	for j := range 8 {
		_, err := s.PutTTL("k", "v", time.Duration(j+1)*time.Hour)
		require.NoError(t, err)
		want = append(want, last)
	}
	for j, e := range s.History("k") {
		require.Equal(t, want[j], e.Time, "entry %d", j)
		require.Same(t, want[j].Location(), e.Time.Location(), "entry %d", j)
		require.Equal(t, want[j].Add(time.Duration(j+1)*time.Hour), e.ExpiresAt, "entry %d", j)
	}
	e, ok := s.GetEntry("k")
	require.True(t, ok)
	require.Same(t, want[7].Location(), e.ExpiresAt.Location())

	// A fresh clock location per call, for a short TTL that then expires.
	s2 := revkv.New[string](revkv.WithClock(func() time.Time {
		i++
		return time.Date(2026, 11, 21, 15, 0, i, 0, time.UTC).In(time.FixedZone("fresh", i))
	}))
	defer s2.Close()
	_, err := s2.PutTTL("k", "v", time.Second)
	require.NoError(t, err)
	ttlLoc := s2.History("k")[0].Time.Location()
	require.Equal(t, 1, s2.PurgeExpired())
	h := s2.History("k")
	require.Len(t, h, 2)
	require.Equal(t, revkv.OpExpire, h[1].Op)
	require.Same(t, ttlLoc, h[1].Time.Location(), "an expiry is in the location of the write that set it")
	require.True(t, h[1].Time.Equal(h[0].ExpiresAt))
}

func TestViewPinsHistory(t *testing.T) {
	s, _ := newStore(t, revkv.WithMaxHistory(1))
	_, err := s.Put("k", "old")
	require.NoError(t, err)
	v, err := s.At(1)
	require.NoError(t, err)
	for i := range 10 {
		_, err = s.Put("k", string(rune('a'+i)))
		require.NoError(t, err)
	}
	require.NoError(t, s.Compact(s.Rev()))
	s.Trim()
	got, ok := v.Get("k")
	require.True(t, ok)
	require.Equal(t, "old", got, "a view's reads never fail and never change")
	_, _, err = s.GetAt("k", 1)
	require.ErrorIs(t, err, revkv.ErrCompacted, "the store's own reads follow the compaction")

	v.Close()
	require.Positive(t, s.Trim(), "what the view held is freed by the next trim")
	require.Len(t, s.History("k"), 1)
	_, ok = v.Get("k")
	require.False(t, ok, "a closed view returns nothing")
}

func TestScanDuringWrites(t *testing.T) {
	s, _ := newStore(t)
	for _, k := range []string{"a/1", "a/2", "a/3", "b"} {
		_, err := s.Put(k, k)
		require.NoError(t, err)
	}
	var seen []string
	for k := range s.Scan("a/") {
		seen = append(seen, k)
		_, err := s.Delete(k)
		require.NoError(t, err)
		_, err = s.Put("a/9", "new") // new keys do not join the running scan
		require.NoError(t, err)
	}
	require.Equal(t, []string{"a/1", "a/2", "a/3"}, seen)
	require.Equal(t, 2, s.Len())
	for range s.Scan("a/") {
		break // breaking out releases the scan's pin
	}
	require.NoError(t, s.Compact(s.Rev()))
	require.Nil(t, s.History("a/1"), "a key whose only entry is a tombstone at the compaction disappears")
}
