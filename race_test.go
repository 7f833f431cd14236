package revkv_test

import (
	"errors"
	"flag"
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
	writes int                  // per writer (-1: no limit); the others run until the writers are done
	until  func() bool          // if set, every goroutine stops once it reports true
	pause  func(rng *rand.Rand) // after every operation, if set (a fake sleep under synctest)
	upkeep func(rng *rand.Rand) // one upkeep operation
}

// observed is what one reader saw: a GetAt answer must never change, except
// into ErrCompacted once its history is gone (contract §4.6).
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
		for i := 0; i != n && !stop.Load() && (cfg.until == nil || !cfg.until()); i++ {
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

// recheck asks again every GetAt a reader saw: each answer must be the same,
// or ErrCompacted once its history is gone (contract §4.6). It returns how many
// were compacted.
func recheck(t *testing.T, s *revkv.Store[int], seen []observed) (compacted int) {
	for _, o := range seen {
		v, ok, err := s.GetAt(o.key, o.rev)
		if errors.Is(err, revkv.ErrCompacted) {
			compacted++
			continue
		}
		require.NoError(t, err)
		require.Equal(t, [2]any{o.value, o.ok}, [2]any{v, ok}, "GetAt(%q, %d) is repeatable", o.key, o.rev)
	}
	return compacted
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
	require.Zero(t, recheck(t, s, seen), "nothing was trimmed")
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
	compacted := recheck(t, s, seen)
	require.LessOrEqual(t, s.Floor(), s.Rev())
	v, err := s.At(s.Floor())
	require.NoError(t, err)
	v.Close()
	t.Logf("%d revisions, floor %d; %d GetAt answers rechecked, %d since compacted", s.Rev(), s.Floor(), len(seen)-compacted, compacted)
}

var soakFlag = flag.Duration("soak", 0, "run TestSoak this long (e.g. -soak=10m); 0: its short form")

// TestSoak runs every operation, both background goroutines, views and
// Compact together for a while (-soak=10m for the long form; a second
// otherwise, skipped under -short), then checks contract §2 and §4.6 over the
// whole run:
//   - the revisions ever made are exactly 1..Rev(), each once, with no gaps,
//     expiries included: a collector goroutine records every key's History,
//     and Compact only goes below what it has recorded;
//   - times never decrease along revisions, across keys;
//   - an entry read twice (by two passes of the collector) is the same;
//   - every revision a write returned holds that write's key;
//   - every GetAt answer a reader saw is still the answer, or ErrCompacted;
//   - the invariants of hammer, checked as it goes, and the store's Check.
func TestSoak(t *testing.T) {
	d := *soakFlag
	if d == 0 {
		if testing.Short() {
			t.Skip("-short")
		}
		d = time.Second
	}
	s := revkv.New[int](revkv.WithExpiryInterval(time.Millisecond), revkv.WithTrimInterval(time.Millisecond))
	defer s.Close()

	var (
		mu        sync.Mutex // guards collected
		collected = map[revkv.Revision]revkv.Entry[int]{}
		watermark atomic.Int64 // every revision <= watermark has been collected
		clash     atomic.Value
	)
	collect := func() {
		w := s.Rev()
		mu.Lock()
		defer mu.Unlock()
		for _, k := range raceKeys {
			for _, e := range s.History(k) {
				if prev, ok := collected[e.Rev]; ok && prev != e {
					clash.Store(fmt.Sprintf("revision %d read as %+v, then %+v", e.Rev, prev, e))
				}
				collected[e.Rev] = e
			}
		}
		watermark.Store(int64(w))
	}
	deadline := time.Now().Add(d)
	stopCollector := make(chan struct{})
	collectorDone := make(chan struct{})
	go func() {
		defer close(collectorDone)
		for {
			select {
			case <-stopCollector:
				return
			default:
				collect()
			}
		}
	}()

	written, seen := hammer(t, s, hammerConfig{
		writes: -1,
		until:  func() bool { return time.Now().After(deadline) },
		upkeep: func(rng *rand.Rand) {
			switch rng.Intn(4) {
			case 0:
				s.PurgeExpired()
			case 1:
				s.Trim()
			default:
				if w := watermark.Load(); w > 0 {
					require.NoError(t, s.Compact(revkv.Revision(w-rng.Int63n(min(w, 200)))))
				}
			}
		},
	})
	close(stopCollector)
	<-collectorDone
	require.NoError(t, s.Close()) // the expirer stops: no revision after the last pass
	collect()
	if c := clash.Load(); c != nil {
		t.Fatal(c)
	}

	require.Len(t, collected, int(s.Rev()), "every revision was seen")
	var prev revkv.Entry[int]
	for r := revkv.Revision(1); r <= s.Rev(); r++ {
		e, ok := collected[r]
		require.True(t, ok, "revision %d is missing: a gap", r)
		require.False(t, e.Time.Before(prev.Time), "times never decrease: %+v then %+v", prev, e)
		prev = e
	}
	for rev, k := range written {
		require.Equal(t, k, collected[rev].Key, "revision %d", rev)
	}
	compacted := recheck(t, s, seen)
	expiries := 0
	for _, e := range collected {
		if e.Op == revkv.OpExpire {
			expiries++
		}
	}
	t.Logf("%v: %d revisions (%d expiries, %d returned by writes), floor %d; %d GetAt answers rechecked, %d since compacted",
		d, s.Rev(), expiries, len(written), s.Floor(), len(seen)-compacted, compacted)
}
