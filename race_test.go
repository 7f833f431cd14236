package revkv_test

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

var raceKeys = []string{"k0", "k1", "k2", "k3", "k4", "k5"}

// raceWrites is how many writes each writer makes: fewer under -short.
func raceWrites() int {
	if testing.Short() {
		return 2000
	}
	return 20000
}

// hammerConfig paces a hammer.
type hammerConfig struct {
	writes int                  // per writer; the other goroutines run until the writers are done
	pause  func(rng *rand.Rand) // after every operation, if set (a fake sleep under synctest)
	upkeep func(rng *rand.Rand) // one upkeep operation
}

// observed is what one reader saw: a GetAt answer must never change, except
// into ErrCompacted once its history is gone (SPEC §4.6).
type observed struct {
	key   string
	rev   revkv.Revision
	value int
	ok    bool
}

// hammer runs writers, readers, views and upkeep on shared keys until every
// writer made cfg.writes writes, checking as it goes:
//   - Rev() never decreases as seen by any one goroutine;
//   - no reader sees revision r before Rev() reaches r: an entry read at r
//     means At(r) opens (so every revision below r is visible too);
//   - a View's answers (Get of every key, Scan) never change while it is open;
//   - every write returns a revision no other write returned.
//
// It returns the revisions writes returned and what readers saw through
// GetAt, for the caller's end-of-run checks.
func hammer(t *testing.T, s *revkv.Store[int], cfg hammerConfig) (map[revkv.Revision]string, []observed) {
	var (
		wg       sync.WaitGroup
		writers  sync.WaitGroup
		stop     atomic.Bool
		mu       sync.Mutex // guards written and seen
		written  = map[revkv.Revision]string{}
		seen     []observed
		failures = make(chan error, 16)
	)
	fail := func(format string, args ...any) {
		select {
		case failures <- fmt.Errorf(format, args...):
		default:
		}
		stop.Store(true)
	}
	loop := func(seed int64, n int, f func(rng *rand.Rand)) {
		rng := rand.New(rand.NewSource(seed))
		for i := 0; i != n && !stop.Load(); i++ {
			f(rng)
			if cfg.pause != nil {
				cfg.pause(rng)
			}
		}
	}
	run := func(seed int64, f func(rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(seed, -1, f)
		}()
	}
	write := func(seed int64, f func(rng *rand.Rand)) {
		writers.Add(1)
		go func() {
			defer writers.Done()
			loop(seed, cfg.writes, f)
		}()
	}

	for w := range 4 {
		write(int64(w), func(rng *rand.Rand) {
			k := raceKeys[rng.Intn(len(raceKeys))]
			var (
				rev revkv.Revision
				err error
			)
			switch rng.Intn(6) {
			case 0:
				rev, err = s.Put(k, rng.Int())
			case 1:
				rev, err = s.PutTTL(k, rng.Int(), time.Duration(1+rng.Intn(3000))*time.Microsecond)
			case 2:
				rev, err = s.Delete(k)
			case 3:
				e, _ := s.GetEntry(k)
				rev, err = s.CompareAndPut(k, e.Rev, rng.Int())
			case 4:
				rev, err = s.Expire(k, time.Duration(1+rng.Intn(3000))*time.Microsecond)
			default:
				rev, err = s.Persist(k)
			}
			if err != nil {
				if !errors.Is(err, revkv.ErrNotFound) && !errors.Is(err, revkv.ErrNoTTL) && !errors.Is(err, revkv.ErrConflict) {
					fail("write %q: %v", k, err)
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if prev, dup := written[rev]; dup {
				fail("revision %d returned twice (%q and %q)", rev, prev, k)
			}
			written[rev] = k
		})
	}

	for r := range 2 {
		var last revkv.Revision
		run(int64(100+r), func(rng *rand.Rand) {
			k := raceKeys[rng.Intn(len(raceKeys))]
			if e, ok := s.GetEntry(k); ok {
				if now := s.Rev(); now < e.Rev {
					fail("saw %q at revision %d while Rev() is %d", k, e.Rev, now)
				}
				if v, err := s.At(e.Rev); err != nil && !errors.Is(err, revkv.ErrCompacted) {
					fail("At(%d) after reading an entry at it: %v", e.Rev, err)
				} else if err == nil {
					v.Close()
				}
			}
			now := s.Rev()
			if now < last {
				fail("Rev() went back from %d to %d", last, now)
			}
			last = now
			at := revkv.Revision(rng.Int63n(int64(now) + 1))
			v, ok, err := s.GetAt(k, at)
			switch {
			case errors.Is(err, revkv.ErrCompacted):
			case err != nil:
				fail("GetAt(%q, %d): %v", k, at, err)
			default:
				mu.Lock()
				seen = append(seen, observed{k, at, v, ok})
				mu.Unlock()
			}
			if _, _, err := s.GetAsOf(k, time.Now().Add(-time.Duration(rng.Intn(5000))*time.Microsecond)); err != nil && !errors.Is(err, revkv.ErrCompacted) {
				fail("GetAsOf(%q): %v", k, err)
			}
			for range s.Scan("k") {
			}
			if rng.Intn(50) == 0 { // untrimmed histories grow long: copy them now and then
				checkHistory(s.History(k), fail)
			}
			_ = s.Len()
		})
	}

	run(200, func(rng *rand.Rand) {
		v, err := s.At(s.Rev())
		if errors.Is(err, revkv.ErrCompacted) {
			return // a compaction overtook Rev(): legitimate, try again
		}
		if err != nil {
			fail("At(Rev()): %v", err)
			return
		}
		defer v.Close()
		first := viewState(v)
		for range 5 {
			s.Put(raceKeys[rng.Intn(len(raceKeys))], rng.Int()) // writes the view must not see
			if again := viewState(v); !slices.Equal(first, again) {
				fail("view at %d changed: %v then %v", v.Rev(), first, again)
			}
		}
	})

	run(300, cfg.upkeep)

	writers.Wait()
	stop.Store(true)
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	require.NoError(t, s.Check())
	return written, seen
}

// viewState is everything a view answers, flattened for comparison.
func viewState(v *revkv.View[int]) []string {
	var out []string
	for _, k := range raceKeys {
		val, ok := v.Get(k)
		out = append(out, fmt.Sprint(k, val, ok))
	}
	for k, val := range v.Scan("") {
		out = append(out, fmt.Sprint("scan", k, val))
	}
	return append(out, fmt.Sprint("len", v.Len()))
}

// checkHistory: along one key's history revisions increase and times never
// decrease.
func checkHistory(h []revkv.Entry[int], fail func(string, ...any)) {
	for i := 1; i < len(h); i++ {
		if h[i].Rev <= h[i-1].Rev || h[i].Time.Before(h[i-1].Time) {
			fail("history of %q out of order at %d: %+v then %+v", h[i].Key, i, h[i-1], h[i])
		}
	}
}

// allEntries is every retained entry of every key, by revision.
func allEntries(s *revkv.Store[int]) []revkv.Entry[int] {
	var all []revkv.Entry[int]
	for _, k := range raceKeys {
		all = append(all, s.History(k)...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Rev < all[j].Rev })
	return all
}

// TestRaceNoGaps hammers the store with every write, PurgeExpired, readers
// and views, nothing trimmed, under -race. Besides the invariants of hammer,
// at the end:
//   - the revisions of all keys' histories are exactly 1..Rev(), no gaps, no
//     duplicates (expiries included);
//   - times never decrease along revisions, across keys;
//   - every revision a write returned is in the history of the key it wrote;
//   - every GetAt answer a reader saw is still the answer.
func TestRaceNoGaps(t *testing.T) {
	s := revkv.New[int]()
	defer s.Close()
	written, seen := hammer(t, s, hammerConfig{writes: raceWrites(), upkeep: func(*rand.Rand) { s.PurgeExpired() }})

	all := allEntries(s)
	require.Len(t, all, int(s.Rev()))
	for i, e := range all {
		require.Equal(t, revkv.Revision(i+1), e.Rev, "revisions have no gaps")
		if i > 0 {
			require.False(t, e.Time.Before(all[i-1].Time), "times never decrease: %+v then %+v", all[i-1], e)
		}
	}
	for rev, k := range written {
		require.Equal(t, k, all[rev-1].Key, "revision %d", rev)
	}
	for _, o := range seen {
		v, ok, err := s.GetAt(o.key, o.rev)
		require.NoError(t, err)
		require.Equal(t, [2]any{o.value, o.ok}, [2]any{v, ok}, "GetAt(%q, %d) is repeatable", o.key, o.rev)
	}
	t.Logf("%d revisions, %d GetAt answers rechecked", s.Rev(), len(seen))
}

// TestRaceWithTrimming adds Trim and Compact (and a history cap and
// retention) to the hammer; at the end it checks what checkAfterTrimming
// lists, besides the invariants of hammer.
func TestRaceWithTrimming(t *testing.T) {
	s := revkv.New[int](revkv.WithMaxHistory(4), revkv.WithRetention(50*time.Millisecond))
	defer s.Close()
	_, seen := hammer(t, s, hammerConfig{writes: raceWrites(), upkeep: upkeepOf(t, s)})
	checkAfterTrimming(t, s, seen)
}

// upkeepOf returns one random upkeep operation on s: PurgeExpired, Trim or
// Compact a little below the latest revision.
func upkeepOf(t *testing.T, s *revkv.Store[int]) func(rng *rand.Rand) {
	return func(rng *rand.Rand) {
		switch rng.Intn(3) {
		case 0:
			s.PurgeExpired()
		case 1:
			s.Trim()
		default:
			if err := s.Compact(s.Rev() - revkv.Revision(rng.Intn(50))); err != nil && !errors.Is(err, revkv.ErrFutureRevision) {
				t.Errorf("Compact: %v", err)
			}
		}
	}
}

// checkAfterTrimming checks a trimmed store at the end of a hammer:
//   - what remains of every history has increasing revisions and times that
//     never decrease, across keys;
//   - every GetAt answer a reader saw is still the answer, or ErrCompacted;
//   - Floor() <= Rev(), and a View opens at Floor().
func checkAfterTrimming(t *testing.T, s *revkv.Store[int], seen []observed) {

	all := allEntries(s)
	for i := 1; i < len(all); i++ {
		require.Less(t, all[i-1].Rev, all[i].Rev)
		require.False(t, all[i].Time.Before(all[i-1].Time), "times never decrease across keys")
	}
	compacted := 0
	for _, o := range seen {
		v, ok, err := s.GetAt(o.key, o.rev)
		if errors.Is(err, revkv.ErrCompacted) {
			compacted++
			continue
		}
		require.NoError(t, err)
		require.Equal(t, [2]any{o.value, o.ok}, [2]any{v, ok}, "GetAt(%q, %d) is repeatable", o.key, o.rev)
	}
	require.LessOrEqual(t, s.Floor(), s.Rev())
	v, err := s.At(s.Floor())
	require.NoError(t, err)
	v.Close()
	t.Logf("%d revisions, floor %d; %d GetAt answers rechecked, %d since compacted", s.Rev(), s.Floor(), len(seen)-compacted, compacted)
}
