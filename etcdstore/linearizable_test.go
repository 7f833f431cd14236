package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/revkv/revkv/etcdstore"
)

// The linearizability test's keys: few, so that operations collide.
const linKeys = 3

type linOp uint8

const (
	linPut    linOp = iota
	linPutTTL       // a TTL of an hour: nothing expires during the run
	linGet
	linGetEntry
	linDelete
	linCompareAndPut
	linUpdate // puts value under key and under the next key: two revisions
	linView   // a View at Rev(): every key's value
	linOps
)

type linInput struct {
	op     linOp
	key    int
	value  int
	modRev int64
}

type linOutput struct {
	rev     int64
	err     string
	unknown bool // the call failed in a way that leaves open whether it wrote
	value   int
	ok      bool
	ttl     bool // GetEntry: the entry has an expiry time
	vals    [linKeys]int
	oks     [linKeys]bool
}

type linKey struct {
	exists bool
	value  int
	rev    int64
	ttl    bool
}

// linState is the sequential store, reduced to what these operations see:
// one revision per entry, as the etcdstore numbers them.
type linState struct {
	rev  int64
	keys [linKeys]linKey
}

// linStep returns every state the operation can lead to: none if its
// output is impossible, two (unchanged, or written) for a write whose
// outcome is unknown.
func linStep(state, input, output any) []any {
	s, in, out := state.(linState), input.(linInput), output.(linOutput)
	k := s.keys[in.key]
	wrote := func(n int64, set func(*linState)) []any {
		next := s
		set(&next)
		next.rev = s.rev + n
		if out.unknown {
			return []any{s, next}
		}
		if out.err != "" || out.rev != s.rev+n {
			return nil
		}
		return []any{next}
	}
	put := func(key int, v int, rev int64) func(*linState) {
		return func(n *linState) { n.keys[key] = linKey{exists: true, value: v, rev: rev} }
	}
	only := func(ok bool) []any {
		if ok {
			return []any{s}
		}
		return nil
	}
	switch in.op {
	case linPut:
		return wrote(1, put(in.key, in.value, s.rev+1))
	case linPutTTL:
		return wrote(1, func(n *linState) { n.keys[in.key] = linKey{exists: true, value: in.value, rev: s.rev + 1, ttl: true} })
	case linGet:
		return only(out.ok == k.exists && (!k.exists || out.value == k.value))
	case linGetEntry:
		return only(out.ok == k.exists && (!k.exists || (out.value == k.value && out.rev == k.rev && out.ttl == k.ttl)))
	case linDelete:
		if !k.exists {
			return only(out.err == "not found" || out.unknown)
		}
		return wrote(1, func(n *linState) { n.keys[in.key] = linKey{} })
	case linCompareAndPut:
		if (in.modRev == 0 && k.exists) || (in.modRev != 0 && (!k.exists || k.rev != in.modRev)) {
			return only(out.err == "conflict" || out.unknown)
		}
		return wrote(1, put(in.key, in.value, s.rev+1))
	case linUpdate:
		return wrote(2, func(n *linState) {
			put(in.key, in.value, s.rev+1)(n)
			put((in.key+1)%linKeys, in.value, s.rev+2)(n)
		})
	case linView:
		for i, k := range s.keys {
			if out.oks[i] != k.exists || k.exists && out.vals[i] != k.value {
				return nil
			}
		}
		return only(out.rev == s.rev)
	}
	return nil
}

var linModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{linState{}} },
	Step: linStep,
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		names := []string{"Put", "PutTTL", "Get", "GetEntry", "Delete", "CompareAndPut", "Update", "View"}
		return fmt.Sprintf("%s(k%d, v=%d, mod=%d) → rev=%d v=%d ok=%v %v %v %s unknown=%v",
			names[in.op], in.key, in.value, in.modRev, out.rev, out.value, out.ok, out.vals, out.oks, out.err, out.unknown)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%+v", state.(linState)) },
}).ToModel()

// linRun applies one operation and reports what it answered; ok is false
// for a read that failed (it has no effect and is left out of the history).
func linRun(ctx context.Context, s *etcdstore.Store[int], in linInput) (linOutput, bool) {
	key := fmt.Sprint("k", in.key)
	var (
		out linOutput
		rev revkv.Revision
		err error
	)
	read := false
	switch in.op {
	case linPut:
		rev, err = s.Put(ctx, key, in.value)
	case linPutTTL:
		rev, err = s.PutTTL(ctx, key, in.value, time.Hour)
	case linGet:
		read = true
		out.value, out.ok, err = s.Get(ctx, key)
	case linGetEntry:
		read = true
		var e revkv.Entry[int]
		e, out.ok, err = s.GetEntry(ctx, key)
		out.value, rev, out.ttl = e.Value, e.Rev, !e.ExpiresAt.IsZero()
	case linDelete:
		rev, err = s.Delete(ctx, key)
	case linCompareAndPut:
		rev, err = s.CompareAndPut(ctx, key, revkv.Revision(in.modRev), in.value)
	case linUpdate:
		rev, err = s.Update(ctx, func(tx *etcdstore.Txn[int]) error {
			if err := tx.Put(ctx, key, in.value); err != nil {
				return err
			}
			return tx.Put(ctx, fmt.Sprint("k", (in.key+1)%linKeys), in.value)
		})
	case linView:
		read = true
		rev, err = readView(ctx, s, &out)
	}
	out.rev = int64(rev)
	switch {
	case errors.Is(err, revkv.ErrNotFound):
		out.err = "not found"
	case errors.Is(err, revkv.ErrConflict):
		out.err = "conflict"
	case err != nil && read:
		return out, false
	case err != nil:
		out.unknown = true
	}
	return out, true
}

