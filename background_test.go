package revkv_test

import (
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/revkv/revkv"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewStartsOnlyWhatIsAsked(t *testing.T) {
	s := revkv.New[int](revkv.WithMaxHistory(4), revkv.WithRetention(time.Second))
	goleak.VerifyNone(t) // no interval option: no goroutine
	require.NoError(t, s.Close())

	s = revkv.New[int](revkv.WithExpiryInterval(time.Millisecond), revkv.WithTrimInterval(time.Millisecond))
	require.NoError(t, s.Close())
	goleak.VerifyNone(t) // Close stopped and waited for both
	require.NoError(t, s.Close(), "a second Close returns nil")
}

func TestDroppedStoreStopsItsGoroutines(t *testing.T) {
	func() {
		s := revkv.New[int](revkv.WithExpiryInterval(time.Millisecond), revkv.WithTrimInterval(time.Millisecond))
		_, err := s.PutTTL("k", 1, time.Millisecond)
		require.NoError(t, err)
	}() // dropped without Close
	for range 5 {
		runtime.GC()
	}
	goleak.VerifyNone(t) // it retries while the cleanup stops them
}

// The expirer writes each OpExpire at its exact time, in order, with no write
// or PurgeExpired to trigger it, and keeps doing so while writers run.
func TestExpirerWritesExpiries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now() // the bubble's fake clock; the store reads it too
		s := revkv.New[int](revkv.WithExpiryInterval(100 * time.Millisecond))
		defer s.Close()

		rng := rand.New(rand.NewSource(1))
		want := map[string]time.Time{}
		for i := range 200 {
			k := fmt.Sprintf("session/%03d", i)
			ttl := time.Duration(1+rng.Intn(5000)) * time.Millisecond
			_, err := s.PutTTL(k, i, ttl)
			require.NoError(t, err)
			want[k] = start.Add(ttl)
		}
		rev := s.Rev()

		// Writers to other keys run alongside for part of the time.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 100 {
				_, err := s.Put("other", i)
				require.NoError(t, err)
				time.Sleep(time.Duration(rng.Intn(30)) * time.Millisecond)
			}
		}()
		<-done
		time.Sleep(6 * time.Second) // fake time: every TTL has run out
		synctest.Wait()
		require.Greater(t, s.Rev(), rev+100, "the expirer wrote the expiries")

		type expiry struct {
			at  time.Time
			key string
			rev revkv.Revision
		}
		var got []expiry
		for k, at := range want {
			h := s.History(k)
			require.Len(t, h, 2, k)
			require.Equal(t, revkv.OpExpire, h[1].Op, k)
			require.Equal(t, at, h[1].Time, "%s expired at exactly its ExpiresAt", k)
			require.Equal(t, h[0].ExpiresAt, h[1].Time)
			got = append(got, expiry{h[1].Time, k, h[1].Rev})
		}
		slices.SortFunc(got, func(a, b expiry) int { return int(a.rev - b.rev) })
		for i := 1; i < len(got); i++ {
			a, b := got[i-1], got[i]
			require.True(t, a.at.Before(b.at) || (a.at.Equal(b.at) && a.key < b.key),
				"in order of expiry time, then key: %v then %v", a, b)
		}
		require.Zero(t, s.PurgeExpired(), "nothing was left for PurgeExpired")
	})
}

// The trimmer brings every key under the cap within a bounded number of
// ticks, with no Trim call.
func TestTrimmerBringsKeysUnderTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := revkv.New[int](revkv.WithMaxHistory(4), revkv.WithTrimInterval(100*time.Millisecond))
		defer s.Close()
		const keys = 300
		for round := range 8 { // 8 entries a key: under the 2n a write would cut
			for i := range keys {
				_, err := s.Put(fmt.Sprint("k", i), round)
				require.NoError(t, err)
			}
		}
		over := func() int {
			n := 0
			for i := range keys {
				if len(s.History(fmt.Sprint("k", i))) > 4 {
					n++
				}
			}
			return n
		}
		require.Equal(t, keys, over())
		ticks := 0
		for over() > 0 {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			ticks++
			require.LessOrEqual(t, ticks, keys/20, "the sweep reaches every key within keys/sample ticks")
		}
		require.Positive(t, s.Floor())
		t.Logf("%d keys under the cap after %d ticks", keys, ticks)
	})
}

// The trimmer applies retention: history older than d is compacted away.
func TestTrimmerAppliesRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := revkv.New[int](revkv.WithRetention(time.Second), revkv.WithTrimInterval(50*time.Millisecond))
		defer s.Close()
		for i := range 50 {
			_, err := s.Put("k", i)
			require.NoError(t, err)
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		// The newest entries are within the last second (or the entry visible
		// at its start); everything older is gone.
		h := s.History("k")
		require.Less(t, len(h), 13)
		require.False(t, h[1].Time.Before(time.Now().Add(-time.Second)), "entries older than the retention are gone")
		_, _, err := s.GetAt("k", 1)
		require.ErrorIs(t, err, revkv.ErrCompacted)
	})
}

// A pinned View keeps its answers while the trimmer and writers run.
func TestViewKeepsAnswersWhileTrimmerRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := revkv.New[int](revkv.WithMaxHistory(1), revkv.WithRetention(100*time.Millisecond), revkv.WithTrimInterval(10*time.Millisecond))
		defer s.Close()
		for i := range 20 {
			_, err := s.Put(fmt.Sprint("k", i%5), i)
			require.NoError(t, err)
		}
		v, err := s.At(s.Rev())
		require.NoError(t, err)
		before := viewState(v)
		for i := range 200 {
			_, err := s.Put(fmt.Sprint("k", i%5), 1000+i)
			require.NoError(t, err)
			time.Sleep(5 * time.Millisecond)
		}
		synctest.Wait()
		require.Equal(t, before, viewState(v))
		v.Close()
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, s.History("k0"), 1, "once the view closed, the trimmer freed what it held")
	})
}

// TestRaceBackground runs both goroutines together with writers, readers,
// views, Trim and Compact under -race, in fake time, and checks the
// invariants of hammer and checkAfterTrimming.
func TestRaceBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := revkv.New[int](
			revkv.WithMaxHistory(4), revkv.WithRetention(200*time.Millisecond),
			revkv.WithExpiryInterval(2*time.Millisecond), revkv.WithTrimInterval(3*time.Millisecond))
		defer s.Close()
		_, seen := hammer(t, s, hammerConfig{
			writes: raceWrites() / 4,
			pause:  func(rng *rand.Rand) { time.Sleep(time.Duration(rng.Intn(500)) * time.Microsecond) },
			upkeep: upkeepOf(t, s),
		})
		checkAfterTrimming(t, s, seen)
	})
}
