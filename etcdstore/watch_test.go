package etcdstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/revkv/revkv/etcdstore"
)

// TestWatch: a watch on one store from revision 1 yields, in revision order
// and with no gap, every entry of its prefix written by two stores (the
// past from history, the rest as it comes), expiries included, across an
// etcd compaction in the middle; it ends with ctx's error.
func TestWatch(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	stores := make([]*etcdstore.Store[int], 2)
	for i := range stores {
		s, err := etcdstore.Open(ctx, cli, "watch", revkv.JSONCodec[int]())
		require.NoError(t, err)
		defer s.Close()
		stores[i] = s
	}
	for i := range 10 {
		_, err := stores[i%2].Put(ctx, fmt.Sprint("p/", i%3), i)
		require.NoError(t, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	var got []revkv.Entry[int] // read after wg.Wait
	var seen atomic.Int64      // len(got), for the wait below
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for e, err := range stores[0].Watch(wctx, "p/", 1) {
			if err != nil {
				werr = err
				return
			}
			got = append(got, e)
			seen.Add(1)
		}
	})
	writeWatched(t, cli, stores)
	_, err := stores[1].PutTTL(ctx, "p/ttl", 99, time.Millisecond)
	require.NoError(t, err)
	time.Sleep(2 * time.Millisecond)
	_, err = stores[1].PurgeExpired(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return seen.Load() >= 42 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	wg.Wait()
	require.ErrorIs(t, werr, context.Canceled)
	require.Len(t, got, 42)
	var want []revkv.Entry[int]
	for _, k := range []string{"p/0", "p/1", "p/2", "p/ttl"} {
		h, err := stores[1].History(ctx, k)
		require.NoError(t, err)
		want = append(want, h...)
	}
	sortByRev(want)
	for i := range want {
		require.Equal(t, want[i].Rev, got[i].Rev, "entry %d", i)
		require.Equal(t, want[i].Value, got[i].Value)
		require.Equal(t, want[i].Op, got[i].Op)
	}
	require.Equal(t, revkv.OpExpire, got[41].Op)
}

// writeWatched writes 30 entries under p/ and 30 under q/ from two stores,
// with an etcd compaction in the middle.
func writeWatched(t *testing.T, cli *clientv3.Client, stores []*etcdstore.Store[int]) {
	ctx := ctxT(t)
	for i := 10; i < 40; i++ {
		s := stores[i%2]
		_, err := s.Put(ctx, fmt.Sprint("p/", i%3), i)
		require.NoError(t, err)
		_, err = s.Put(ctx, "q/other", i) // another prefix: not watched
		require.NoError(t, err)
		if i == 20 {
			resp, err := cli.Get(ctx, "x")
			require.NoError(t, err)
			_, err = cli.Compact(ctx, resp.Header.Revision)
			require.NoError(t, err)
		}
	}
}

func sortByRev[V any](es []revkv.Entry[V]) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Rev < es[j-1].Rev; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// TestWatchCompacted: a watch from below revkv's compaction yields
// ErrCompacted naming the floor; a watch from that floor works.
func TestWatchCompacted(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	s, err := etcdstore.Open(ctx, cli, "watchc", revkv.JSONCodec[int]())
	require.NoError(t, err)
	defer s.Close()
	for i := range 10 {
		_, err := s.Put(ctx, fmt.Sprint("k", i%2), i)
		require.NoError(t, err)
	}
	require.NoError(t, s.Compact(ctx, 6))
	for _, err := range s.Watch(ctx, "", 2) {
		require.ErrorIs(t, err, revkv.ErrCompacted)
		require.ErrorContains(t, err, "restart from 6")
	}
	n := 0
	for e, err := range s.Watch(ctx, "", 6) {
		require.NoError(t, err)
		require.EqualValues(t, 6+n, e.Rev)
		if n++; n == 5 {
			break
		}
	}
}

// TestWatchResumesPastEtcdCompaction: when etcd has compacted past the
// revision a watch must follow from (here, between its replay and its
// follow), the watch replays from revkv's history instead of failing, and
// misses nothing.
func TestWatchResumesPastEtcdCompaction(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	w, err := etcdstore.Open(ctx, cli, "resume", revkv.JSONCodec[int]())
	require.NoError(t, err)
	defer w.Close()
	compactions := 0
	s, err := etcdstore.Open(ctx, cli, "resume", revkv.JSONCodec[int](), etcdstore.WithAfterReplay(func() {
		if compactions++; compactions > 2 {
			return
		}
		for i := range 3 { // written after the replay read: the follow must see them
			_, err := w.Put(ctx, "k", 100*compactions+i)
			require.NoError(t, err)
		}
		resp, err := cli.Get(ctx, "x")
		require.NoError(t, err)
		_, err = cli.Compact(ctx, resp.Header.Revision)
		require.NoError(t, err)
	}))
	require.NoError(t, err)
	defer s.Close()
	_, err = w.Put(ctx, "k", 1)
	require.NoError(t, err)
	var got []int
	for e, err := range s.Watch(ctx, "", 1) {
		require.NoError(t, err)
		if got = append(got, e.Value); len(got) == 7 {
			break
		}
	}
	require.Equal(t, []int{1, 100, 101, 102, 200, 201, 202}, got)
	require.Equal(t, 2, compactions, "the second replay came after the first follow met etcd's compaction")
}
