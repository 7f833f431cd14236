package revkv_test

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// TestUpdateMovesAtomically: writers move amounts between accounts with
// Update, so the sum of all accounts is constant at every batch's end, while
// readers check, under -race, that
//   - a Scan of the accounts always sums to the total;
//   - a View at Rev() and a View as of now always sum to the total;
//   - replaying every key's History, the sum is the total just after every
//     revision an Update returned (reads inside a batch may see its prefix,
//     as documented; a batch's end never).
func TestUpdateMovesAtomically(t *testing.T) {
	t.Run("New", func(t *testing.T) { moveAtomically(t, revkv.New[int]()) })
	t.Run("Open", func(t *testing.T) {
		s, err := revkv.Open(t.TempDir(), revkv.JSONCodec[int](), revkv.WithCheckpointBytes(32<<10))
		require.NoError(t, err)
		moveAtomically(t, s)
	})
}

func moveAtomically(t *testing.T, s *revkv.Store[int]) {
	const accounts, total = 4, 1000
	defer s.Close()
	_, err := s.Update(func(tx *revkv.Txn[int]) error {
		for i := range accounts {
			if err := tx.Put(fmt.Sprint("acct/", i), total/accounts); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)

	writes := 2000
	if testing.Short() {
		writes = 300
	}
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		mu      sync.Mutex // guards ends
		ends    = []revkv.Revision{s.Rev()}
		bad     atomic.Value
		readers sync.WaitGroup
	)
	fail := func(format string, args ...any) { bad.CompareAndSwap(nil, fmt.Sprintf(format, args...)) }
	sum := func(seq func(func(string, int) bool)) (n int) {
		for _, v := range seq {
			n += v
		}
		return n
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for range writes {
				from, to := fmt.Sprint("acct/", rng.Intn(accounts)), fmt.Sprint("acct/", rng.Intn(accounts))
				amount := 1 + rng.Intn(50)
				rev, err := s.Update(func(tx *revkv.Txn[int]) error {
					a, _ := tx.Get(from)
					if a < amount {
						return errAbort // not enough: nothing is written
					}
					if err := tx.Put(from, a-amount); err != nil {
						return err
					}
					b, _ := tx.Get(to)
					return tx.Put(to, b+amount)
				})
				switch {
				case errors.Is(err, errAbort):
				case err != nil:
					fail("update: %v", err)
				default:
					mu.Lock()
					ends = append(ends, rev)
					mu.Unlock()
				}
			}
		}()
	}
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !stop.Load() {
				if n := sum(s.Scan("acct/")); n != total {
					fail("reader %d: Scan sums to %d", r, n)
				}
				v, err := s.At(s.Rev())
				if err != nil {
					fail("At: %v", err)
					return
				}
				if n := sum(v.Scan("acct/")); n != total {
					fail("View at %d sums to %d", v.Rev(), n)
				}
				v.Close()
				v, err = s.AsOf(time.Now())
				if err != nil {
					fail("AsOf: %v", err)
					return
				}
				if n := sum(v.Scan("acct/")); n != total {
					fail("View as of now (rev %d) sums to %d", v.Rev(), n)
				}
				v.Close()
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	if msg := bad.Load(); msg != nil {
		t.Fatal(msg)
	}

	// Replay: every revision's entry, by revision, and the sum at each end.
	var all []revkv.Entry[int]
	for i := range accounts {
		all = append(all, s.History(fmt.Sprint("acct/", i))...)
	}
	slices.SortFunc(all, func(a, b revkv.Entry[int]) int { return int(a.Rev - b.Rev) })
	require.Equal(t, s.Rev(), all[len(all)-1].Rev)
	slices.Sort(ends)
	state := map[string]int{}
	j := 0
	for _, e := range all {
		state[e.Key] = e.Value
		for j < len(ends) && ends[j] == e.Rev {
			n := 0
			for _, v := range state {
				n += v
			}
			require.Equal(t, total, n, "sum just after Update's revision %d", e.Rev)
			j++
		}
	}
	require.Equal(t, len(ends), j, "every Update's revision was in history")
}

// TestUpdateBadUse: a Txn after its Update, errors from each write inside,
// a panic inside fn, an empty Update, Update on a closed store.
func TestUpdateBadUse(t *testing.T) {
	s, c := newStore(t)
	_, err := s.Put("k", "v")
	require.NoError(t, err)

	rev, err := s.Update(func(*revkv.Txn[string]) error { return nil })
	require.NoError(t, err)
	require.Equal(t, s.Rev(), rev, "an empty Update returns Rev()")
	require.Equal(t, revkv.Revision(1), rev)

	var kept *revkv.Txn[string]
	_, err = s.Update(func(tx *revkv.Txn[string]) error {
		kept = tx
		require.ErrorIs(t, tx.Delete("missing"), revkv.ErrNotFound)
		require.ErrorIs(t, tx.Expire("missing", time.Second), revkv.ErrNotFound)
		require.ErrorIs(t, tx.Persist("missing"), revkv.ErrNotFound)
		require.ErrorIs(t, tx.Persist("k"), revkv.ErrNoTTL)
		require.ErrorIs(t, tx.PutTTL("k", "x", 0), revkv.ErrInvalidTTL)
		require.ErrorIs(t, tx.PutTTL("k", "x", -time.Second), revkv.ErrInvalidTTL)
		require.ErrorIs(t, tx.Expire("k", 1<<63-1), revkv.ErrInvalidTTL)
		err := tx.Delete("missing")
		require.EqualError(t, err, `revkv: delete "missing": key not found`)
		// Failed writes wrote nothing: fn may go on.
		require.NoError(t, tx.Put("k2", "w"))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(2), s.Rev(), "only the one good write")
	require.ErrorIs(t, kept.Put("k", "x"), revkv.ErrClosed)
	require.ErrorIs(t, kept.PutTTL("k", "x", time.Second), revkv.ErrClosed)
	require.ErrorIs(t, kept.PutTTL("k", "x", 0), revkv.ErrClosed, "a dead Txn says so before checking arguments")
	require.ErrorIs(t, kept.Delete("k"), revkv.ErrClosed)
	require.ErrorIs(t, kept.Expire("k", time.Second), revkv.ErrClosed)
	require.ErrorIs(t, kept.Persist("k"), revkv.ErrClosed)
	// It says the transaction is over, not that the store is closed: the
	// store is open.
	require.ErrorIs(t, kept.Put("k", "x"), revkv.ErrTxnDone)
	require.EqualError(t, kept.Put("k", "x"), `revkv: put "k": transaction is over: its Update has returned`)
	require.NotContains(t, kept.Delete("k").Error(), "closed")
	_, ok := kept.Get("k")
	require.False(t, ok)
	_, ok = kept.GetEntry("k")
	require.False(t, ok)

	// A panic: nothing written, the lock released, the store usable.
	require.PanicsWithValue(t, "boom", func() {
		_, _ = s.Update(func(tx *revkv.Txn[string]) error {
			require.NoError(t, tx.Put("k", "half"))
			panic("boom")
		})
	})
	v, _ := s.Get("k")
	require.Equal(t, "v", v)
	require.Equal(t, revkv.Revision(2), s.Rev())
	_, err = s.Put("k", "after")
	require.NoError(t, err, "the write lock was released")

	// An error: returned as it is, nothing written.
	mine := errors.New("mine")
	rev, err = s.Update(func(tx *revkv.Txn[string]) error {
		require.NoError(t, tx.Put("k", "half"))
		return mine
	})
	require.Same(t, mine, err)
	require.Zero(t, rev)
	v, _ = s.Get("k")
	require.Equal(t, "after", v)

	// Expiries due are written before fn, even when fn fails.
	_, err = s.PutTTL("t", "x", time.Second)
	require.NoError(t, err)
	c.Add(time.Second)
	before := s.Rev()
	_, err = s.Update(func(tx *revkv.Txn[string]) error {
		_, ok := tx.Get("t")
		require.False(t, ok)
		return mine
	})
	require.Same(t, mine, err)
	require.Equal(t, before+1, s.Rev(), "the expiry was written")
	require.Equal(t, revkv.OpExpire, s.History("t")[1].Op)

	require.NoError(t, s.Close())
	_, err = s.Update(func(*revkv.Txn[string]) error { t.Fatal("fn ran on a closed store"); return nil })
	require.ErrorIs(t, err, revkv.ErrClosed)
	require.EqualError(t, err, "revkv: update: store is closed")
}

// TestUpdateRevisionsAndReads: a batch takes consecutive revisions at one
// time; a key written twice takes two; reads inside see the batch's own
// writes with the revisions they will take; GetAt inside the batch sees its
// prefix; GetAsOf and AsOf land after it.
func TestUpdateRevisionsAndReads(t *testing.T) {
	s, c := newStore(t)
	_, err := s.PutTTL("a", "old", time.Minute) // 1
	require.NoError(t, err)
	c.Add(time.Second)
	at := c.Now()
	rev, err := s.Update(func(tx *revkv.Txn[string]) error {
		require.NoError(t, tx.Put("a", "1"))                    // 2: cancels a's expiry
		require.NoError(t, tx.Put("b", "1"))                    // 3
		require.NoError(t, tx.PutTTL("a", "2", 30*time.Second)) // 4
		e, ok := tx.GetEntry("a")
		require.True(t, ok)
		require.Equal(t, revkv.Entry[string]{Key: "a", Op: revkv.OpPut, Value: "2", Rev: 4, Time: at, ExpiresAt: at.Add(30 * time.Second)}, e)
		require.NoError(t, tx.Delete("b")) // 5
		_, ok = tx.Get("b")
		require.False(t, ok)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(5), rev)
	h := s.History("a")
	require.Len(t, h, 3)
	for _, e := range append(h[1:], s.History("b")...) {
		require.Equal(t, at, e.Time, "one time for the batch")
	}
	v, ok, err := s.GetAt("b", 3)
	require.NoError(t, err)
	require.True(t, ok, "GetAt inside the batch sees its prefix")
	require.Equal(t, "1", v)
	_, ok, err = s.GetAsOf("b", at)
	require.NoError(t, err)
	require.False(t, ok, "by time, the batch is whole")
	view, err := s.AsOf(at)
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(5), view.Rev())
	view.Close()

	// a's first expiry (at 1 min) was cancelled; its new one (30 s) stands.
	c.Add(31 * time.Second)
	require.Equal(t, 1, s.PurgeExpired())
	h = s.History("a")
	require.Equal(t, revkv.OpExpire, h[len(h)-1].Op)
	require.Equal(t, at.Add(30*time.Second), h[len(h)-1].Time)
	c.Add(time.Minute)
	require.Zero(t, s.PurgeExpired(), "the cancelled expiry never fires")
	require.Zero(t, s.Len())
}

// TestUpdateHistoryCap: a batch that takes a key over twice the cap is cut
// back to the cap once it is in, like a single write.
func TestUpdateHistoryCap(t *testing.T) {
	s, _ := newStore(t, revkv.WithMaxHistory(2))
	_, err := s.Update(func(tx *revkv.Txn[string]) error {
		for i := range 7 {
			if err := tx.Put("k", fmt.Sprint(i)); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	h := s.History("k")
	require.Len(t, h, 2)
	require.Equal(t, "6", h[1].Value)
	require.Equal(t, revkv.Revision(6), s.Floor())
	require.NoError(t, s.Check())
}

// TestUpdateManyKeys goes past the size at which a Txn indexes its writes in
// a map, with keys new and old, written once and twice.
func TestUpdateManyKeys(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.Put("k0", "old")
	require.NoError(t, err)
	rev, err := s.Update(func(tx *revkv.Txn[string]) error {
		for i := range 100 {
			require.NoError(t, tx.Put(fmt.Sprint("k", i%40), fmt.Sprint(i)))
			v, ok := tx.Get(fmt.Sprint("k", i%40))
			require.True(t, ok)
			require.Equal(t, fmt.Sprint(i), v)
		}
		return tx.Delete("k39")
	})
	require.NoError(t, err)
	require.Equal(t, revkv.Revision(102), rev)
	require.Equal(t, 39, s.Len())
	require.Len(t, s.History("k0"), 4)
	require.NoError(t, s.Check())
}

// ModRev is the revision of a key's newest entry of any kind, the
// transaction's own writes included.
func TestTxnModRev(t *testing.T) {
	s := revkv.New[string]()
	defer s.Close()
	s.Put("a", "1")
	s.Put("b", "1")
	s.Delete("b")
	_, err := s.Update(func(tx *revkv.Txn[string]) error {
		require.Equal(t, revkv.Revision(1), tx.ModRev("a"))
		require.Equal(t, revkv.Revision(3), tx.ModRev("b"), "a delete counts")
		require.Equal(t, revkv.Revision(0), tx.ModRev("c"), "never written")
		tx.Put("c", "x")
		tx.Put("a", "2")
		require.Equal(t, revkv.Revision(4), tx.ModRev("c"))
		require.Equal(t, revkv.Revision(5), tx.ModRev("a"))
		return nil
	})
	require.NoError(t, err)
	e, _ := s.GetEntry("a")
	require.Equal(t, revkv.Revision(5), e.Rev)
	var kept *revkv.Txn[string]
	s.Update(func(tx *revkv.Txn[string]) error { kept = tx; return nil })
	require.Equal(t, revkv.Revision(0), kept.ModRev("a"), "a handle kept past its Update")
}

// Keys lists the live keys as the transaction sees them, in order.
func TestTxnKeys(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		s := revkv.New[string]()
		if dir != "" {
			var err error
			s, err = revkv.Open(dir, revkv.StringCodec())
			require.NoError(t, err)
		}
		s.Put("a/1", "x")
		s.Put("a/2", "x")
		s.Put("b", "x")
		s.PutTTL("a/3", "x", time.Nanosecond)
		time.Sleep(time.Millisecond)
		_, err := s.Update(func(tx *revkv.Txn[string]) error {
			require.Equal(t, []string{"a/1", "a/2"}, tx.Keys("a/"), "an expired key is not live")
			tx.Delete("a/1")
			tx.Put("a/0", "y")
			tx.Put("a/9", "y")
			require.Equal(t, []string{"a/0", "a/2", "a/9"}, tx.Keys("a/"))
			require.Equal(t, []string{"a/0", "a/2", "a/9", "b"}, tx.Keys(""))
			for _, k := range tx.Keys("") {
				tx.Delete(k)
			}
			require.Empty(t, tx.Keys(""))
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 0, s.Len())
		require.NoError(t, s.Close())
	}
}

// A View's ModRev answers what a transaction's did at the view's
// revision, from memory and from sealed history alike, and a put whose
// TTL has passed at the view's time, its expiry not yet written, answers
// a revision after the view's, as the transaction writing that expiry
// first would.
func TestViewModRev(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, sealed := range []bool{false, true} {
		s, err := revkv.Open(t.TempDir(), revkv.StringCodec(), revkv.WithClock(clock), revkv.WithMemory(1<<20))
		require.NoError(t, err)
		s.Put("a", "1")
		s.Put("b", "1")
		s.Delete("b")
		s.PutTTL("c", "1", time.Second)
		if sealed {
			require.NoError(t, s.Checkpoint())
		}
		v := s.Latest()
		for key, want := range map[string]revkv.Revision{"a": 1, "b": 3, "c": 4, "d": 0} {
			require.Equal(t, want, v.ModRev(key), "%s, sealed %v", key, sealed)
		}
		v.Close()
		v, err = s.At(2)
		require.NoError(t, err)
		for key, want := range map[string]revkv.Revision{"a": 1, "b": 2, "c": 0} {
			require.Equal(t, want, v.ModRev(key), "%s at 2, sealed %v", key, sealed)
		}
		v.Close()

		now = now.Add(2 * time.Second) // c is due; its expiry is not written yet
		v = s.Latest()
		require.Greater(t, v.ModRev("c"), v.Rev(), "a due expiry counts as a change")
		require.Equal(t, revkv.Revision(1), v.ModRev("a"))
		_, err = s.Update(func(tx *revkv.Txn[string]) error {
			require.Greater(t, tx.ModRev("c"), revkv.Revision(4), "the transaction writes it first")
			return nil
		})
		require.NoError(t, err)
		require.NoError(t, v.Err())
		v.Close()
		require.NoError(t, s.Close())
		now = now.Add(time.Minute)
	}
}
