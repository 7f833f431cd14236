package etcdstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/revkv/revkv/etcdstore"
)

// TestNestedPrefixes: stores on "a" and "ab", and on "app/" and
// "app/sub/", are separate histories; keys other programs write beside them
// are invisible.
func TestNestedPrefixes(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	for _, pair := range [][2]string{{"a", "ab"}, {"app/", "app/sub/"}, {"", "x"}} {
		var st [2]*etcdstore.Store[string]
		for i, p := range pair {
			s, err := etcdstore.Open(ctx, cli, p, revkv.StringCodec())
			require.NoError(t, err)
			defer s.Close()
			st[i] = s
		}
		for _, raw := range []string{pair[0] + "b", pair[1] + "/k", pair[0] + "\x01", "raw/" + pair[0]} {
			_, err := cli.Put(ctx, raw, "raw")
			require.NoError(t, err)
		}
		w := st[1].Watch(ctx, "", 1)
		for i, s := range st {
			for j := range 3 + i {
				_, err := s.Put(ctx, fmt.Sprint("k", j), pair[i])
				require.NoError(t, err)
			}
		}
		_, err := st[1].Delete(ctx, "k0")
		require.NoError(t, err)
		require.NoError(t, st[0].Compact(ctx, 3))
		for i, s := range st {
			n, err := s.Len(ctx)
			require.NoError(t, err)
			require.Equal(t, 3, n, "len of %q", pair[i]) // 3, and 4 less the deleted one
			for e, err := range s.Scan(ctx, "") {
				require.NoError(t, err)
				require.Equal(t, pair[i], e.Value)
			}
			h, err := s.History(ctx, "k1")
			require.NoError(t, err)
			require.Len(t, h, 1)
			require.Equal(t, pair[i], h[0].Value)
			fl, err := s.Floor(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 3*(1-i), fl, "Compact of one leaves the other alone")
		}
		n := 0
		for e, err := range w {
			require.NoError(t, err)
			if e.Op == revkv.OpPut {
				require.Equal(t, pair[1], e.Value)
			}
			if n++; n == 5 {
				break
			}
		}
	}
}

// TestEtcdCompaction: etcd's own compaction (manual, and automatic every
// second) during a run never makes History, GetAt, GetAsOf, At, AsOf or a
// Watch from revision 1 fail or answer wrong.
func TestEtcdCompaction(t *testing.T) {
	c := startCluster(t, 1, func(cfg *embed.Config) {
		cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", "1s"
	})
	cli := c.client(t)
	ctx := ctxT(t)
	now := time.Unix(2_000_000_000, 0)
	var mu sync.Mutex // guards now
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Second); return now }
	s, err := etcdstore.Open(ctx, cli, "compaction", revkv.JSONCodec[int](), etcdstore.WithClock(clock))
	require.NoError(t, err)
	defer s.Close()
	view := func() {}
	for i := 1; i <= 60; i++ {
		_, err := s.Put(ctx, fmt.Sprint("k", i%3), i)
		require.NoError(t, err)
		if i == 30 {
			resp, err := cli.Get(ctx, "anything")
			require.NoError(t, err)
			_, err = cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
			require.NoError(t, err)
			v, err := s.At(ctx, 10) // opened before etcd compacts again
			require.NoError(t, err)
			view = func() {
				got, ok, err := v.Get(ctx, "k1")
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, 10, got)
				v.Close()
			}
		}
		if i == 45 {
			time.Sleep(2500 * time.Millisecond) // the automatic compaction runs
		}
	}
	_, err = cli.Get(ctx, "compaction", clientv3.WithRev(2))
	require.Error(t, err, "etcd compacted its history")
	view()
	checkSixty(t, s)
}

// checkSixty checks every read of the past after TestEtcdCompaction's run:
// 60 puts, revision i putting i under k(i%3) at 2,000,000,000 + i seconds.
func checkSixty(t *testing.T, s *etcdstore.Store[int]) {
	ctx := ctxT(t)
	for k := range 3 {
		key := fmt.Sprint("k", k)
		h, err := s.History(ctx, key)
		require.NoError(t, err)
		require.Len(t, h, 20)
		for i, e := range h {
			require.Equal(t, k, e.Value%3, "history of %s", key)
			if i > 0 {
				require.Equal(t, h[i-1].Value+3, e.Value, "history of %s", key)
			}
		}
	}
	for rev := revkv.Revision(1); rev <= 60; rev++ {
		v, ok, err := s.GetAt(ctx, fmt.Sprint("k", rev%3), rev)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, int(rev), v)
		v, ok, err = s.GetAsOf(ctx, fmt.Sprint("k", rev%3), time.Unix(2_000_000_000+int64(rev), 0))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, int(rev), v)
	}
	v, err := s.AsOf(ctx, time.Unix(2_000_000_005, 0))
	require.NoError(t, err)
	n, err := v.Len(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	v.Close()
	i := 0
	for e, err := range s.Watch(ctx, "", 1) {
		require.NoError(t, err)
		i++
		require.Equal(t, i, e.Value)
		if i == 60 {
			break
		}
	}
}