func readView(ctx context.Context, s *etcdstore.Store[int], out *linOutput) (revkv.Revision, error) {
	rev, err := s.Rev(ctx)
	if err != nil {
		return 0, err
	}
	v, err := s.At(ctx, rev)
	if err != nil {
		return 0, err
	}
	defer v.Close()
	for i := range linKeys {
		if out.vals[i], out.oks[i], err = v.Get(ctx, fmt.Sprint("k", i)); err != nil {
			return 0, err
		}
	}
	return v.Rev(), nil
}

// opTimeout is each operation's ctx: no call may outlive it by more than a
// moment, during an election included.
const opTimeout = 5 * time.Second

// acked is a write that returned success: it must be in history afterwards.
type acked struct {
	key   string
	rev   int64
	value int
	op    revkv.Op
}

// ackedOf returns the entries an acknowledged write made.
func ackedOf(in linInput, out linOutput) []acked {
	key := fmt.Sprint("k", in.key)
	switch in.op {
	case linPut, linPutTTL, linCompareAndPut:
		return []acked{{key, out.rev, in.value, revkv.OpPut}}
	case linDelete:
		return []acked{{key, out.rev, 0, revkv.OpDelete}}
	case linUpdate:
		return []acked{{key, out.rev - 1, in.value, revkv.OpPut}, {fmt.Sprint("k", (in.key+1)%linKeys), out.rev, in.value, revkv.OpPut}}
	}
	return nil
}

// recordHistory runs clients goroutines of ops operations each, spread over
// the stores, and returns the history (timestamped by one counter, so that
// real-time order is kept) and the writes that were acknowledged. during,
// if not nil, runs once the clients are a third of the way through.
func recordHistory(t *testing.T, stores []*etcdstore.Store[int], seed int64, clients, ops int, during func()) ([]porcupine.Operation, []acked) {
	var (
		clock   atomic.Int64
		mu      sync.Mutex // guards history and acks
		history []porcupine.Operation
		acks    []acked
		wg      sync.WaitGroup
		done    atomic.Int64
		once    sync.Once
	)
	for c := range clients {
		wg.Go(func() {
			s := stores[c%len(stores)]
			rng := rand.New(rand.NewSource(seed*100 + int64(c)))
			var lastRev int64
			for range ops {
				in := linInput{op: linOp(rng.Intn(int(linOps))), key: rng.Intn(linKeys), value: rng.Intn(1000)}
				if in.op == linCompareAndPut && rng.Intn(3) > 0 {
					in.modRev = lastRev - int64(rng.Intn(2))
				}
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				call, start := clock.Add(1), time.Now()
				out, keep := linRun(ctx, s, in)
				ret, took := clock.Add(1), time.Since(start)
				cancel()
				if took > opTimeout+time.Second {
					t.Errorf("%+v took %v, over its ctx's %v", in, took, opTimeout)
				}
				if out.rev > 0 && out.err == "" && !out.unknown {
					lastRev = out.rev
				}
				if out.unknown {
					ret = math.MaxInt64 // it may take effect at any time after its call
				}
				mu.Lock()
				if keep {
					history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				}
				if !out.unknown && out.err == "" {
					acks = append(acks, ackedOf(in, out)...)
				}
				mu.Unlock()
				if during != nil && done.Add(1) == int64(clients*ops/3) {
					once.Do(during)
				}
			}
		})
	}
	wg.Wait()
	return history, acks
}

func checkLinearizable(t *testing.T, name string, history []porcupine.Operation) {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(linModel, history, 60*time.Second)
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("etcdstore-linearizability-%s.html", name))
		if err := porcupine.VisualizePath(linModel, info, path); err != nil {
			t.Logf("writing the visualisation: %v", err)
		}
		t.Fatalf("%s: history of %d operations is %s; visualisation: %s", name, len(history), res, path)
	}
}

