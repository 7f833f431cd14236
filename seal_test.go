package revkv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/segment"
	"github.com/revkv/revkv/vfs"
)

// sealWorkload writes a random history on a directory of m: puts, TTLs,
// deletes, expiries written by purges, several keys to an Update, times in
// three locations, some steps apart by nothing and some by a day.
func sealWorkload(t *testing.T, m *vfs.Mem, seed uint64, opts ...Option) *Store[string] {
	rng := rand.New(rand.NewPCG(seed, 9))
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		ny = time.FixedZone("EST", -5*3600)
	}
	locs := []*time.Location{time.UTC, time.FixedZone("X", 3*3600+1800), ny}
	now := time.Date(2026, 11, 26, 14, 2, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := Open("/db", StringCodec(), append(opts, WithFS(m), WithClock(clock), WithSync(SyncNever))...)
	require.NoError(t, err)
	keys := []string{"", "a", "a/1", "a/2", "b", "config/limits", "z\xff"}
	for range 600 {
		switch rng.IntN(40) {
		case 0:
			now = now.Add(24 * time.Hour)
		case 1, 2, 3:
		default:
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
		now = now.In(locs[rng.IntN(len(locs))])
		k := keys[rng.IntN(len(keys))]
		v := fmt.Sprint(rng.IntN(1000))
		switch op := rng.IntN(10); {
		case op < 4:
			_, err = s.Put(k, v)
		case op < 6:
			_, err = s.PutTTL(k, v, time.Duration(1+rng.IntN(5000))*time.Millisecond)
		case op < 7:
			if _, err = s.Delete(k); errors.Is(err, ErrNotFound) {
				err = nil
			}
		case op < 8:
			s.PurgeExpired()
		default:
			_, err = s.Update(func(tx *Txn[string]) error {
				for range 1 + rng.IntN(4) {
					tx.Put(keys[rng.IntN(len(keys))], v)
				}
				return nil
			})
		}
		require.NoError(t, err)
	}
	return s
}

// TestSealedAgrees seals a store's history into two segments and reads
// it back through the sealed tier: every entry, the entry visible at
// every revision, every revision's time and the revision at each time,
// and the chain's digests at the ends, are the store's own.
func TestSealedAgrees(t *testing.T) {
	for _, set := range []struct {
		name string
		opts []Option
	}{{"all", nil}, {"maxHistory3", []Option{WithMaxHistory(3)}}} {
		t.Run(set.name, func(t *testing.T) {
			m := vfs.NewMem()
			s := sealWorkload(t, m, 1, set.opts...)
			defer s.Close()
			// Under the history cap the order forgets the times below its
			// base (a count trim raised the floor): the segments seal every
			// retained entry, with times from the base on.
			h, lo, base := int64(s.Rev()), int64(1), s.order.Base()
			mid := max((lo+h)/2, base)
			var refs []segment.Ref
			for _, r := range [][2]int64{{lo, mid}, {mid + 1, h}} {
				ref, err := s.sealRange(r[0], r[1])
				require.NoError(t, err)
				refs = append(refs, ref)
			}
			man := segment.Manifest{Gen: 1, Segments: refs}
			require.NoError(t, segment.WriteManifest(m, "/db", &man))
			tier, err := openSealed[string](m, "/db", man, segment.NewCache(-1))
			require.NoError(t, err)
			defer tier.close()
			// A cache too small for any index: it keeps only the one last
			// loaded, and a point read in the other segment loads its index
			// again.
			tiny, err := openSealed[string](m, "/db", man, segment.NewCache(0))
			require.NoError(t, err)
			defer tiny.close()

			for _, ref := range refs {
				d, err := s.DigestAt(Revision(ref.Last))
				require.NoError(t, err)
				require.Equal(t, d, ref.Digest)
			}
			for _, k := range []string{"", "a", "a/1", "a/2", "b", "config/limits", "z\xff", "never"} {
				var hist []Entry[string]
				for _, e := range s.History(k) {
					if int64(e.Rev) >= lo {
						hist = append(hist, e)
					}
				}
				var got []Entry[string]
				for e, err := range s.sealedHistory(tier, k, 1, h) {
					require.NoError(t, err)
					got = append(got, e)
				}
				require.Equal(t, len(hist), len(got), "History(%q)", k)
				for i := range hist {
					sameEntry(t, hist[i], got[i], fmt.Sprintf("History(%q)[%d]", k, i))
				}
				for r := lo; r <= h; r++ {
					want, wantOK := Entry[string]{}, false
					for _, e := range hist {
						if int64(e.Rev) <= r {
							want, wantOK = e, true
						}
					}
					reads := m.Reads()
					e, ok, err := s.sealedAt(tier, k, r)
					require.NoError(t, err)
					require.Equal(t, wantOK, ok, "sealedAt(%q, %d)", k, r)
					if ok {
						sameEntry(t, want, e, fmt.Sprintf("sealedAt(%q, %d)", k, r))
						if tier.covering(int64(e.Rev)) == tier.covering(r) {
							require.Equal(t, int64(1), m.Reads()-reads, "sealedAt(%q, %d) in the segment covering it reads one block", k, r)
						}
					}
					reads = m.Reads()
					e2, ok2, err := s.sealedAt(tiny, k, r)
					require.NoError(t, err)
					require.Equal(t, ok, ok2)
					if ok {
						sameEntry(t, e, e2, fmt.Sprintf("sealedAt(%q, %d) with the index let go", k, r))
						if tier.covering(int64(e.Rev)) == tier.covering(r) {
							require.LessOrEqual(t, m.Reads()-reads, int64(2), "sealedAt(%q, %d) reads at most the index and one block", k, r)
						}
					}
				}
			}
			for r := base; r <= h; r++ {
				want, _ := s.order.TimeOf(r)
				got, ok, err := tier.timeOf(r)
				require.NoError(t, err)
				require.True(t, ok)
				require.True(t, want.Equal(got), "timeOf(%d)", r)
				wantRev, _ := s.order.RevAt(want)
				gotRev, ok, err := tier.revAt(want)
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, wantRev, gotRev, "revAt(time of %d)", r)
			}
		})
	}
}