// TestSkewedClocks: two stores whose clocks are two hours apart write
// concurrently; along revisions, times never decrease, and every revision
// is taken once.
func TestSkewedClocks(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	skews := []time.Duration{time.Hour, -time.Hour}
	var stores []*etcdstore.Store[int]
	for _, d := range skews {
		s, err := etcdstore.Open(ctx, cli, "skew", revkv.JSONCodec[int](),
			etcdstore.WithClock(func() time.Time { return time.Now().Add(d) }))
		require.NoError(t, err)
		defer s.Close()
		stores = append(stores, s)
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			s := stores[w%2]
			for i := range 25 {
				var err error
				if i%4 == 3 {
					_, err = s.PutTTL(ctx, fmt.Sprint("k", (w+i)%4), i, time.Duration(i)*time.Millisecond+time.Millisecond)
				} else {
					_, err = s.Put(ctx, fmt.Sprint("k", (w+i)%4), i)
				}
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	time.Sleep(5 * time.Millisecond)
	_, err := stores[1].PurgeExpired(ctx)
	require.NoError(t, err)
	var all []revkv.Entry[int]
	for k := range 4 {
		h, err := stores[0].History(ctx, fmt.Sprint("k", k))
		require.NoError(t, err)
		all = append(all, h...)
	}
	slices.SortFunc(all, func(a, b revkv.Entry[int]) int { return int(a.Rev - b.Rev) })
	for i := range all {
		require.EqualValues(t, i+1, all[i].Rev, "revisions are consecutive and taken once")
		if i > 0 {
			require.False(t, all[i].Time.Before(all[i-1].Time), "time goes back at %d: %v after %v", all[i].Rev, all[i].Time, all[i-1].Time)
		}
	}
}

// TestTwoExpirers: four stores with expirers and a short TTL on many keys:
// every expiry is written exactly once, at exactly its ExpiresAt.
func TestTwoExpirers(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	var stores []*etcdstore.Store[int]
	for range 4 {
		s, err := etcdstore.Open(ctx, cli, "expirers", revkv.JSONCodec[int](), etcdstore.WithExpiryInterval(time.Millisecond))
		require.NoError(t, err)
		defer s.Close()
		stores = append(stores, s)
	}
	const keys = 60
	for i := range keys {
		_, err := stores[i%2].PutTTL(ctx, fmt.Sprint("k", i), i, time.Duration(20+i)*time.Millisecond)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		n := 0
		for k := range keys {
			h, err := stores[0].History(ctx, fmt.Sprint("k", k))
			require.NoError(t, err)
			if h[len(h)-1].Op == revkv.OpExpire {
				n++
			}
		}
		return n == keys
	}, 20*time.Second, 50*time.Millisecond)
	for k := range keys {
		h, err := stores[1].History(ctx, fmt.Sprint("k", k))
		require.NoError(t, err)
		require.Len(t, h, 2, "one put, one expiry: %v", h)
		require.True(t, h[1].Time.Equal(h[0].ExpiresAt), "expiry at exactly ExpiresAt")
	}
}

// countingKV counts the requests a store sends: each is one round trip.
type countingKV struct {
	clientv3.KV
	n *atomic.Int64
}

func (c countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	c.n.Add(1)
	return c.KV.Get(ctx, key, opts...)
}

func (c countingKV) Txn(ctx context.Context) clientv3.Txn { c.n.Add(1); return c.KV.Txn(ctx) }

func (c countingKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	c.n.Add(1)
	return c.KV.Put(ctx, key, val, opts...)
}

func (c countingKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	c.n.Add(1)
	return c.KV.Delete(ctx, key, opts...)
}

// TestRoundTrips: History of a key with 1,000 entries is one round trip,
// Get and GetAt one, GetAsOf two, a Put after the store's own commit one, a
// Delete (which reads the key) two.
func TestRoundTrips(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	var n atomic.Int64
	s, err := etcdstore.Open(ctx, cli, "trips", revkv.JSONCodec[int](),
		etcdstore.WithKVWrapper(func(kv clientv3.KV) clientv3.KV { return countingKV{kv, &n} }))
	require.NoError(t, err)
	defer s.Close()
	err = nil
	for i := range 1000 {
		if _, err = s.Put(ctx, "hot", i); err != nil {
			break
		}
	}
	require.NoError(t, err)
	trips := func(f func()) int64 { n.Store(0); f(); return n.Load() }
	require.EqualValues(t, 1, trips(func() { _, err = s.Put(ctx, "hot", -1) }), "put, from the store's last commit")
	require.NoError(t, err)
	require.EqualValues(t, 2, trips(func() { _, err = s.Delete(ctx, "hot") }), "delete: a read, a commit")
	require.NoError(t, err)
	require.EqualValues(t, 1, trips(func() { _, err = s.Put(ctx, "hot", -1) }), "put")
	require.EqualValues(t, 1, trips(func() {
		h, err := s.History(ctx, "hot")
		require.NoError(t, err)
		require.Len(t, h, 1003)
	}), "history")
	require.EqualValues(t, 1, trips(func() { _, _, err = s.Get(ctx, "hot") }), "get")
	require.EqualValues(t, 1, trips(func() {
		v, ok, err := s.GetAt(ctx, "hot", 500)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, 499, v)
	}), "get at")
	require.EqualValues(t, 2, trips(func() { _, _, err = s.GetAsOf(ctx, "hot", time.Now()) }), "get as of")
	require.NoError(t, err)
}

// TestUpdateReadsFresh: an Update that only reads sees what another store
// wrote since this store's last commit, and returns the latest revision.
func TestUpdateReadsFresh(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	stores := make([]*etcdstore.Store[int], 2)
	for i := range stores {
		s, err := etcdstore.Open(ctx, cli, "fresh", revkv.JSONCodec[int]())
		require.NoError(t, err)
		defer s.Close()
		stores[i] = s
	}
	_, err := stores[0].Put(ctx, "k", 1)
	require.NoError(t, err)
	r2, err := stores[1].Put(ctx, "k", 2)
	require.NoError(t, err)
	var got int
	rev, err := stores[0].Update(ctx, func(tx *etcdstore.Txn[int]) error {
		v, _, err := tx.Get(ctx, "k")
		got = v
		return err
	})
	require.NoError(t, err)
	require.Equal(t, 2, got)
	require.Equal(t, r2, rev)
}
