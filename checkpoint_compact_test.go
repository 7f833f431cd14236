package revkv

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

// TestCompactDuringCheckpoint runs a Compact between a sealing
// checkpoint's pin and its snapshot, which then holds the floor it pinned
// with the log's compaction record after it. Opened after a power cut,
// the store must answer every digest the live store answers, and the
// same: a snapshot that kept only what the new floor needs left Open
// without the floor's digest to rehash from (ErrCompacted for a kept
// entry's predecessor), or without the annotations of the revisions it
// rehashes across (a wrong digest).
func TestCompactDuringCheckpoint(t *testing.T) {
	for seed := range 12 {
		// The compaction's floor in the sealed segment, or in the one
		// this checkpoint seals (before the seal: the segment lacks
		// what it dropped; or after it). From seed 6 on, two: both
		// before the seal, or (from 10) one before and one after, so
		// that Open replays a floor the snapshot is past; for odd seeds
		// a third after the snapshot.
		var before, after, later []int
		first := 20
		switch {
		case seed < 2 && seed%2 == 1:
			before = []int{30 + seed}
		case seed < 2:
			after = []int{30 + seed}
		case seed < 6 && seed%2 == 1:
			before = []int{66 + seed}
		case seed < 6:
			after = []int{66 + seed}
		case seed < 10:
			before = []int{44 + seed, 66 + seed}
		default:
			before, after = []int{44 + seed}, []int{66 + seed}
		}
		if seed >= 6 {
			first = 42 // above the first segment: the next seal starts below the floor
			if seed%2 == 1 {
				later = []int{80 + seed}
			}
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := vfs.NewMem()
			s, err := Open("/db", StringCodec(), WithFS(m), WithSync(SyncAlways), WithMemory(1<<40))
			require.NoError(t, err)
			keys := []string{"a", "b", "c", "d", "e"}
			write := func(n int) {
				for i := range n {
					_, err := s.Update(func(tx *Txn[string]) error {
						if err := tx.Put(keys[(i*7+seed)%len(keys)], fmt.Sprint(i)); err != nil {
							return err
						}
						if i%3 != seed%3 { // most revisions annotated: a rehash across one without them is wrong
							tx.Annotate("who", fmt.Sprint("user", i))
						}
						return nil
					})
					require.NoError(t, err)
				}
			}
			// One segment, 1..40, and a compaction: the store holds the
			// floor's predecessor's digest, to rehash from.
			write(40)
			require.NoError(t, s.Checkpoint())
			write(60)
			require.NoError(t, s.Compact(Revision(first)))

			// A checkpoint, with a Compact after its pin.
			d := s.disk
			d.ckptMu.Lock()
			p, err := s.pin(false)
			require.NoError(t, err)
			if p.cut != nil {
				require.NoError(t, p.cut.Rotate(p.h.Rev+1))
			}
			compact := func(revs []int) {
				for _, r := range revs {
					require.NoError(t, s.Compact(Revision(r)))
				}
			}
			compact(before)
			require.NoError(t, s.seal(p.h.Rev))
			compact(after)
			require.NoError(t, s.writeSnapshot(p))
			d.ckptMu.Unlock()
			compact(later)

			c, err := Open("/db", StringCodec(), WithFS(m.Crash(nil)), WithSync(SyncAlways), WithMemory(1<<40))
			require.NoError(t, err)
			defer c.Close()
			for r := Revision(0); r <= s.Rev(); r++ {
				want, wantErr := s.DigestAt(r)
				got, err := c.DigestAt(r)
				if wantErr != nil {
					continue
				}
				require.NoError(t, err, "DigestAt(%d) after Open, floor %d", r, c.Floor())
				require.Equal(t, want, got, "DigestAt(%d) after Open", r)
			}
			require.NoError(t, s.Close())
		})
	}
}

