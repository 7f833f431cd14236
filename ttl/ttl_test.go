package ttl

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPopDueOrder(t *testing.T) {
	x := New[int]()
	x.Add("b", 10, 1)
	x.Add("a", 10, 2) // tie: key order
	x.Add("c", 5, 3)
	x.Add("d", 20, 4)
	require.Equal(t, 4, x.Len())
	v, ok := x.Lookup("a", 10)
	require.True(t, ok)
	require.Equal(t, 2, v)
	_, ok = x.Lookup("a", 11)
	require.False(t, ok, "a different time is a different item")
	require.Equal(t, 3, x.CountDue(10))
	require.Equal(t, 0, x.CountDue(4))
	require.True(t, x.Due(5), "due exactly at its time")
	require.False(t, x.Due(4))

	var got []Item[int]
	for {
		it, ok := x.PopDue(10)
		if !ok {
			break
		}
		got = append(got, it)
	}
	require.Equal(t, []Item[int]{{5, "c", 3}, {10, "a", 2}, {10, "b", 1}}, got, "each with its value")
	require.Equal(t, 1, x.Len(), "the item not due stays")
	_, ok = x.PopDue(19)
	require.False(t, ok)
}

func TestRemove(t *testing.T) {
	x := New[int]()
	x.Add("a", 10, 1)
	require.False(t, x.Remove("a", 11), "a different time is a different item")
	require.True(t, x.Remove("a", 10))
	require.False(t, x.Remove("a", 10))
	require.Zero(t, x.Len())
	_, ok := x.PopDue(math.MaxInt64)
	require.False(t, ok, "empty index")
	require.False(t, x.Due(math.MaxInt64), "empty index")
}

func TestNanos(t *testing.T) {
	require.Equal(t, int64(math.MinInt64), Nanos(time.Time{}))
	require.Equal(t, int64(math.MaxInt64), Nanos(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, now.UnixNano(), Nanos(now))
}

func TestExpiryTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		now  time.Time
		d    time.Duration
		ok   bool
	}{
		{"1ns", now, 1, true},
		{"a minute", now, time.Minute, true},
		{"zero", now, 0, false},
		{"negative", now, -time.Second, false},
		{"past 2262", now, math.MaxInt64, false},
		{"just inside", time.Unix(0, math.MaxInt64-10), 9, true},
		{"to exactly the highest", time.Unix(0, math.MaxInt64-10), 10, true},
		{"just outside", time.Unix(0, math.MaxInt64-10), 11, false},
		{"to exactly the Unix epoch", time.Unix(-1, 0), time.Second, true},
		{"from before 1678", time.Unix(0, math.MinInt64).Add(-time.Hour), time.Minute, false},
		{"to the third lowest", time.Unix(0, math.MinInt64).Add(-time.Minute), time.Minute + 2, true},
		{"to the second lowest", time.Unix(0, math.MinInt64).Add(-time.Minute), time.Minute + 1, false},
		{"to exactly the lowest", time.Unix(0, math.MinInt64).Add(-time.Minute), time.Minute, false},
	} {
		at, ok := ExpiryTime(tc.now, tc.d)
		require.Equal(t, tc.ok, ok, tc.name)
		if ok {
			require.Equal(t, tc.now.Add(tc.d), at, tc.name)
			require.Greater(t, Nanos(at), int64(math.MinInt64+1), tc.name)
		}
	}
}

// TestReAddAfterRemove: a key removed from the end of the run and added
// again at the same time goes to the tree (it does not sort after the dead
// item), and is found, counted and popped there.
func TestReAddAfterRemove(t *testing.T) {
	x := New[int]()
	x.Add("a", 10, 1)
	x.Add("k", 20, 2)
	require.True(t, x.Remove("k", 20))
	x.Add("k", 20, 3)
	v, ok := x.Lookup("k", 20)
	require.True(t, ok)
	require.Equal(t, 3, v)
	require.Equal(t, 2, x.Len())
	it, _ := x.PopDue(100)
	require.Equal(t, "a", it.Key)
	it, ok = x.PopDue(100)
	require.True(t, ok)
	require.Equal(t, Item[int]{20, "k", 3}, it)
	_, ok = x.PopDue(100)
	require.False(t, ok)
	require.Zero(t, x.Len())
}
