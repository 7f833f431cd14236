package revkv_test

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// TestCompactBelowFloorKeepsTimeReads is the auditor's store: a config key
// written twice, a hot counter whose count trims raise Floor far above the
// config's revisions, then Compact at the config's second write. Every read
// by time from that write on is decided by entries the store kept, so it
// answers "250", as GetAt does; only reads before it are ErrCompacted.
func TestCompactBelowFloorKeepsTimeReads(t *testing.T) {
	noon := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	s, c := newStore(t, revkv.WithMaxHistory(100))
	c.Add(noon.Sub(c.Now()))
	_, err := s.Put("config/limits", "100")
	require.NoError(t, err)
	c.Add(time.Minute)
	second, err := s.Put("config/limits", "250")
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(2), second)
	for i := range 16 * 60 * 10 { // every 100 ms for 16 minutes
		c.Add(100 * time.Millisecond)
		_, err := s.Put("hot/counter", strconv.Itoa(i))
		require.NoError(t, err)
	}
	s.Trim()
	require.Greater(t, s.Floor(), second, "the hot key's trims raised Floor above the config's writes")
	require.NoError(t, s.Compact(second))

	for _, at := range []time.Time{noon.Add(time.Minute), noon.Add(time.Minute + time.Second), noon.Add(10 * time.Minute), c.Now()} {
		v, ok, err := s.GetAsOf("config/limits", at)
		require.NoError(t, err, "GetAsOf at %v", at)
		require.True(t, ok)
		require.Equal(t, "250", v)
	}
	v, ok, err := s.GetAt("config/limits", second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "250", v)

	_, _, err = s.GetAsOf("config/limits", noon.Add(time.Minute-1))
	require.ErrorIs(t, err, revkv.ErrCompacted, "before the compaction's time")
	_, _, err = s.GetAt("config/limits", second-1)
	require.ErrorIs(t, err, revkv.ErrCompacted)
}

// TestCompactBelowFloorCountsRemovedKeys: a key the compaction empties (its
// tombstone is at or below rev) must not read as "not found" at a time when
// it held a value. Here rev's own time is gone and the newest entry visible
// at rev is that tombstone, so the compaction's time is the tombstone's.
func TestCompactBelowFloorCountsRemovedKeys(t *testing.T) {
	s, c := newStore(t, revkv.WithMaxHistory(1))
	_, err := s.Put("gone", "v") // 1
	require.NoError(t, err)
	c.Add(time.Second)
	_, err = s.Put("kept", "a") // 2
	require.NoError(t, err)
	c.Add(time.Second)
	del, err := s.Delete("gone") // 3
	require.NoError(t, err)
	deletedAt := c.Now()
	c.Add(time.Second)
	_, err = s.Put("kept", "b") // 4
	require.NoError(t, err)
	c.Add(time.Second)
	_, err = s.Put("kept", "c") // 5
	require.NoError(t, err)
	s.Trim()
	require.Greater(t, s.Floor(), del)

	require.NoError(t, s.Compact(del))
	h := s.History("gone")
	require.Len(t, h, 1, "a tombstone at the compaction's revision stays, for a watch from there")
	require.Equal(t, del, h[0].Rev)
	_, _, err = s.GetAsOf("gone", deletedAt.Add(-time.Nanosecond))
	require.ErrorIs(t, err, revkv.ErrCompacted, "it held a value then: not known any more")
	_, ok, err := s.GetAsOf("gone", deletedAt)
	require.NoError(t, err)
	require.False(t, ok)

	require.NoError(t, s.Compact(del+1))
	require.Nil(t, s.History("gone"), "a compaction above the tombstone removes the key")
	_, ok, err = s.GetAsOf("gone", c.Now())
	require.NoError(t, err)
	require.False(t, ok)
}

// TestExpiryAtTheLastInstant: an expiry at time.Unix(0, math.MaxInt64) is
// valid, and is exact: the key is live until then and gone from then on.
func TestExpiryAtTheLastInstant(t *testing.T) {
	last := time.Unix(0, math.MaxInt64)
	s, c := newStore(t)
	ttl := last.Sub(c.Now())
	_, err := s.PutTTL("k", "v", ttl)
	require.NoError(t, err)
	e, ok := s.GetEntry("k")
	require.True(t, ok)
	require.True(t, e.ExpiresAt.Equal(last))
	_, err = s.PutTTL("k", "v", ttl+1)
	require.ErrorIs(t, err, revkv.ErrInvalidTTL)
	require.Contains(t, err.Error(), "2262-04-11T23:47:16.854775808Z", "the error names the refused expiry")
	_, err = s.Expire("k", ttl)
	require.NoError(t, err)

	c.Add(ttl - 1)
	v, ok := s.Get("k")
	require.True(t, ok, "live one nanosecond before")
	require.Equal(t, "v", v)
	c.Add(1)
	_, ok = s.Get("k")
	require.False(t, ok, "gone at the instant")
	require.Equal(t, 1, s.PurgeExpired())
	h := s.History("k")
	require.Equal(t, revkv.OpExpire, h[len(h)-1].Op)
	require.True(t, h[len(h)-1].Time.Equal(last))
	_, ok = s.Get("k")
	require.False(t, ok, "gone after the expiry is written")
}