// TestCompactDuringCheckpointPowerCut: under SyncNever, a Compact between
// a checkpoint's pin and its snapshot logs its records after the pinned
// head, unsynced, while the snapshot's keys, read after it, lack what it
// dropped. After a power cut, the store must be one the writes made: the
// compaction with its floor, or none and all of the history. Without a
// sync of the log before the snapshot commits, the floor was the pinned
// one and the history below the compaction gone.
func TestCompactDuringCheckpointPowerCut(t *testing.T) {
	for _, seals := range []bool{false, true} {
		t.Run(fmt.Sprint("seals=", seals), func(t *testing.T) {
			m := vfs.NewMem()
			opts := []Option{WithFS(m), WithSync(SyncNever)}
			if seals {
				opts = append(opts, WithMemory(1<<40))
			}
			s, err := Open("/db", StringCodec(), opts...)
			require.NoError(t, err)
			defer s.Close()
			keys := []string{"a", "b", "c", "d", "e"}
			for i := range 100 {
				_, err := s.Put(keys[i%len(keys)], fmt.Sprint(i))
				require.NoError(t, err)
			}
			type answer struct {
				v     string
				found bool
				err   error
			}
			want := map[string][]answer{}
			for _, k := range keys {
				for r := range Revision(101) {
					v, found, err := s.GetAt(k, r)
					want[k] = append(want[k], answer{v, found, err})
				}
			}

			d := s.disk
			d.ckptMu.Lock()
			p, err := s.pin(false)
			require.NoError(t, err)
			if p.cut != nil {
				require.NoError(t, p.cut.Rotate(p.h.Rev+1))
			}
			if seals {
				require.NoError(t, s.seal(p.h.Rev))
			}
			require.NoError(t, s.Compact(80))
			require.NoError(t, s.writeSnapshot(p))
			d.ckptMu.Unlock()

			c, err := Open("/db", StringCodec(), append(opts, WithFS(m.Crash(nil)))...)
			require.NoError(t, err)
			defer c.Close()
			floor := c.Floor()
			require.Contains(t, []Revision{0, 80}, floor)
			for _, k := range keys {
				for r := floor; r <= 100; r++ {
					v, found, err := c.GetAt(k, r)
					require.Equal(t, want[k][r], answer{v, found, err}, "GetAt(%q, %d), floor %d", k, r, floor)
				}
			}
		})
	}
}

// TestVerifySealedHiddenAnnotated: a compaction hides a sealed entry
// whose neighbours are kept, so the store holds the digests on both sides
// of it, while a sweep lets its annotations go. VerifySealed must not
// rehash it without them and report a break that is not there.
func TestVerifySealedHiddenAnnotated(t *testing.T) {
	s, err := Open("/db", StringCodec(), WithFS(vfs.NewMem()), WithMemory(1<<40))
	require.NoError(t, err)
	defer s.Close()
	put := func(k, v, who string) {
		_, err := s.Update(func(tx *Txn[string]) error {
			if who != "" {
				tx.Annotate("who", who)
			}
			return tx.Put(k, v)
		})
		require.NoError(t, err)
	}
	for i := range 4 {
		put(fmt.Sprint("w", i), "0", "") // revisions 1-4
	}
	put("x", "1", "")    // 5: kept
	put("y", "1", "bob") // 6: hidden by y's revision 8, annotated
	put("z", "1", "")    // 7: kept
	put("y", "2", "")    // 8: kept
	put("w0", "1", "")   // 9
	put("w1", "1", "")   // 10
	require.NoError(t, s.Checkpoint())
	require.NoError(t, s.Compact(10))
	_, err = s.DigestAt(5) // the digests on both sides of 6 are held
	require.NoError(t, err)
	_, err = s.DigestAt(6)
	require.NoError(t, err)
	_, err = s.VerifySealed(nil)
	require.NoError(t, err)
}

