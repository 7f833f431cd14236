package revkv

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/segment"
	"github.com/revkv/revkv/vfs"
)

// twinStores is a store on a directory that seals at each Checkpoint, and
// a store made by New given the same writes at the same times: the model
// every read of the first is held to, across seals, merges and reopens.
type twinStores struct {
	t     *testing.T
	m     *vfs.Mem
	s     *Store[string]
	model *Store[string]
	rng   *rand.Rand
	now   time.Time
	keys  []string
}

func newTwins(t *testing.T, seed uint64) *twinStores {
	tw := &twinStores{t: t, m: vfs.NewMem(), rng: rand.New(rand.NewPCG(seed, 3)),
		now:  time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC),
		keys: []string{"", "a", "a/1", "a/2", "b", "config/limits", "z\xff", "rare"}}
	tw.model = New[string](WithClock(tw.clock))
	tw.reopen()
	return tw
}

func (tw *twinStores) clock() time.Time { return tw.now }

// reopen opens (or closes and opens again) the store on the directory.
// WithMemory of a huge budget: it seals at each Checkpoint and at Close.
func (tw *twinStores) reopen() {
	if tw.s != nil {
		require.NoError(tw.t, tw.s.Close())
	}
	s, err := Open("/db", StringCodec(), WithFS(tw.m), WithClock(tw.clock), WithSync(SyncNever), WithMemory(1<<40))
	require.NoError(tw.t, err)
	tw.s = s
}

// write makes n random writes to both stores; "rare" is written once in
// a while, so that its history spans many segments it has no entry in.
func (tw *twinStores) write(n int) {
	for range n {
		tw.now = tw.now.Add(time.Duration(tw.rng.IntN(2000)) * time.Millisecond)
		k := tw.keys[tw.rng.IntN(len(tw.keys)-1)]
		if tw.rng.IntN(50) == 0 {
			k = "rare"
		}
		v := fmt.Sprint(tw.rng.IntN(1000))
		op, ttl := tw.rng.IntN(10), time.Duration(1+tw.rng.IntN(3000))*time.Millisecond
		for _, s := range []*Store[string]{tw.s, tw.model} {
			var err error
			switch {
			case op < 6:
				_, err = s.Put(k, v)
			case op < 8:
				_, err = s.PutTTL(k, v, ttl)
			case op < 9:
				if _, err = s.Delete(k); errors.Is(err, ErrNotFound) {
					err = nil
				}
			default:
				s.PurgeExpired()
			}
			require.NoError(tw.t, err)
		}
	}
	require.Equal(tw.t, tw.model.Rev(), tw.s.Rev())
}

