package revkv

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

// sealedHistory opens a store on a vfs.Mem that seals, writes key a at
// revisions 1-10 and b at 11, and seals them: all of it is read from the
// segment by Changes.
func sealedHistory(t *testing.T) *Store[string] {
	t.Helper()
	s, err := Open("/db", StringCodec(), WithFS(vfs.NewMem()), WithMemory(64<<10))
	require.NoError(t, err)
	for i := 1; i <= 10; i++ {
		_, err := s.Put("a", fmt.Sprint(i))
		require.NoError(t, err)
	}
	_, err = s.Put("b", "x")
	require.NoError(t, err)
	require.NoError(t, s.Checkpoint())
	require.Equal(t, int64(11), s.sealedLast())
	return s
}

// TestChangesReadsSealedInOrder: Changes over sealed history yields what
// the same history in memory does, under every prefix and range.
func TestChangesReadsSealedInOrder(t *testing.T) {
	s := sealedHistory(t)
	defer s.Close()
	for _, prefix := range []string{"", "a", "b", "c"} {
		for from := Revision(1); from <= 11; from++ {
			for to := from; to <= 11; to++ {
				var got []string
				for e, err := range s.Changes(prefix, from, to) {
					require.NoError(t, err)
					got = append(got, fmt.Sprint(e.Key, "@", e.Rev, "=", e.Value))
				}
				var want []string
				for r := from; r <= to; r++ {
					k, v := "a", fmt.Sprint(r)
					if r == 11 {
						k, v = "b", "x"
					}
					if k[:min(len(prefix), 1)] == prefix {
						want = append(want, fmt.Sprint(k, "@", r, "=", v))
					}
				}
				require.Equal(t, want, got, "Changes(%q, %d, %d)", prefix, from, to)
			}
		}
	}
}

// TestChangesSealedMeetsACompaction: a compaction while Changes reads the
// segments drops entries it has yet to yield: it says so, and where to
// restart, as the merge of the keys' logs does; it never yields them.
func TestChangesSealedMeetsACompaction(t *testing.T) {
	s := sealedHistory(t)
	defer s.Close()
	var revs []Revision
	var last error
	for e, err := range s.Changes("", 1, 11) {
		if err != nil {
			last = err
			break
		}
		revs = append(revs, e.Rev)
		if e.Rev == 1 {
			require.NoError(t, s.Compact(5)) // a's entries 1-4 go
		}
	}
	require.Equal(t, []Revision{1}, revs)
	require.True(t, errors.Is(last, ErrCompacted), "%v", last)
	var oe *OpError
	require.True(t, errors.As(last, &oe))
	require.Equal(t, Revision(5), oe.Rev, "restart from the floor")
}

// TestChangesSealedAfterAMerge: Changes checks its start against the
// floor, then loads the tier. A compaction and a merging checkpoint in
// between leave a tier whose merged segment lacks the entries the
// compaction hid: reading from the start it skips from there to the first
// entry kept. What it skips is reported ErrCompacted, never left out in
// silence.
func TestChangesSealedAfterAMerge(t *testing.T) {
	s, err := Open("/db", StringCodec(), WithFS(vfs.NewMem()), WithMemory(1<<40))
	require.NoError(t, err)
	defer s.Close()
	for range 4 {
		for i := range 50 {
			_, err := s.Put(fmt.Sprint("k", i%5), fmt.Sprint(i))
			require.NoError(t, err)
		}
		require.NoError(t, s.Checkpoint())
	}
	// Every key deleted, and one put at the compaction's revision: the
	// merged segment keeps nothing below it.
	for i := range 5 {
		_, err := s.Delete(fmt.Sprint("k", i))
		require.NoError(t, err)
	}
	at, err := s.Put("z", "last")
	require.NoError(t, err)
	require.NoError(t, s.Checkpoint())
	require.NoError(t, s.Compact(at))
	require.NoError(t, s.Checkpoint()) // merges the segments below it
	refs := s.tierOrNil().refs
	require.Equal(t, int64(1), refs[0].First)
	require.GreaterOrEqual(t, refs[0].Last, int64(at)-1, "the segments below the compaction merged")
	// As if Changes had checked from 10 before the compaction.
	var revs []int64
	var last error
	s.changesSealed("", 10, int64(s.Rev()), func(e Entry[string], err error) bool {
		if err != nil {
			last = err
			return false
		}
		revs = append(revs, int64(e.Rev))
		return true
	})
	require.True(t, errors.Is(last, ErrCompacted), "yielded %v, then %v", revs, last)
	require.Empty(t, revs, "nothing yielded: revision 10 is gone")

	// A range that ends in what the merge left out: no entry comes to
	// check the floor against.
	last = nil
	next, ok := s.changesSealed("", 10, 20, func(e Entry[string], err error) bool {
		if err != nil {
			last = err
			return false
		}
		revs = append(revs, int64(e.Rev))
		return true
	})
	require.True(t, errors.Is(last, ErrCompacted), "yielded %v, then %v (next %d, %v)", revs, last, next, ok)
	require.Empty(t, revs)
}