// annotatedSealed opens a store that seals, with n annotated revisions
// over seven keys, sealed a hundred at a time.
func annotatedSealed(t *testing.T, n int) *Store[string] {
	s, err := Open("/db", StringCodec(), WithFS(vfs.NewMem()), WithMemory(1<<40))
	require.NoError(t, err)
	for i := range n {
		_, err := s.Update(func(tx *Txn[string]) error {
			tx.Annotate("who", fmt.Sprint("user", i))
			return tx.Put(fmt.Sprint("k", i%7), fmt.Sprint(i))
		})
		require.NoError(t, err)
		if i%100 == 99 {
			require.NoError(t, s.Checkpoint())
		}
	}
	return s
}

// duringCompactions calls read until a goroutine's compactions of s, every
// ten revisions from one that depends on round up to n-20, are done.
func duringCompactions(s *Store[string], n, round int, read func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f := 10 + round%10; f < n-20; f += 10 {
			if err := s.Compact(Revision(f)); err != nil {
				panic(err)
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		read()
	}
}

// TestDigestAtDuringCompact: DigestAt rehashes a sealed digest from the
// floor it read, across revisions whose annotations a compaction's sweep
// may let go meanwhile. Every digest it answers, while compactions run
// beside it, must be the one it answered before them.
func TestDigestAtDuringCompact(t *testing.T) {
	compactionRounds(t, 20, 5, func(s *Store[string], n, round int) {
		want := make([][32]byte, n+1)
		for r := range want {
			var err error
			want[r], err = s.DigestAt(Revision(r))
			require.NoError(t, err)
		}
		r := 0
		duringCompactions(s, n, round, func() {
			if got, err := s.DigestAt(Revision(r)); err == nil {
				require.Equal(t, want[r], got, "DigestAt(%d) during compactions, round %d", r, round)
			}
			r = (r + 37) % n
		})
	})
}

// TestTrimmerSeesHiddenSealed: the trimmer asks of each key it samples
// whether a pass trimmed it, and goes on sampling while many did. A key
// whose only entries past retention are sealed is trimmed (a compaction
// hides them), and must say so, though no count of them is read.
func TestTrimmerSeesHiddenSealed(t *testing.T) {
	m := vfs.NewMem()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := Open("/db", StringCodec(), WithFS(m), WithClock(clock), WithMemory(1<<40))
	require.NoError(t, err)
	for i := range 10 {
		now = now.Add(time.Second)
		_, err := s.Put("a", fmt.Sprint(i))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close()) // seals a's history: memory keeps its newest
	now = now.Add(time.Hour)
	s, err = Open("/db", StringCodec(), WithFS(m), WithClock(clock), WithMemory(1<<40),
		WithRetention(time.Minute), WithTrimInterval(time.Hour))
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Put("b", "1") // the revision retention compacts at
	require.NoError(t, err)
	kl := s.lookup("a")
	require.NotNil(t, kl)
	require.True(t, trimTarget[string]{s.state}.Trim(kl), "a's sealed entries past retention were hidden")
	require.False(t, trimTarget[string]{s.state}.Trim(kl), "and a second pass has nothing to do")
}

// TestVerifySealedDuringCompact: VerifySealed rehashes a segment from the
// floor it read; a compaction's sweep may let annotations go under it
// meanwhile. It must report no break in a store that has none.
func TestVerifySealedDuringCompact(t *testing.T) {
	compactionRounds(t, 10, 3, func(s *Store[string], n, round int) {
		duringCompactions(s, n, round, func() {
			_, err := s.VerifySealed(nil)
			require.NoError(t, err, "VerifySealed during compactions, round %d", round)
		})
	})
}

// compactionRounds runs check in rounds (short of them under -short),
// each on a new annotatedSealed store of 400 revisions, which it closes.
func compactionRounds(t *testing.T, rounds, short int, check func(s *Store[string], n, round int)) {
	if testing.Short() {
		rounds = short
	}
	const n = 400
	for round := range rounds {
		s := annotatedSealed(t, n)
		check(s, n, round)
		require.NoError(t, s.Close())
	}
}