// check holds every read of the store to the model's: each key's
// history, its value at every revision from the floor on, and the
// changes from the floor in revision order; and VerifySealed re-hashes
// every sealed entry.
func (tw *twinStores) check(what string) {
	t, s, model := tw.t, tw.s, tw.model
	require.Equal(t, model.Floor(), s.Floor(), what)
	for _, k := range tw.keys {
		want, got := model.History(k), s.History(k)
		require.Equal(t, len(want), len(got), "%s: History(%q)", what, k)
		for i := range want {
			sameEntry(t, want[i], got[i], fmt.Sprintf("%s: History(%q)[%d]", what, k, i))
		}
		for r := s.Floor(); r <= s.Rev(); r++ {
			wv, wok, werr := model.GetAt(k, r)
			gv, gok, gerr := s.GetAt(k, r)
			require.Equal(t, werr, gerr, "%s: GetAt(%q, %d)", what, k, r)
			require.Equal(t, wok, gok, "%s: GetAt(%q, %d)", what, k, r)
			require.Equal(t, wv, gv, "%s: GetAt(%q, %d)", what, k, r)
		}
	}
	var want, got []Entry[string]
	for e, err := range model.Changes("", max(model.Floor(), 1), model.Rev()) {
		require.NoError(t, err, what)
		want = append(want, e)
	}
	for e, err := range s.Changes("", max(s.Floor(), 1), s.Rev()) {
		require.NoError(t, err, what)
		got = append(got, e)
	}
	require.Equal(t, len(want), len(got), "%s: Changes", what)
	for i := range want {
		sameEntry(t, want[i], got[i], fmt.Sprintf("%s: Changes[%d]", what, i))
	}
	// Reads by time: at each change's time, and just before it.
	for _, e := range want {
		for _, at := range []time.Time{e.Time, e.Time.Add(-time.Nanosecond)} {
			for _, k := range tw.keys {
				wv, wok, werr := model.GetAsOf(k, at)
				gv, gok, gerr := s.GetAsOf(k, at)
				require.Equal(t, werr == nil, gerr == nil, "%s: GetAsOf(%q, %v): %v, want %v", what, k, at, gerr, werr)
				require.Equal(t, errors.Is(werr, ErrCompacted), errors.Is(gerr, ErrCompacted), "%s: GetAsOf(%q, %v): %v, want %v", what, k, at, gerr, werr)
				require.Equal(t, wok, gok, "%s: GetAsOf(%q, %v)", what, k, at)
				require.Equal(t, wv, gv, "%s: GetAsOf(%q, %v)", what, k, at)
			}
		}
	}
	_, err := s.VerifySealed(nil)
	require.NoError(t, err, what)
}

// segments returns the manifest's segments and their total size.
func (tw *twinStores) segments() ([]segment.Ref, int64) {
	refs := tw.s.disk.manifest.Segments
	total := int64(0)
	for _, r := range refs {
		total += r.Size
	}
	return refs, total
}

// TestMerge seals a history a checkpoint at a time: merges keep the
// segments few, and every read agrees with the model's, across reopens.
// Then a compaction: the merges that follow drop what it hid, the bytes
// on disk fall, and the reads still agree; a View opened before the
// compaction keeps its answers through them.
func TestMerge(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			tw := newTwins(t, seed)
			defer func() { tw.s.Close() }()
			seals := 0
			for i := range 24 {
				tw.write(40)
				if i%5 == 4 {
					tw.reopen() // Close seals too
				} else {
					require.NoError(t, tw.s.Checkpoint())
				}
				seals++
			}
			refs, before := tw.segments()
			require.Less(t, len(refs), seals/2, "%d seals left %d segments: %v", seals, len(refs), refs)
			tw.check("after the seals and merges")

			// A view at a revision the compaction will pass.
			vr := tw.s.Rev() / 3
			view, err := tw.s.At(vr)
			require.NoError(t, err)
			mview, err := tw.model.At(vr)
			require.NoError(t, err)
			cut := tw.s.Rev() * 2 / 3
			require.NoError(t, tw.s.Compact(cut))
			require.NoError(t, tw.model.Compact(cut))
			for range 3 {
				tw.write(40)
				require.NoError(t, tw.s.Checkpoint())
			}
			for _, k := range tw.keys {
				wv, wok := mview.Get(k)
				gv, gok := view.Get(k)
				require.Equal(t, wok, gok, "the view's Get(%q) at %d", k, vr)
				require.Equal(t, wv, gv, "the view's Get(%q) at %d", k, vr)
			}
			view.Close()
			mview.Close()
			tw.s.Trim()
			tw.model.Trim()
			for range 4 {
				tw.write(10)
				require.NoError(t, tw.s.Checkpoint())
			}
			tw.check("after the compaction's merges")
			refs, after := tw.segments()
			require.Less(t, after, before, "the merges gave back what the compaction hid")
			// What the compaction hid is gone: below it the segments keep
			// at most each key's newest entry (the one visible at cut).
			below := 0
			tier := tw.s.disk.tier.Load()
			for k := range refs {
				for e, err := range tier.segs[k].All() {
					require.NoError(t, err)
					if e.Rev < int64(cut) {
						below++
					}
				}
			}
			require.LessOrEqual(t, below, len(tw.keys), "entries below the compaction in %v", refs)
			tw.reopen()
			tw.check("reopened")
		})
	}
}