func sameEntry(t *testing.T, want, got Entry[string], what string) {
	t.Helper()
	require.Equal(t, want.Key, got.Key, what)
	require.Equal(t, want.Op, got.Op, what)
	require.Equal(t, want.Rev, got.Rev, what)
	require.Equal(t, want.Value, got.Value, what)
	require.True(t, want.Time.Equal(got.Time), "%s: time %v, want %v", what, got.Time, want.Time)
	require.Equal(t, want.Time.String(), got.Time.String(), "%s: the time's location", what)
	require.True(t, want.ExpiresAt.Equal(got.ExpiresAt), "%s: expiry %v, want %v", what, got.ExpiresAt, want.ExpiresAt)
	require.Equal(t, want.ExpiresAt.String(), got.ExpiresAt.String(), "%s: the expiry's location", what)
}

// TestSealedDamage damages a sealed segment and its manifest: opening or
// reading the tier is ErrCorrupt naming the file, never a wrong answer.
func TestSealedDamage(t *testing.T) {
	m := vfs.NewMem()
	s := sealWorkload(t, m, 2)
	defer s.Close()
	h := int64(s.Rev())
	ref, err := s.sealRange(1, h)
	require.NoError(t, err)
	man := segment.Manifest{Gen: 1, Segments: []segment.Ref{ref}}
	require.NoError(t, segment.WriteManifest(m, "/db", &man))
	name := filepath.Join("/db", ref.Name())
	good := m.Bytes(name)
	readAll := func() error {
		tier, err := openSealed[string](m, "/db", man, segment.NewCache(0))
		if err != nil {
			return err
		}
		defer tier.close()
		for _, k := range []string{"", "a", "a/1", "a/2", "b", "config/limits", "z\xff"} {
			hist := s.History(k)
			i := 0
			for e, err := range s.sealedHistory(tier, k, 1, h) {
				if err != nil {
					return err
				}
				if i >= len(hist) || hist[i].Value != e.Value || hist[i].Rev != e.Rev || !hist[i].Time.Equal(e.Time) {
					return fmt.Errorf("a wrong entry %+v", e)
				}
				i++
			}
		}
		for r := int64(1); r <= h; r++ {
			want, _ := s.order.TimeOf(r)
			got, _, err := tier.timeOf(r)
			if err != nil {
				return err
			}
			if !want.Equal(got) {
				return fmt.Errorf("a wrong time at %d", r)
			}
		}
		return nil
	}
	require.NoError(t, readAll())
	rng := rand.New(rand.NewPCG(5, 5))
	for range 300 {
		bad := append([]byte(nil), good...)
		bad[rng.IntN(len(bad))] ^= byte(1 << rng.IntN(8))
		m.WriteFile(name, bad)
		err := readAll()
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), ref.Name())
	}
	m.WriteFile(name, good[:len(good)-1])
	require.ErrorIs(t, readAll(), ErrCorrupt, "a cut segment")
	require.NoError(t, m.Remove(name))
	require.Error(t, readAll(), "a missing segment")
}

