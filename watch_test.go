package revkv_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
)

// watchUntil collects a watch's entries until one of key end, or an error.
func watchUntil(s *revkv.Store[int], prefix string, from revkv.Revision, end string) ([]revkv.Entry[int], error) {
	var out []revkv.Entry[int]
	for e, err := range s.Watch(context.Background(), prefix, from) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
		if e.Key == end {
			break
		}
	}
	return out, nil
}

// TestWatchGuarantees checks, with writers and watchers running together
// under -race, the six guarantees etcd's robustness suite checks of a watch:
//   - ordered: revisions strictly increase;
//   - unique: no entry twice;
//   - atomic: an Update's entries under the prefix all arrive;
//   - reliable: no gap: exactly the history (Changes) from where it started;
//   - bookmarkable and resumable: watching again from the revision after any
//     entry seen gives exactly the rest.
func TestWatchGuarantees(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprint("durable=", durable), func(t *testing.T) {
			s := revkv.New[int]()
			if durable {
				var err error
				s, err = revkv.Open(t.TempDir(), revkv.JSONCodec[int](), revkv.WithSync(revkv.SyncNever))
				require.NoError(t, err)
			}
			defer s.Close()
			const end = "w/end"
			for i := range 20 {
				_, err := s.Put(fmt.Sprint("w/", i%5), i)
				require.NoError(t, err)
			}
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex // guards results
				results = map[revkv.Revision][]revkv.Entry[int]{}
			)
			for w := range 4 {
				from := revkv.Revision(w * 5) // some from history, one (0) from next
				wg.Add(1)
				go func() {
					defer wg.Done()
					got, err := watchUntil(s, "w/", from, end)
					require.NoError(t, err)
					mu.Lock()
					results[from] = got
					mu.Unlock()
				}()
			}
			var writers sync.WaitGroup
			for w := range 3 {
				writers.Add(1)
				go func() {
					defer writers.Done()
					rng := rand.New(rand.NewSource(int64(w)))
					for i := range 300 {
						var err error
						switch rng.Intn(4) {
						case 0:
							_, err = s.Update(func(tx *revkv.Txn[int]) error {
								tx.Put(fmt.Sprint("w/", rng.Intn(5)), i)
								return tx.Put(fmt.Sprint("w/", 5+rng.Intn(5)), -i)
							})
						case 1:
							_, err = s.Put(fmt.Sprint("x/", rng.Intn(5)), i) // another prefix
						default:
							_, err = s.Put(fmt.Sprint("w/", rng.Intn(5)), i)
						}
						require.NoError(t, err)
					}
				}()
			}
			writers.Wait()
			_, err := s.Put(end, 0)
			require.NoError(t, err)
			wg.Wait()

			for from, got := range results {
				for i := 1; i < len(got); i++ {
					require.Less(t, got[i-1].Rev, got[i].Rev, "ordered and unique")
				}
				start := from
				if start <= 0 {
					start = got[0].Rev // from next: history from its first
				}
				var want []revkv.Entry[int]
				for e, err := range s.Changes("w/", start, got[len(got)-1].Rev) {
					require.NoError(t, err)
					want = append(want, e)
				}
				require.Equal(t, want, got, "reliable: exactly the history from %d", from)
				for _, e := range got {
					require.Contains(t, e.Key, "w/")
				}
				// Resumable from any point.
				k := len(got) / 3
				rest, err := watchUntil(s, "w/", got[k].Rev+1, end)
				require.NoError(t, err)
				require.Equal(t, got[k+1:], rest)
			}
			// Atomic: both halves of every Update are in the history watched.
			all := results[0]
			byRev := map[revkv.Revision]revkv.Entry[int]{}
			for _, e := range results[revkv.Revision(5)] {
				byRev[e.Rev] = e
			}
			for _, e := range all {
				if e.Value < 0 { // the second write of an Update at e.Rev-1
					first, ok := byRev[e.Rev-1]
					require.True(t, ok, "the Update's first write at %d", e.Rev-1)
					require.Equal(t, -e.Value, first.Value)
				}
			}
		})
	}
}