// TestPickMerge checks the choice of the runs to merge.
func TestPickMerge(t *testing.T) {
	seg := func(first, last, size int64) segment.Ref { return segment.Ref{First: first, Last: last, Size: size} }
	foot := func(refs []segment.Ref, entries, keys int64) []segment.Footer {
		f := make([]segment.Footer, len(refs))
		for i, r := range refs {
			f[i] = segment.Footer{First: r.First, Last: r.Last, TimesFrom: r.First, Entries: entries, Keys: keys}
		}
		return f
	}
	small, big := int64(10<<10), int64(40<<20)
	for _, c := range []struct {
		name    string
		refs    []segment.Ref
		entries int64
		below   int64
		i, j    int
		ok      bool
	}{
		{"three small", []segment.Ref{seg(1, 10, small), seg(11, 20, small), seg(21, 30, small)}, 5, 0, 0, 0, false},
		{"four small", []segment.Ref{seg(1, 10, small), seg(11, 20, small), seg(21, 30, small), seg(31, 40, small)}, 5, 0, 0, 3, true},
		{"the newest four of one class", []segment.Ref{seg(1, 10, big), seg(11, 20, small), seg(21, 30, small), seg(31, 40, small), seg(41, 50, small)}, 5, 0, 1, 4, true},
		{"classes differ", []segment.Ref{seg(1, 10, small), seg(11, 20, 100*small), seg(21, 30, small), seg(31, 40, small)}, 5, 0, 0, 0, false},
		{"a gap", []segment.Ref{seg(1, 10, small), seg(11, 20, small), seg(22, 30, small), seg(31, 40, small)}, 5, 0, 0, 0, false},
		{"too big together", []segment.Ref{seg(1, 10, big), seg(11, 20, big), seg(21, 30, big), seg(31, 40, big)}, 5, 0, 0, 0, false},
		{"too many revisions", []segment.Ref{seg(1, 1<<21, small), seg(1<<21+1, 1<<22, small), seg(1<<22+1, 3<<21, small), seg(3<<21+1, 1<<23, small)}, 5, 0, 0, 0, false},
		{"below a compaction", []segment.Ref{seg(1, 10, big), seg(11, 20, big), seg(21, 30, big)}, 5, 21, 0, 1, true},
		{"one below, with more entries than keys", []segment.Ref{seg(1, 10, big), seg(11, 20, big)}, 6, 15, 0, 1, true},
		{"below, with the segment the floor falls in", []segment.Ref{seg(1, 10, big), seg(11, 20, big), seg(21, 30, big)}, 5, 18, 0, 1, true},
		{"below, and a floor early in the next", []segment.Ref{seg(1, 10, big), seg(11, 20, big), seg(21, 30, big)}, 5, 13, 0, 0, false},
		{"the floor in the first", []segment.Ref{seg(1, 10, big), seg(11, 20, big)}, 6, 9, 0, 0, false},
		{"one below, an entry a key", []segment.Ref{seg(1, 10, big), seg(11, 20, big)}, 5, 15, 0, 0, false},
	} {
		f := foot(c.refs, c.entries, 5)
		i, j, ok := pickMerge(c.refs, f, c.below)
		require.Equal(t, c.ok, ok, c.name)
		if ok {
			require.Equal(t, [2]int{c.i, c.j}, [2]int{i, j}, c.name)
		}
	}
}

