package etcdstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/etcdstore"
)

// TestViewPinsAcrossStores: a View opened on one store keeps what it reads
// through a Compact and a Trim of another store on the same prefix; once it
// closes, the next compaction drops it.
func TestViewPinsAcrossStores(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	a, err := etcdstore.Open(ctx, cli, "pins", revkv.JSONCodec[int](), etcdstore.WithMaxHistory(1))
	require.NoError(t, err)
	defer a.Close()
	b, err := etcdstore.Open(ctx, cli, "pins", revkv.JSONCodec[int](), etcdstore.WithMaxHistory(1))
	require.NoError(t, err)
	defer b.Close()
	for i := 1; i <= 2; i++ {
		_, err := a.Put(ctx, "k", i)
		require.NoError(t, err)
	}
	v, err := a.At(ctx, 1)
	require.NoError(t, err)
	for i := 3; i <= 6; i++ {
		_, err := b.Put(ctx, "k", i)
		require.NoError(t, err)
	}
	require.NoError(t, b.Compact(ctx, 5))
	_, err = b.Trim(ctx)
	require.NoError(t, err)
	_, err = b.At(ctx, 1)
	require.ErrorIs(t, err, revkv.ErrCompacted, "new Views below the floor fail")
	got, ok, err := v.Get(ctx, "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 1, got, "the pinned View still reads revision 1")
	v.Close()
	_, ok, _ = v.Get(ctx, "k")
	require.False(t, ok, "a closed View reads nothing")

	_, err = b.Put(ctx, "k", 7)
	require.NoError(t, err)
	require.NoError(t, b.Compact(ctx, 7))
	h, err := a.History(ctx, "k")
	require.NoError(t, err)
	require.Len(t, h, 1, "unpinned, the old entries go: %v", h)
}

// TestRetention: WithRetention and the trimmer goroutine compact at the last
// revision older than the retention, from a store that writes nothing.
func TestRetention(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	now := time.Unix(3_000_000_000, 0)
	clock := func() time.Time { return now }
	w, err := etcdstore.Open(ctx, cli, "retention", revkv.JSONCodec[int](), etcdstore.WithClock(clock))
	require.NoError(t, err)
	defer w.Close()
	for i := range 10 {
		_, err := w.Put(ctx, fmt.Sprint("k", i%2), i)
		require.NoError(t, err)
	}
	later := func() time.Time { return now.Add(time.Hour) }
	for i := range 3 {
		now = now.Add(time.Minute)
		_, err := w.Put(ctx, fmt.Sprint("k", i%2), 100+i)
		require.NoError(t, err)
	}
	trimmer, err := etcdstore.Open(ctx, cli, "retention", revkv.JSONCodec[int](), etcdstore.WithClock(later),
		etcdstore.WithRetention(62*time.Minute), etcdstore.WithTrimInterval(10*time.Millisecond))
	require.NoError(t, err)
	defer trimmer.Close()
	require.Eventually(t, func() bool {
		f, err := w.Floor(ctx)
		require.NoError(t, err)
		return f == 11
	}, 10*time.Second, 10*time.Millisecond, "compacted at the last revision at or before now-62m")
	_, _, err = w.GetAt(ctx, "k0", 10)
	require.ErrorIs(t, err, revkv.ErrCompacted)
	v, ok, err := w.GetAt(ctx, "k1", 11)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 9, v)
}
