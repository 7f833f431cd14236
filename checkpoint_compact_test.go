package revkv

import (
	"fmt"
	"testing"

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