// TestVerifySealed re-hashes a sealed store's entries (three segments,
// side by side, reported in order), then forges the middle one: a value changed and the segment rewritten whole, with good
// checksums, its footer and the manifest as before. Open cannot tell (it
// reads footers); VerifySealed names the revisions between the last digest
// that held and the first that broke, the forged one among them.
func TestVerifySealed(t *testing.T) {
	m := vfs.NewMem()
	s := sealWorkload(t, m, 3, WithMemory(1<<40))
	require.NoError(t, s.Checkpoint())
	for i := range 2 { // two more segments after it
		for j := range 50 {
			_, err := s.Put(fmt.Sprint("more", j%7), fmt.Sprint(i, j))
			require.NoError(t, err)
		}
		require.NoError(t, s.Checkpoint())
	}
	var progress []Revision
	n, err := s.VerifySealed(func(r Revision) { progress = append(progress, r) })
	require.NoError(t, err)
	require.Positive(t, n)
	require.NoError(t, s.Close())

	man, ok, err := segment.ReadManifest(m, "/db")
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, len(man.Segments), 1, "segments are verified side by side: more than one")
	var lasts []Revision
	for _, ref := range man.Segments {
		lasts = append(lasts, Revision(ref.Last))
	}
	require.Equal(t, lasts, progress, "progress reports each segment, in order")
	ref := man.Segments[1] // the one in the middle: the error names it, not the one after
	name := filepath.Join("/db", ref.Name())
	f, err := m.OpenReaderAt(name)
	require.NoError(t, err)
	r, err := segment.Open(f, f.Size())
	require.NoError(t, err)
	var buf bytes.Buffer
	w := segment.NewWriter(&buf, ref.First, ref.Last, 0)
	forged := int64(0)
	for e, err := range r.All() {
		require.NoError(t, err)
		if e.Op == segment.Put && forged == 0 {
			e.Value, forged = []byte("forged"), e.Rev
		}
		require.NoError(t, w.Add(&e))
	}
	ft := r.Footer()
	require.NoError(t, w.TimesFrom(ft.TimesFrom))
	for rev := ft.TimesFrom; rev <= ft.Last; rev++ {
		sec, nsec, err := r.TimeOf(rev)
		require.NoError(t, err)
		require.NoError(t, w.AddTime(sec, nsec))
	}
	meta, err := r.Meta()
	require.NoError(t, err)
	size, err := w.Finish(ft.Prev, ft.Digest, meta)
	require.NoError(t, err)
	m.WriteFile(name, buf.Bytes())
	man.Segments[1].Size = size
	require.NoError(t, segment.WriteManifest(m, "/db", &man))

	s, err = Open("/db", StringCodec(), WithFS(m))
	require.NoError(t, err, "Open reads footers, not entries")
	defer s.Close()
	_, err = s.VerifySealed(nil)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, ref.Name())
	var lo, hi int64
	_, serr := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "revisions "):], "revisions %d to %d: the hash chain breaks", &lo, &hi)
	require.NoError(t, serr, "%v", err)
	require.True(t, lo <= forged && forged <= hi, "%v names the revisions from the last digest held to the next, the forged %d among them", err, forged)
	require.LessOrEqual(t, hi-lo, int64(markEvery), "no further apart than two marks")
}

// TestSealedExportImport exports a sealed store compacted below its seal,
// imports the export and exports again: the same bytes, and the same
// history for every key, sealed entries included.
func TestSealedExportImport(t *testing.T) {
	for _, window := range []int{1, 5, 1 << 20} {
		t.Run(fmt.Sprint("window=", window), func(t *testing.T) {
			defer SetImportWindow(window)()
			checkSealedExportImport(t)
		})
	}
}

