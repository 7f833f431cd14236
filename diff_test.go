package revkv_test

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// diffKeys are the keys the Diff test writes: a few prefixes, nested.
var diffKeys = []string{"a", "a/1", "a/2", "a/10", "b", "b/1", "c/x", "c/y", ""}

// bruteDiff is Diff by comparing two views key by key: what Diff must
// yield, without its index.
func bruteDiff(t *testing.T, s *revkv.Store[string], prefix string, from, to revkv.Revision) []revkv.KeyDiff[string] {
	t.Helper()
	vf, err := s.At(from)
	require.NoError(t, err)
	defer vf.Close()
	vt, err := s.At(to)
	require.NoError(t, err)
	defer vt.Close()
	keys := map[string]bool{}
	for _, k := range diffKeys {
		keys[k] = true
	}
	var out []revkv.KeyDiff[string]
	for _, k := range sortedKeys(keys) {
		if len(k) < len(prefix) || k[:len(prefix)] != prefix {
			continue
		}
		b, bok := vf.Entry(k)
		a, aok := vt.Entry(k)
		if bok == aok && (!bok || b.Rev == a.Rev) {
			continue
		}
		out = append(out, revkv.KeyDiff[string]{Key: k, Before: b, After: a})
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks { // a few keys: insertion sort
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

func collectDiff(t *testing.T, s *revkv.Store[string], prefix string, from, to revkv.Revision) ([]revkv.KeyDiff[string], error) {
	t.Helper()
	var out []revkv.KeyDiff[string]
	for d, err := range s.Diff(prefix, from, to) {
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

// TestDiffAgainstViews: over random histories with deletes, expiries,
// compaction, a history cap, sealing and reopening, Diff yields what comparing two
// views key by key does, for random pairs of revisions and prefixes,
// whether its index was built before the writes or after them.
func TestDiffAgainstViews(t *testing.T) {
	for seed := range int64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			clock := newClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			dir := t.TempDir()
			opts := []revkv.Option{revkv.WithClock(clock.Now)}
			switch seed % 3 {
			case 0:
				opts = append(opts, revkv.WithMaxHistory(3))
			case 1: // sealed every kilobyte: Diff reads the tier's revisions
				opts = append(opts, revkv.WithMemory(1<<10), revkv.WithCheckpointBytes(1<<10))
			}
			s := openStr(t, dir, opts...)
			defer func() { s.Close() }()
			check := func() {
				for range 20 {
					floor, head := s.Floor(), s.Rev()
					from := floor + revkv.Revision(rng.Int63n(int64(head-floor)+1))
					to := from + revkv.Revision(rng.Int63n(int64(head-from)+1))
					if rng.Intn(5) == 0 { // the empty state, compacted or not
						from = 0
					}
					prefix := []string{"", "a", "a/", "b", "c/", "z"}[rng.Intn(6)]
					if floor > 1 && rng.Intn(10) == 0 { // the empty state against a revision compacted away
						_, err := collectDiff(t, s, prefix, 0, 1+revkv.Revision(rng.Int63n(int64(floor)-1)))
						require.ErrorIs(t, err, revkv.ErrCompacted)
					}
					got, err := collectDiff(t, s, prefix, from, to)
					require.NoError(t, err)
					require.Equal(t, bruteDiff(t, s, prefix, from, to), got, "Diff(%q, %d, %d)", prefix, from, to)
				}
			}
			if seed%2 == 0 {
				check() // the index is built now, and kept by every write after
			}
			for step := range 400 {
				k := diffKeys[rng.Intn(len(diffKeys))]
				switch op := rng.Intn(10); {
				case op < 4:
					s.Put(k, fmt.Sprint(step))
				case op < 6:
					s.PutTTL(k, fmt.Sprint(step), time.Duration(1+rng.Intn(5))*time.Second)
				case op < 8:
					s.Delete(k)
				case op < 9:
					clock.Add(time.Duration(rng.Intn(3)) * time.Second)
					s.PurgeExpired()
				default:
					if rng.Intn(4) == 0 && s.Rev() > 10 {
						require.NoError(t, s.Compact(s.Rev()-revkv.Revision(rng.Intn(10))))
					}
				}
				if step%100 == 99 {
					check()
				}
				if step == 250 {
					require.NoError(t, s.Close())
					s = openStr(t, dir, opts...)
					check()
				}
			}
			check()
		})
	}
}

// TestDiffErrors: a range Diff cannot answer is its error, saying why.
func TestDiffErrors(t *testing.T) {
	s := revkv.New[string]()
	defer s.Close()
	for i := range 10 {
		s.Put(fmt.Sprint("k", i), "v")
	}
	require.NoError(t, s.Compact(5))
	_, err := collectDiff(t, s, "", 3, 8)
	require.ErrorIs(t, err, revkv.ErrCompacted)
	require.EqualError(t, err, `revkv: diff "" from 3 to 8: required revision has been compacted (floor is 5)`)
	_, err = collectDiff(t, s, "", 8, 7)
	require.ErrorIs(t, err, revkv.ErrFutureRevision)
	_, err = collectDiff(t, s, "", 5, 11)
	require.ErrorIs(t, err, revkv.ErrFutureRevision)
	for _, from := range []revkv.Revision{0, -1} { // the empty state is known after a compaction too
		got, err := collectDiff(t, s, "", from, 8)
		require.NoError(t, err)
		require.Len(t, got, 8, "from %d", from)
		require.Equal(t, "k7", got[7].Key)
		require.Zero(t, got[7].Before.Rev)
		require.Equal(t, revkv.Revision(8), got[7].After.Rev)
	}
	_, err = collectDiff(t, s, "", 0, 3) // the empty state, but to below the floor
	require.ErrorIs(t, err, revkv.ErrCompacted)
	require.EqualError(t, err, `revkv: diff "" from 0 to 3: required revision has been compacted (floor is 5)`)
	got, err := collectDiff(t, s, "", 7, 7)
	require.NoError(t, err)
	require.Empty(t, got, "a revision against itself")
	got, err = collectDiff(t, s, "k", 5, 10)
	require.NoError(t, err)
	require.Len(t, got, 5)
	require.Equal(t, "k5", got[0].Key)
	require.Zero(t, got[0].Before.Rev, "absent at 5")
	require.Equal(t, revkv.Revision(6), got[0].After.Rev)
}

// TestDiffFromEmptyConcurrent: Diff from the empty state after a
// compaction (a walk of the key tree, not of the revisions) against a View
// at the same revision, while another goroutine writes, deletes and
// compacts; half the loops break early, and every pin is let go after.
func TestDiffFromEmptyConcurrent(t *testing.T) {
	s := revkv.New[string]()
	defer s.Close()
	for i := range 300 {
		s.Put(fmt.Sprint("k", i%150), fmt.Sprint(i))
	}
	require.NoError(t, s.Compact(s.Rev()-20))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewSource(1))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprint("k", rng.Intn(200))
			switch rng.Intn(4) {
			case 0:
				s.Delete(k)
			case 3:
				if s.Rev() > 5 {
					s.Compact(s.Rev() - 2)
				}
			default:
				s.Put(k, fmt.Sprint(i))
			}
		}
	}()
	for iter := range 100 {
		v, err := s.At(s.Rev())
		for errors.Is(err, revkv.ErrCompacted) { // a compaction passed the head just read
			v, err = s.At(s.Rev())
		}
		require.NoError(t, err)
		to := v.Rev()
		want := map[string]revkv.Revision{}
		for k := range v.Scan("k") {
			e, _ := v.Entry(k)
			want[k] = e.Rev
		}
		got := map[string]revkv.Revision{}
		n := 0
		compacted := false
		for d, err := range s.Diff("k", 0, to) {
			if errors.Is(err, revkv.ErrCompacted) && to < s.Floor() {
				compacted = true // a compaction passed to since the view opened
				break
			}
			require.NoError(t, err)
			require.Zero(t, d.Before.Rev)
			got[d.Key] = d.After.Rev
			if n++; iter%2 == 1 && n == 40 {
				break // an early break must release the pin
			}
		}
		if iter%2 == 0 && !compacted {
			require.Equal(t, want, got, "Diff(k, 0, %d)", to)
		}
		v.Close()
	}
	close(stop)
	<-done
	// every pin let go: a compaction to the head cuts every key to one entry
	require.NoError(t, s.Compact(s.Rev()))
	for i := range 200 {
		require.LessOrEqual(t, len(s.History(fmt.Sprint("k", i))), 1, "k%d", i)
	}
}