// TestWatchEnds: a watch ends on break, on a cancelled ctx (yielding
// ctx.Err()) and on Close (yielding ErrClosed), and leaves no goroutine.
func TestWatchEnds(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := revkv.New[int]()
	_, _ = s.Put("a", 1)
	for range s.Watch(context.Background(), "", 1) {
		break
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		for _, err := range s.Watch(ctx, "a", 0) {
			if err != nil {
				done <- err
				return
			}
		}
	}()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	go func() {
		for _, err := range s.Watch(context.Background(), "a", 0) {
			if err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(time.Millisecond) // let it wait; either way Close ends it
	require.NoError(t, s.Close())
	err := <-done
	require.ErrorIs(t, err, revkv.ErrClosed)
	require.EqualError(t, err, `revkv: watch "a": store is closed`)
}

// TestWatchStalledWatcher: a watcher that stops reading does not hold the
// writers back (they finish while it is stalled), and when it reads again
// it gets every entry, in order.
func TestWatchStalledWatcher(t *testing.T) {
	s := revkv.New[int]()
	defer s.Close()
	const n = 5000
	first := make(chan struct{})
	resume := make(chan struct{})
	got := make(chan []revkv.Revision)
	go func() {
		var revs []revkv.Revision
		for e, err := range s.Watch(context.Background(), "k", 1) {
			require.NoError(t, err)
			revs = append(revs, e.Rev)
			if len(revs) == 1 {
				close(first)
				<-resume // stalled inside the loop body
			}
			if len(revs) == n {
				break
			}
		}
		got <- revs
	}()
	_, err := s.Put("k", 0)
	require.NoError(t, err)
	<-first
	for i := 1; i < n; i++ { // finishes while the watcher is stalled
		_, err := s.Put("k", i)
		require.NoError(t, err)
	}
	close(resume)
	revs := <-got
	require.Len(t, revs, n)
	require.True(t, slices.IsSorted(revs))
	require.Equal(t, revs[n-1]-revs[0], revkv.Revision(n-1), "nothing lost")
}

// TestWatchCompacted: an entry the watch must yield is gone: ErrCompacted,
// naming where it could start instead, and the watch ends.
func TestWatchCompacted(t *testing.T) {
	s := revkv.New[int]()
	defer s.Close()
	for i := range 10 {
		_, _ = s.Put(fmt.Sprint("k", i%2), i)
	}
	require.NoError(t, s.Compact(5))
	var errs []error
	for _, err := range s.Watch(context.Background(), "k", 2) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], revkv.ErrCompacted)
	var oe *revkv.OpError
	require.True(t, errors.As(errs[0], &oe))
	// k0 kept 5, 7, 9 (dropped 1, 3), k1 kept 4, 6, 8, 10 (dropped 2): from
	// 4 on nothing is missing.
	require.Equal(t, revkv.Revision(4), oe.Rev)
	_, err := watchUntil(s, "k", oe.Rev, "k1")
	require.NoError(t, err, "restarting where it says works")

	for _, err := range s.Changes("k", 1, 99) {
		require.ErrorIs(t, err, revkv.ErrFutureRevision)
	}
}

// TestWatchExpiries: with WithExpiryInterval(d) an expiry reaches a watcher
// within about d of its time, as an OpExpire at exactly ExpiresAt.
func TestWatchExpiries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := revkv.New[int](revkv.WithExpiryInterval(10 * time.Millisecond))
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := s.PutTTL("session", 1, 25*time.Millisecond)
		require.NoError(t, err)
		put, _ := s.GetEntry("session")
		for e, err := range s.Watch(ctx, "session", 0) {
			require.NoError(t, err)
			require.Equal(t, revkv.OpExpire, e.Op)
			require.Equal(t, put.ExpiresAt, e.Time)
			require.WithinDuration(t, put.ExpiresAt, time.Now(), 10*time.Millisecond)
			break
		}
	})
}

// TestWatchBadInput: a nil ctx is an error, not a panic; from above
// Rev()+1 waits for that revision; a closed store yields its history, then
// ErrClosed.
func TestWatchBadInput(t *testing.T) {
	s := revkv.New[int]()
	for i := range 3 {
		_, _ = s.Put("k", i)
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	for _, err := range s.Watch(nil, "k", 1) { //nolint:staticcheck
		require.ErrorContains(t, err, "nil context")
	}

	got := make(chan revkv.Revision)
	go func() {
		for e, err := range s.Watch(context.Background(), "k", 6) {
			require.NoError(t, err)
			got <- e.Rev
			return
		}
	}()
	for range 4 { // revisions 4..7: the watch starts at 6
		_, _ = s.Put("k", 9)
	}
	require.Equal(t, revkv.Revision(6), <-got)

	require.NoError(t, s.Close())
	var revs []revkv.Revision
	var last error
	for e, err := range s.Watch(context.Background(), "k", 5) {
		if err != nil {
			last = err
			break
		}
		revs = append(revs, e.Rev)
	}
	require.Equal(t, []revkv.Revision{5, 6, 7}, revs)
	require.ErrorIs(t, last, revkv.ErrClosed)
}

// TestWatchFollowsItsAdvice: over random histories of puts and deletes with
// compactions (some at a delete's revision), count trims and reopens, a
// watch from Floor() never fails, and a watch from anywhere that fails with
// ErrCompacted names a revision from which a watch, with nothing compacted
// or trimmed in between, does not fail again: a consumer that follows the
// advice never loops (contract §9.3).
func TestWatchFollowsItsAdvice(t *testing.T) {
	seeds := int64(25)
	if testing.Short() {
		seeds = 8
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel() // each seed has its own store: two run at once
			watchFollowsItsAdvice(t, seed)
		})
	}
}