func checkSealedExportImport(t *testing.T) {
	keys := []string{"", "a", "a/1", "a/2", "b", "config/limits", "z\xff", "late0", "late1", "late2"}
	// export runs the workload, seals it, writes on, compacts below the
	// seal (sealed entries on both sides of the floor) and exports.
	export := func(opts ...Option) (string, map[string][]Entry[string]) {
		s := sealWorkload(t, vfs.NewMem(), 4, opts...)
		require.NoError(t, s.Checkpoint())
		sealed := s.Rev()
		for i := range 40 {
			_, err := s.Put(fmt.Sprint("late", i%3), fmt.Sprint(i))
			require.NoError(t, err)
		}
		require.NoError(t, s.Compact(sealed/2))
		var out bytes.Buffer
		require.NoError(t, s.Export(&out, ""))
		hist := map[string][]Entry[string]{}
		for _, k := range keys {
			hist[k] = s.History(k)
		}
		require.NoError(t, s.Close())
		return out.String(), hist
	}
	first, hist := export(WithMemory(1 << 40))
	plain, _ := export()
	require.Equal(t, plain, first, "a sealed store exports what the same store unsealed does")

	m2 := vfs.NewMem()
	_, err := Import("/copy", StringCodec(), strings.NewReader(first), WithFS(m2))
	require.NoError(t, err)
	c, err := Open("/copy", StringCodec(), WithFS(m2))
	require.NoError(t, err)
	defer c.Close()
	var second bytes.Buffer
	require.NoError(t, c.Export(&second, ""))
	require.Equal(t, first, second.String())
	for _, k := range keys {
		got := c.History(k)
		require.Equal(t, len(hist[k]), len(got), "History(%q), sealed entries included", k)
		for i := range got {
			sameEntry(t, hist[k][i], got[i], fmt.Sprintf("History(%q)[%d]", k, i))
		}
	}
}

// TestCloseSeals checks that Close leaves a store that seals nothing to
// replay: the next Open reads the snapshot and the manifest, and a Close
// with nothing written since writes no checkpoint again.
func TestCloseSeals(t *testing.T) {
	m := vfs.NewMem()
	s := sealWorkload(t, m, 3, WithMemory(64<<10))
	h := s.Rev()
	want := s.History("a")
	require.NoError(t, s.Close())

	s, err := Open("/db", StringCodec(), WithFS(m), WithMemory(64<<10))
	require.NoError(t, err)
	require.Equal(t, int64(0), s.disk.logged.Load(), "Open replayed log that Close left")
	require.Equal(t, h, s.Rev())
	n := len(s.disk.manifest.Segments)
	require.Equal(t, int64(h), s.disk.manifest.Segments[n-1].Last, "the last seal ends at the head")
	require.Equal(t, want, s.History("a"))
	// The snapshot holds the digests the kept entries need, and the
	// head's: none per sealed revision.
	require.Equal(t, int64(h), s.disk.chain.Base(), "the chain proper starts at the head")
	require.LessOrEqual(t, len(s.disk.chain.Old()), 1, "the digests of the newest entries, which the segments hold too, are rehashed when asked for")
	gen := s.disk.manifest.Gen
	require.NoError(t, s.Close())

	s, err = Open("/db", StringCodec(), WithFS(m), WithMemory(64<<10))
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, gen, s.disk.manifest.Gen, "a Close with nothing logged sealed again")
	require.Equal(t, want, s.History("a"))
}

// TestGetAtReadsTwoBlocks: a GetAt at a random old revision of a store
// whose history spans memory and many segments reads at most two blocks
// from the disk, the segment's index and the block that answers, or one
// where the index is loaded (contract §12.4), and answers as the same
// history unsealed does. The keys are written round-robin, as in W(N), so
// every segment holds every key. With a small bound on the loaded indexes,
// they do not all fit, and the reads never pass it.
func TestGetAtReadsTwoBlocks(t *testing.T) {
	for _, memory := range []int64{DefaultMemory, 512} {
		t.Run(fmt.Sprint("indexes=", memory), func(t *testing.T) { getAtReadsTwoBlocks(t, memory) })
	}
}