// TestMergeSyncsTheLog: a merge that drops what a compaction hid makes
// the compaction durable first. Under SyncNever the compaction's records
// wait in the log; a merge straight after it, then a power cut that keeps
// nothing unsynced: the directory opens either with the compaction, or
// with the history the merge would have dropped, never without both.
func TestMergeSyncsTheLog(t *testing.T) {
	tw := newTwins(t, 4)
	for range 3 {
		tw.write(60)
		require.NoError(t, tw.s.Checkpoint())
	}
	cut := tw.s.Rev() * 2 / 3
	require.NoError(t, tw.s.Compact(cut)) // the model keeps everything
	tw.write(5)
	d := tw.s.disk
	before := len(d.manifest.Segments)
	d.ckptMu.Lock()
	err := tw.s.mergeSome(int64(tw.s.Floor())) // as if a snapshot held the compaction
	d.ckptMu.Unlock()
	require.NoError(t, err)
	require.Less(t, len(d.manifest.Segments), before, "a merge ran")

	s, err := Open("/db", StringCodec(), WithFS(tw.m.Crash(nil)), WithClock(tw.clock), WithMemory(1<<40))
	require.NoError(t, err)
	defer s.Close()
	for _, k := range tw.keys {
		for r := s.Floor(); r <= s.Rev(); r++ {
			wv, wok, _ := tw.model.GetAt(k, r)
			gv, gok, err := s.GetAt(k, r)
			require.NoError(t, err)
			require.Equal(t, wok, gok, "GetAt(%q, %d)", k, r)
			require.Equal(t, wv, gv, "GetAt(%q, %d)", k, r)
		}
	}
	tw.s.Close()
}

// TestOlderNeededScan: the digests olderNeeded keeps for sealed entries
// below a compaction are the same whether it reads them key by key or
// scans the segments, before the merges that follow the compaction and
// after them.
func TestOlderNeededScan(t *testing.T) {
	defer func(k int64) { scanBelowFloorPerKey = k }(scanBelowFloorPerKey)
	tw := newTwins(t, 5)
	defer func() { tw.s.Close() }()
	for range 6 {
		tw.write(80)
		require.NoError(t, tw.s.Checkpoint())
	}
	both := func(what string) {
		s := tw.s
		s.mu.Lock()
		keys := s.tree.Clone()
		s.mu.Unlock()
		base := int64(s.Rev())
		scanBelowFloorPerKey = -1 // by key
		byKey := s.olderNeeded(keys, base, s.floor.Load())
		scanBelowFloorPerKey = math.MaxInt32 // a scan
		byScan := s.olderNeeded(keys, base, s.floor.Load())
		require.Equal(t, byKey, byScan, what)
		require.Greater(t, len(byKey), 2, "%s: sealed entries below the floor need digests", what)
	}
	require.NoError(t, tw.s.Compact(tw.s.Rev()*3/4))
	both("before the merges")
	for range 4 {
		tw.write(10)
		require.NoError(t, tw.s.Checkpoint())
	}
	both("after the merges")
	tw.reopen()
	both("reopened")
}

// TestMergeOfDamagedSegment: a merge that meets a damaged segment leaves
// the store as it was, and the checkpoint that ran it succeeds; the
// damage is VerifySealed's to report.
func TestMergeOfDamagedSegment(t *testing.T) {
	tw := newTwins(t, 6)
	for range 3 {
		tw.write(60)
		require.NoError(t, tw.s.Checkpoint())
	}
	require.NoError(t, tw.s.Close())
	tw.s = nil
	var name string
	names, err := tw.m.List("/db")
	require.NoError(t, err)
	for _, n := range names {
		if strings.HasSuffix(n, ".seg") && (name == "" || n < name) {
			name = n
		}
	}
	b := tw.m.Bytes("/db/" + name)
	b[20] ^= 0xff // in the first block
	tw.m.WriteFile("/db/"+name, b)
	tw.reopen()
	defer func() { tw.s.Close() }()
	for range 3 {
		tw.write(20)
		require.NoError(t, tw.s.Checkpoint(), "a checkpoint whose merge meets the damage")
	}
	_, err = tw.s.VerifySealed(nil)
	require.ErrorIs(t, err, ErrCorrupt)
}