// checkAcked checks that every acknowledged write (puts, deletes, both
// entries of an Update) is in its key's history, at its revision, with its
// value.
func checkAcked(t *testing.T, s *etcdstore.Store[int], acks []acked) {
	t.Helper()
	ctx := ctxT(t)
	hist := map[string]map[int64]revkv.Entry[int]{}
	for k := range linKeys {
		key := fmt.Sprint("k", k)
		h, err := s.History(ctx, key)
		require.NoError(t, err)
		hist[key] = map[int64]revkv.Entry[int]{}
		for _, e := range h {
			hist[key][int64(e.Rev)] = e
		}
	}
	for _, a := range acks {
		e, ok := hist[a.key][a.rev]
		require.True(t, ok, "acknowledged write %+v is not in history", a)
		require.Equal(t, a.value, e.Value, "acknowledged write %+v", a)
		require.Equal(t, a.op, e.Op, "acknowledged write %+v", a)
	}
}

// TestLinearizableTwoStores records concurrent histories of Put, PutTTL, Get,
// GetEntry, Delete, CompareAndPut, a two-key Update and a View, from four
// goroutines over two stores (two clients) on one prefix, and checks them
// with porcupine against the sequential model in which every entry takes
// exactly the next revision: the two stores are one linearizable store.
func TestLinearizableTwoStores(t *testing.T) {
	c, _ := single(t)
	runs, ops := 2, 120
	if *soak {
		runs, ops = 10, 600
	}
	for seed := range int64(runs) {
		stores := twoStores(t, c, fmt.Sprint("lin", seed))
		history, acks := recordHistory(t, stores, seed, 4, ops, nil)
		checkLinearizable(t, fmt.Sprint("two-stores-", seed), history)
		checkAcked(t, stores[0], acks)
	}
}

// twoStores opens two stores on prefix, each with its own client.
func twoStores(t *testing.T, c *cluster, prefix string) []*etcdstore.Store[int] {
	var stores []*etcdstore.Store[int]
	for range 2 {
		s, err := etcdstore.Open(ctxT(t), c.client(t), prefix, revkv.JSONCodec[int]())
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	return stores
}

// TestLeaderLoss runs the linearizability workload on a 3-member cluster
// and crashes the leader (no leadership transfer) a third of the way
// through. Invariants: the history over both stores is linearizable (calls
// during the election fail or succeed, and a failed write may or may not
// have happened, never half); every acknowledged write is in history
// afterwards with its value and revision; no call outlives its ctx.
func TestLeaderLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-member cluster")
	}
	c := startCluster(t, 3, func(cfg *embed.Config) { cfg.TickMs, cfg.ElectionMs = 50, 500 })
	ops := 90
	if *soak {
		ops = 600
	}
	stores := twoStores(t, c, "leaderloss")
	watched := watchAll(t, stores[0])
	crashed := -1
	history, acks := recordHistory(t, stores, 7, 4, ops, func() {
		crashed = c.leader()
		t.Logf("crashing the leader, member %d", crashed)
		c.crash(crashed)
	})
	require.GreaterOrEqual(t, crashed, 0, "there was a leader to crash")
	unknown := 0
	for _, op := range history {
		if op.Output.(linOutput).unknown {
			unknown++
		}
	}
	t.Logf("%d operations, %d acknowledged writes, %d of unknown outcome", len(history), len(acks), unknown)
	checkLinearizable(t, "leader-loss", history)
	checkAcked(t, stores[1], acks)
	es, end := watched()
	checkWatched(t, stores[1], es, end)
}

// watchAll watches every key of s from revision 1 until the returned func
// is called, which returns the entries seen and the error the watch ended
// with, if it ended.
func watchAll(t *testing.T, s *etcdstore.Store[int]) func() ([]revkv.Entry[int], error) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		es  []revkv.Entry[int]
		end error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e, err := range s.Watch(ctx, "", 1) {
			if err != nil {
				end = err
				return
			}
			es = append(es, e)
		}
	}()
	return func() ([]revkv.Entry[int], error) {
		time.Sleep(500 * time.Millisecond) // the last entries arrive
		cancel()
		<-done
		if errors.Is(end, context.Canceled) {
			end = nil
		}
		return es, end
	}
}

// checkWatched checks that a watch yielded history without a gap, in
// revision order: all of it if it lasted (the watch goes on across an
// election), a prefix of it if it ended with an error.
func checkWatched(t *testing.T, s *etcdstore.Store[int], es []revkv.Entry[int], end error) {
	t.Helper()
	var all []revkv.Entry[int]
	for k := range linKeys {
		h, err := s.History(ctxT(t), fmt.Sprint("k", k))
		require.NoError(t, err)
		all = append(all, h...)
	}
	sortByRev(all)
	t.Logf("the watch yielded %d of %d entries; it ended with %v", len(es), len(all), end)
	if end == nil {
		require.Len(t, es, len(all))
	}
	for i, e := range es {
		require.Equal(t, all[i].Rev, e.Rev, "entry %d", i)
		require.Equal(t, all[i].Value, e.Value, "entry %d", i)
	}
}
