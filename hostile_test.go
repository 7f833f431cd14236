package revkv_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// TestHostileInput gives every method the inputs a careless or hostile
// caller might: odd keys and prefixes, revisions and times at the edges,
// TTLs at 1ns and past what Unix nanoseconds hold, upkeep on an empty store,
// and every method after Close. Each gets the answer the package
// documentation's table lists, never a panic, and nothing already stored is
// lost or changed by a failed call.
func TestHostileInput(t *testing.T) {
	huge := strings.Repeat("k", 1<<20)
	keys := []string{"", huge, "\xff\xfe\x00bad utf-8", "ok"}

	t.Run("empty store", func(t *testing.T) {
		s, c := newStore(t)
		require.Zero(t, s.Trim())
		require.Zero(t, s.PurgeExpired())
		require.NoError(t, s.Compact(0))
		require.NoError(t, s.Compact(-1))
		require.ErrorIs(t, s.Compact(1), revkv.ErrFutureRevision)
		require.ErrorIs(t, s.Compact(math.MaxInt64), revkv.ErrFutureRevision)
		require.Zero(t, s.Len())
		require.Zero(t, s.Floor())
		require.Nil(t, s.History("x"))
		require.Empty(t, collectStr(s.Scan("")))
		v, err := s.At(0)
		require.NoError(t, err, "the empty state is always known")
		require.Zero(t, v.Len())
		v.Close()
		v, err = s.AsOf(time.Time{})
		require.NoError(t, err)
		require.Zero(t, v.Rev())
		v.Close()
		_, _, err = s.GetAsOf("x", c.Now())
		require.NoError(t, err)
		_, err = s.AsOf(c.Now().Add(1))
		require.ErrorIs(t, err, revkv.ErrFutureRevision)
	})

	t.Run("keys", func(t *testing.T) {
		s, _ := newStore(t)
		for i, k := range keys {
			_, err := s.Put(k, k)
			require.NoError(t, err, "any string is a key (%d)", i)
		}
		for _, k := range keys {
			v, ok := s.Get(k)
			require.True(t, ok)
			require.Equal(t, k, v)
			require.Len(t, s.History(k), 1)
		}
		require.Equal(t, len(keys), s.Len())
		got := collectStr(s.Scan(""))
		require.Len(t, got, len(keys))
		require.Equal(t, "", got[0], "byte-wise order: the empty key first")
		require.Equal(t, []string{"\xff\xfe\x00bad utf-8"}, collectStr(s.Scan("\xff")))
		require.Equal(t, []string{huge}, collectStr(s.Scan(huge[:1000])))
		require.Empty(t, collectStr(s.Scan("no such prefix")))
		require.Empty(t, collectStr(s.Scan(huge+"x")))
		_, err := s.Delete("")
		require.NoError(t, err)
		_, ok := s.Get("")
		require.False(t, ok)
	})

	t.Run("revisions and times", func(t *testing.T) {
		s, c := newStore(t)
		_, err := s.Put("k", "v")
		require.NoError(t, err)
		before := s.History("k")
		for _, r := range []revkv.Revision{0, -1, math.MinInt64} {
			_, ok, err := s.GetAt("k", r)
			require.NoError(t, err, "GetAt(%d)", r)
			require.False(t, ok)
			v, err := s.At(r)
			require.NoError(t, err, "At(%d)", r)
			require.Zero(t, v.Rev())
			v.Close()
		}
		_, _, err = s.GetAt("k", math.MaxInt64)
		require.ErrorIs(t, err, revkv.ErrFutureRevision)
		_, err = s.At(math.MaxInt64)
		require.ErrorIs(t, err, revkv.ErrFutureRevision)
		for _, at := range []time.Time{{}, time.Unix(0, math.MinInt64), epoch.Add(-100 * 365 * 24 * time.Hour)} {
			_, ok, err := s.GetAsOf("k", at)
			require.NoError(t, err, "GetAsOf(%v): before the first revision", at)
			require.False(t, ok)
		}
		for _, at := range []time.Time{c.Now().Add(1), time.Unix(0, math.MaxInt64), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)} {
			_, _, err := s.GetAsOf("k", at)
			require.ErrorIs(t, err, revkv.ErrFutureRevision, "GetAsOf(%v)", at)
			_, err = s.AsOf(at)
			require.ErrorIs(t, err, revkv.ErrFutureRevision, "AsOf(%v)", at)
		}
		require.Equal(t, before, s.History("k"), "nothing changed")
	})

	t.Run("TTLs", func(t *testing.T) {
		s, c := newStore(t)
		_, err := s.PutTTL("short", "v", 1)
		require.NoError(t, err, "1ns is a valid TTL")
		_, ok := s.Get("short")
		require.True(t, ok, "alive until its expiry time")
		c.Add(1)
		_, ok = s.Get("short")
		require.False(t, ok, "gone at exactly its expiry time")
		_, err = s.Put("keep", "v")
		require.NoError(t, err)
		keep := s.History("keep")
		for _, d := range []time.Duration{0, -1, math.MinInt64, math.MaxInt64, time.Duration(math.MaxInt64 - 1)} {
			_, err := s.PutTTL("keep", "x", d)
			require.ErrorIs(t, err, revkv.ErrInvalidTTL, "PutTTL(%v)", d)
			_, err = s.Expire("keep", d)
			require.ErrorIs(t, err, revkv.ErrInvalidTTL, "Expire(%v)", d)
		}
		require.Equal(t, keep, s.History("keep"), "failed calls changed nothing")
	})

	t.Run("expiry at exactly the Unix epoch", func(t *testing.T) {
		// Unix nanoseconds 0 must not read as "no TTL".
		c := newClock(time.Unix(-1, 0))
		s := revkv.New[string](revkv.WithClock(c.Now))
		_, err := s.PutTTL("k", "v", time.Second)
		require.NoError(t, err)
		_, err = s.TTL("k")
		require.NoError(t, err)
		c.Add(time.Second)
		_, ok := s.Get("k")
		require.False(t, ok, "expired at 1970-01-01T00:00:00Z")
		_, err = s.TTL("k")
		require.ErrorIs(t, err, revkv.ErrNotFound)
	})

	t.Run("clock at the edges", func(t *testing.T) {
		for _, at := range []time.Time{{}, time.Unix(0, math.MinInt64).Add(-time.Hour), time.Date(5000, 1, 1, 0, 0, 0, 0, time.UTC)} {
			s := revkv.New[string](revkv.WithClock(func() time.Time { return at }))
			_, err := s.Put("k", "v")
			require.NoError(t, err, "the store never fails because of the clock (%v)", at)
			_, err = s.PutTTL("t", "v", time.Second)
			require.ErrorIs(t, err, revkv.ErrInvalidTTL, "no expiry time outside 1678..2262 (%v)", at)
			v, ok := s.Get("k")
			require.True(t, ok)
			require.Equal(t, "v", v)
			require.Equal(t, at, s.History("k")[0].Time)
			require.NoError(t, s.Close())
		}
	})

	t.Run("after Close", func(t *testing.T) {
		s, _ := newStore(t)
		_, err := s.PutTTL("k", "v", time.Hour)
		require.NoError(t, err)
		view, err := s.At(1)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		rev := s.Rev()
		for name, call := range map[string]func() error{
			"Put":           func() error { _, err := s.Put("k", "x"); return err },
			"PutTTL":        func() error { _, err := s.PutTTL("k", "x", time.Second); return err },
			"CompareAndPut": func() error { _, err := s.CompareAndPut("k", 1, "x"); return err },
			"Delete":        func() error { _, err := s.Delete("k"); return err },
			"Expire":        func() error { _, err := s.Expire("k", time.Second); return err },
			"Persist":       func() error { _, err := s.Persist("k"); return err },
			"Compact":       func() error { return s.Compact(1) },
		} {
			require.ErrorIs(t, call(), revkv.ErrClosed, name)
		}
		require.Zero(t, s.PurgeExpired())
		require.Zero(t, s.Trim())
		require.NoError(t, s.Close())
		// Reads still answer.
		v, ok := s.Get("k")
		require.True(t, ok)
		require.Equal(t, "v", v)
		_, ok = s.GetEntry("k")
		require.True(t, ok)
		_, err = s.TTL("k")
		require.NoError(t, err)
		require.Equal(t, []string{"k"}, collectStr(s.Scan("")))
		require.Equal(t, 1, s.Len())
		require.Equal(t, rev, s.Rev())
		require.Zero(t, s.Floor())
		require.Len(t, s.History("k"), 1)
		_, ok, err = s.GetAt("k", 1)
		require.NoError(t, err)
		require.True(t, ok)
		_, _, err = s.GetAsOf("k", epoch)
		require.NoError(t, err)
		v2, err := s.At(1)
		require.NoError(t, err)
		got, _ := v2.Get("k")
		require.Equal(t, "v", got)
		v2.Close()
		got, _ = view.Get("k")
		require.Equal(t, "v", got, "a view opened before Close still answers")
		view.Close()
		v3, err := s.AsOf(epoch)
		require.NoError(t, err)
		v3.Close()
	})
}

func collectStr(seq func(func(string, string) bool)) []string {
	var keys []string
	for k := range seq {
		keys = append(keys, k)
	}
	return keys
}