func watchFollowsItsAdvice(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	opts := []revkv.Option{revkv.WithFS(vfs.NewMem())}
	if seed%2 == 0 {
		opts = append(opts, revkv.WithMaxHistory(1+rng.Intn(3)))
	}
	open := func() *revkv.Store[string] {
		s, err := revkv.Open("/d", revkv.StringCodec(), opts...)
		require.NoError(t, err)
		return s
	}
	s := open()
	var dels []revkv.Revision
	for step := range 150 {
		k := fmt.Sprint("k", rng.Intn(6))
		switch r := rng.Intn(20); {
		case r < 10:
			_, err := s.Put(k, "v")
			require.NoError(t, err)
		case r < 14:
			if rev, err := s.Delete(k); err == nil {
				dels = append(dels, rev)
			}
		case r < 16 && len(dels) > 0: // at a delete: its tombstone is at the compaction
			require.NoError(t, s.Compact(dels[rng.Intn(len(dels))]))
		case r < 17 && s.Rev() > 0:
			require.NoError(t, s.Compact(revkv.Revision(1+rng.Int63n(int64(s.Rev())))))
		case r < 18:
			s.Trim()
		case r < 19:
			require.NoError(t, s.Close())
			s = open()
		}
		what := fmt.Sprintf("seed %d step %d", seed, step)
		if s.Rev() == 0 {
			continue
		}
		floor := max(s.Floor(), 1)
		revs, err := watchRevs(s, floor)
		require.NoError(t, err, "%s: a watch from Floor %d", what, s.Floor())
		for i, r := range revs { // with every key watched, every revision from Floor on, once
			require.Equal(t, floor+revkv.Revision(i), r, "%s: a watch from Floor %d skipped or repeated", what, floor)
		}
		require.Len(t, revs, int(s.Rev()-floor+1), "%s: a watch from Floor %d", what, floor)
		for from := revkv.Revision(1); from <= s.Rev(); from++ {
			var oe *revkv.OpError
			if err := watchToHead(s, from); errors.As(err, &oe) {
				require.ErrorIs(t, err, revkv.ErrCompacted)
				require.Contains(t, err.Error(), fmt.Sprint("restart from revision ", oe.Rev), "the text names the restart revision")
				require.NoError(t, watchToHead(s, oe.Rev), "%s: from %d: %v; again from the revision it named", what, from, err)
			}
		}
	}
	require.NoError(t, s.Close())
}

// watchToHead watches every key from from up to the store's latest
// revision and returns the error the watch yielded, if any.
func watchToHead(s *revkv.Store[string], from revkv.Revision) error {
	_, err := watchRevs(s, from)
	return err
}

// watchRevs watches every key from from up to the store's latest revision
// and returns the revisions it yielded, and its error if any.
func watchRevs(s *revkv.Store[string], from revkv.Revision) ([]revkv.Revision, error) {
	head := s.Rev()
	var revs []revkv.Revision
	if from > head {
		return nil, nil
	}
	for e, err := range s.Watch(context.Background(), "", from) {
		if err != nil {
			return revs, err
		}
		revs = append(revs, e.Rev)
		if e.Rev >= head {
			return revs, nil
		}
	}
	return revs, nil
}

// TestWatchAdviceCompactedWhileReading: a compaction while a watch reads
// history, where the first key found short lost less than another key did
// (m/a keeps its entry at 5, m/b loses 2, 4 and 6). The revision the error
// names must be one a watch from does not fail at again, and not below
// Floor (contract §8.2): the advice covers every key under the prefix, not
// only the one that noticed.
func TestWatchAdviceCompactedWhileReading(t *testing.T) {
	s := revkv.New[string]()
	defer s.Close()
	for _, k := range []string{"m/a", "m/b", "m/a", "m/b", "m/a", "m/b", "m/b"} { // revisions 1..7
		_, err := s.Put(k, "v")
		require.NoError(t, err)
	}
	var oe *revkv.OpError
	for e, err := range s.Watch(context.Background(), "m/", 1) {
		if err != nil {
			require.ErrorAs(t, err, &oe)
			break
		}
		if e.Rev == 1 {
			require.NoError(t, s.Compact(7))
		}
	}
	require.NotNil(t, oe, "the watch reported no loss")
	require.ErrorIs(t, oe, revkv.ErrCompacted)
	require.GreaterOrEqual(t, oe.Rev, s.Floor(), "%v: the advice is below Floor", oe)
	require.NoError(t, watchToHead(s, oe.Rev), "%v; again from the revision it named", oe)
}