func getAtReadsTwoBlocks(t *testing.T, memory int64) {
	const keys, revs = 50, 6000
	m := vfs.NewMem()
	opts := []Option{WithFS(m), WithSync(SyncNever), withIndexBudget(memory)}
	s, err := Open("/db", StringCodec(), opts...)
	require.NoError(t, err)
	for i := 0; i < revs; i += 100 {
		if i%500 == 0 && i > 0 {
			require.NoError(t, s.Checkpoint()) // a seal
		}
		_, err := s.Update(func(tx *Txn[string]) error {
			for j := i; j < i+100; j++ {
				tx.Put(fmt.Sprintf("k/%03d", j%keys), fmt.Sprint(j+1))
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	s, err = Open("/db", StringCodec(), opts...)
	require.NoError(t, err)
	defer s.Close()
	tier := s.tierOrNil()
	require.Greater(t, len(tier.segs), 2, "history in several segments (merges keep them few)")
	var all int64 // the bytes of every index
	for _, seg := range tier.segs {
		require.NoError(t, seg.Load())
		all += seg.IndexBytes()
	}
	if memory < DefaultMemory {
		require.Less(t, memory, all, "the indexes do not all fit the bound")
	}
	budget := s.disk.ixCache
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		k := rng.IntN(keys)
		rev := 1 + rng.Int64N(revs)
		reads := m.Reads()
		v, ok, err := s.GetAt(fmt.Sprintf("k/%03d", k), Revision(rev))
		require.NoError(t, err)
		// A read probes the segment covering rev and, when the key's
		// newest entry at rev is older, the one before: a block each,
		// and each one's index where the bound let it go.
		maxReads := int64(2)
		if memory < all {
			maxReads = 4
		}
		require.LessOrEqual(t, m.Reads()-reads, maxReads, "GetAt(k/%03d, %d)", k, rev)
		// The value is the revision of the key's last write at or below rev.
		last := (rev-1)/keys*keys + int64(k) + 1
		if last > rev {
			last -= keys
		}
		require.Equal(t, last >= 1, ok, "GetAt(k/%03d, %d)", k, rev)
		if ok {
			require.Equal(t, fmt.Sprint(last), v, "GetAt(k/%03d, %d)", k, rev)
		}
		held, n := budget.Held()
		require.True(t, held <= memory || n == 1, "%d bytes of indexes held in %d, bound %d", held, n, memory)
	}
	if held, _ := budget.Held(); memory < all {
		require.Less(t, held, all, "the bound let some go")
	}
}

// TestAnnotationsOfSealedRevisions: after Close seals every revision, an
// Open reads no history to find whose the annotated revisions are; the
// first Annotations call of each commit looks them up, and every revision
// answers what was annotated, before and after a compaction below some.
func TestAnnotationsOfSealedRevisions(t *testing.T) {
	m := vfs.NewMem()
	s, err := Open("/db", StringCodec(), WithFS(m))
	require.NoError(t, err)
	want := map[Revision]map[string]string{}
	for i := range 300 {
		rev, err := s.Update(func(tx *Txn[string]) error {
			if i%3 == 0 {
				tx.Annotate("who", fmt.Sprint("user", i))
			}
			if err := tx.Put(fmt.Sprint("k", i%17), "a"); err != nil {
				return err
			}
			return tx.Put(fmt.Sprint("j", i%5), "b")
		})
		require.NoError(t, err)
		if i%3 == 0 {
			want[rev-1], want[rev] = map[string]string{"who": fmt.Sprint("user", i)}, map[string]string{"who": fmt.Sprint("user", i)}
		}
	}
	require.NoError(t, s.Close())

	before := m.Reads()
	s, err = Open("/db", StringCodec(), WithFS(m))
	require.NoError(t, err)
	defer s.Close()
	segs := int64(len(s.disk.manifest.Segments))
	require.LessOrEqual(t, m.Reads()-before, 2*segs, "an Open reads the %d segments' footers, and no sealed history for the annotated revisions", segs)
	check := func() {
		for r := Revision(1); r <= s.Rev(); r++ {
			got, err := s.Annotations(r)
			require.NoError(t, err, "revision %d", r)
			require.Equal(t, want[r], got, "revision %d", r)
		}
	}
	// A segment that cannot be read is the call's error, and loses
	// nothing: the span stays, and the next checkpoint keeps it.
	m.SetFault(func(op vfs.Op, _ string) error {
		if op == vfs.OpReadAt {
			return errors.New("injected")
		}
		return nil
	})
	_, err = s.Annotations(1)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrCompacted)
	m.SetFault(nil)
	_, err = s.Put("after", "x")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s, err = Open("/db", StringCodec(), WithFS(m))
	require.NoError(t, err)
	defer s.Close()
	// The first lookup inside an Update's fn: it takes no write lock.
	_, err = s.Update(func(tx *Txn[string]) error {
		got, err := s.Annotations(7)
		require.Equal(t, want[7], got)
		return err
	})
	require.NoError(t, err)
	check()
	check() // looked up once
	// A compaction hides the sealed entries below it that are not visible
	// at it: their revisions' annotations are gone, the rest stay.
	require.NoError(t, s.Compact(400))
	gone := 0
	for r := Revision(1); r <= s.Rev(); r++ {
		got, err := s.Annotations(r)
		if err != nil {
			require.ErrorIs(t, err, ErrCompacted, "revision %d", r)
			require.Less(t, r, Revision(400))
			gone++
			continue
		}
		require.Equal(t, want[r], got, "revision %d", r)
	}
	require.Positive(t, gone, "the compaction hid annotated revisions")
}