// TestErrorsReadAsOneSentence: the package is named once, the call and key
// follow, and errors.Is and errors.As see through.
func TestErrorsReadAsOneSentence(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.Delete("missing")
	require.EqualError(t, err, `revkv: delete "missing": key not found`)
	require.ErrorIs(t, err, revkv.ErrNotFound)

	rev, err := s.Put("k", "v")
	require.NoError(t, err)
	_, err = s.CompareAndPut("k", rev+7, "w")
	require.EqualError(t, err, `revkv: compare-and-put "k": revision conflict (key is at revision 1, expected 8)`)
	var oe *revkv.OpError
	require.True(t, errors.As(err, &oe))
	require.Equal(t, rev, oe.Rev, "the conflict carries the key's current revision")
	require.Equal(t, "compare-and-put", oe.Op)
	require.Equal(t, "k", oe.Key)
	_, err = s.CompareAndPut("new", 3, "w")
	require.True(t, errors.As(err, &oe))
	require.Equal(t, revkv.Revision(0), oe.Rev, "a missing key is at revision 0")

	_, _, err = s.GetAt("k", 9)
	require.EqualError(t, err, `revkv: get "k" at 9: required revision is a future revision (latest is 1)`)
	require.EqualError(t, s.Compact(5), `revkv: compact at 5: required revision is a future revision (latest is 1)`)
	_, err = s.PutTTL("", "v", 0)
	require.EqualError(t, err, `revkv: put "" with ttl 0s: invalid TTL`)
	_, err = s.TTL("k")
	require.EqualError(t, err, `revkv: ttl of "k": key has no TTL`)
	_, err = s.At(4)
	require.EqualError(t, err, `revkv: view at 4: required revision is a future revision (latest is 1)`)
	require.NoError(t, s.Close())
	_, err = s.Put("k", "v")
	require.EqualError(t, err, `revkv: put "k": store is closed`)
	require.ErrorIs(t, err, revkv.ErrClosed)
}

// TestExpiresAtIsExact: PutExpiresAt and ExpireAt, on the store and in a
// Txn, give ExpiresAt == at to the nanosecond, whatever the write's time;
// the expiry is written at exactly at; an at not after the write's time,
// or past the last instant, is ErrInvalidTTL and writes nothing, not even
// the expiries due (an argument check, §3.3a).
func TestExpiresAtIsExact(t *testing.T) {
	s, c := newStore(t)
	at := c.Now().Add(1500*time.Millisecond + 7) // not a whole millisecond from now
	rev, err := s.PutExpiresAt("k", "v", at.In(time.FixedZone("east", 3600)))
	require.NoError(t, err)
	e, ok := s.GetEntry("k")
	require.True(t, ok)
	require.True(t, e.ExpiresAt.Equal(at), "ExpiresAt %v, want %v", e.ExpiresAt, at)
	require.Equal(t, time.UTC, e.ExpiresAt.Location(), "in the location of the write's time")
	require.Equal(t, rev, e.Rev)

	c.Add(at.Sub(c.Now()) - 1)
	_, ok = s.Get("k")
	require.True(t, ok, "live one nanosecond before at")
	c.Add(1)
	_, ok = s.Get("k")
	require.False(t, ok, "gone at at")

	before := s.Rev()
	hist := map[string][]revkv.Entry[string]{"k": s.History("k")}
	for _, bad := range []time.Time{c.Now(), c.Now().Add(-time.Hour), time.Unix(0, math.MaxInt64).Add(1), {}} {
		_, err := s.PutExpiresAt("j", "w", bad)
		require.ErrorIs(t, err, revkv.ErrInvalidTTL, "at %v", bad)
		_, err = s.ExpireAt("k", bad)
		require.ErrorIs(t, err, revkv.ErrInvalidTTL, "at %v", bad)
		unchanged(t, s, before, hist) // the due expiry of k is not written either
	}
	_, err = s.PutExpiresAt("j", "w", c.Now())
	require.EqualError(t, err, `revkv: put "j" expiring at 2026-11-21T14:02:01.500000007Z: invalid TTL (the expiry is not after the write's time 2026-11-21T14:02:01.500000007Z)`)

	_, err = s.ExpireAt("k", c.Now().Add(time.Second))
	require.ErrorIs(t, err, revkv.ErrNotFound, "k expired")
	h := s.History("k")
	require.Equal(t, revkv.OpExpire, h[len(h)-1].Op)
	require.True(t, h[len(h)-1].Time.Equal(at), "the expiry's time is at itself")

	_, err = s.Put("m", "x")
	require.NoError(t, err)
	at2 := c.Now().Add(time.Nanosecond)
	_, err = s.ExpireAt("m", at2)
	require.NoError(t, err)
	e, _ = s.GetEntry("m")
	require.True(t, e.ExpiresAt.Equal(at2))
	require.Equal(t, "x", e.Value)

	at3 := c.Now().Add(time.Hour + 3)
	_, err = s.Update(func(tx *revkv.Txn[string]) error {
		require.ErrorIs(t, tx.PutExpiresAt("t", "1", c.Now()), revkv.ErrInvalidTTL)
		require.ErrorIs(t, tx.ExpireAt("t", at3), revkv.ErrNotFound)
		require.NoError(t, tx.PutExpiresAt("t", "1", at3))
		require.NoError(t, tx.ExpireAt("t", at3.Add(1)))
		return nil
	})
	require.NoError(t, err)
	e, _ = s.GetEntry("t")
	require.True(t, e.ExpiresAt.Equal(at3.Add(1)))
}
