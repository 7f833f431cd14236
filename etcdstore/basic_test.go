package etcdstore_test

import (
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/etcdstore"
)

func TestBasics(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	s, err := etcdstore.Open(ctx, cli, "app", revkv.StringCodec(), etcdstore.WithClock(clock))
	require.NoError(t, err)
	defer s.Close()

	r1, err := s.Put(ctx, "a", "1")
	require.NoError(t, err)
	require.EqualValues(t, 1, r1)
	now = now.Add(time.Second)
	r2, err := s.PutTTL(ctx, "b", "x", 10*time.Second)
	require.NoError(t, err)
	require.EqualValues(t, 2, r2)
	v, ok, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "1", v)
	ttl, err := s.TTL(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, ttl)

	now = now.Add(20 * time.Second)
	_, ok, err = s.Get(ctx, "b")
	require.NoError(t, err)
	require.False(t, ok, "expired lazily")
	r3, err := s.Put(ctx, "a", "2")
	require.NoError(t, err)
	require.EqualValues(t, 4, r3, "the expiry took revision 3")
	h, err := s.History(ctx, "b")
	require.NoError(t, err)
	require.Len(t, h, 2)
	require.Equal(t, revkv.OpExpire, h[1].Op)
	require.True(t, h[1].Time.Equal(time.Unix(1011, 0)))
	require.EqualValues(t, 3, h[1].Rev)

	v, ok, err = s.GetAt(ctx, "a", 2)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "1", v)
	_, _, err = s.GetAt(ctx, "a", 9)
	require.ErrorIs(t, err, revkv.ErrFutureRevision)
	v, ok, err = s.GetAsOf(ctx, "b", time.Unix(1005, 0))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "x", v)

	checkBasicsCompaction(t, s)
}

// checkBasicsCompaction goes on from TestBasics's state: a View, a
// missing key, and compaction at and above a tombstone.
func checkBasicsCompaction(t *testing.T, s *etcdstore.Store[string]) {
	ctx := ctxT(t)
	vw, err := s.At(ctx, 2)
	require.NoError(t, err)
	n, err := vw.Len(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	vw.Close()

	_, err = s.Delete(ctx, "zzz")
	require.ErrorIs(t, err, revkv.ErrNotFound)
	require.NoError(t, s.Compact(ctx, 3))
	_, _, err = s.GetAt(ctx, "a", 2)
	require.ErrorIs(t, err, revkv.ErrCompacted)
	v, ok, err := s.GetAt(ctx, "a", 3)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "1", v)
	h, err := s.History(ctx, "b")
	require.NoError(t, err)
	require.Len(t, h, 1, "a tombstone at the compaction revision stays")
	require.NoError(t, s.Compact(ctx, 4))
	h, err = s.History(ctx, "b")
	require.NoError(t, err)
	require.Nil(t, h, "a key whose only entry is a tombstone below the floor goes")
}
