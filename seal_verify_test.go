package revkv

import (
	"fmt"
	"slices"
	"testing"

	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/vfs"
	"github.com/stretchr/testify/require"
)

// TestVerifyKept: each entry memory keeps that a segment holds too (each
// key's newest at a seal, which Open does not rehash) must be the
// segment's copy. verify finds one changed in memory where its walk in
// revision order comes to it, and one below a compaction's floor, which
// it reads through the segment's Get; with memory's copy put back, it
// passes again.
func TestVerifyKept(t *testing.T) {
	s := sealWorkload(t, vfs.NewMem(), 3, WithMemory(1<<40))
	defer s.Close()
	require.NoError(t, s.Checkpoint())
	_, err := s.VerifySealed(nil)
	require.NoError(t, err)
	last := s.tierOrNil().last()
	// forge changes the value of a kept put at or below last, in [lo, hi].
	forge := func(lo, hi int64) (undo func(), key string) {
		var e *revlog.Entry[string]
		s.mu.Lock()
		s.tree.Ascend(func(kl *keyLog[string]) bool {
			es := kl.log.Entries()
			for i := range es {
				if es[i].Rev >= lo && es[i].Rev <= min(hi, last) && es[i].Op == revlog.Put {
					e, key = &es[i], kl.key
					return false
				}
			}
			return true
		})
		s.mu.Unlock()
		require.NotNil(t, e, "a kept put in [%d, %d]", lo, hi)
		old := e.Value
		e.Value += "forged"
		return func() { e.Value = old }, key
	}
	check := func(what string, undo func(), key string) {
		t.Helper()
		_, err := s.VerifySealed(nil)
		require.ErrorIs(t, err, ErrCorrupt, what)
		require.ErrorContains(t, err, fmt.Sprintf("key %q", key), what)
		require.ErrorContains(t, err, "memory keeps", what)
		undo()
		_, err = s.VerifySealed(nil)
		require.NoError(t, err, what)
	}
	undo, key := forge(0, last)
	check("in the walk", undo, key)

	floor := last - 5
	require.NoError(t, s.Compact(Revision(floor)))
	undo, key = forge(0, floor-1)
	check("below the floor", undo, key)
}

// TestVerifyKeptCutMeanwhile: a kept entry below the floor that a
// compaction cuts between verify's collecting the kept entries and its
// check of them is passed over, and those after it still checked: the
// store is whole. (The check once stopped at the cut entry, and took
// the kept entries after it for ones the segment lacks.)
func TestVerifyKeptCutMeanwhile(t *testing.T) {
	s, err := Open("/db", StringCodec(), WithFS(vfs.NewMem()), WithSync(SyncNever), WithMemory(1<<40))
	require.NoError(t, err)
	defer s.Close()
	for _, kv := range [][2]string{{"a", "1"}, {"b", "1"}, {"c", "x"}, {"c", "x"}, {"c", "x"}, {"c", "x"}, {"c", "x"}} {
		_, err = s.Put(kv[0], kv[1])
		require.NoError(t, err)
	}
	require.NoError(t, s.Checkpoint()) // seals revisions 1 to 7
	for _, kv := range [][2]string{{"a", "2"}, {"c", "y"}} {
		_, err = s.Put(kv[0], kv[1])
		require.NoError(t, err)
	}
	tr := s.tierOrNil()
	kept := s.keptRefs(tr) // a@1, b@2, c@7
	require.Len(t, kept, 3)
	require.NoError(t, s.Compact(9)) // cuts a@1, keeps b@2
	old := s.heldOlder()
	for i := range tr.segs {
		_, err := s.verifySegment(tr, i, old, 16<<20, keptIn(kept, tr.refs[i]))
		require.NoError(t, err, "segment %s", tr.refs[i].Name())
	}
}

// TestVerifyKeptMissing: an entry memory keeps at a revision the walk
// passes without the segment holding it, or that is left when the walk
// ends, is ErrCorrupt; one the segment holds alike is not.
func TestVerifyKeptMissing(t *testing.T) {
	s := sealWorkload(t, vfs.NewMem(), 5, WithMemory(1<<40))
	defer s.Close()
	require.NoError(t, s.Checkpoint())
	tr := s.tierOrNil()
	kept := s.keptRefs(tr)
	require.NotEmpty(t, kept)
	k := kept[len(kept)-1]
	ref := tr.refs[tr.covering(k.rev)]
	check := func() *keptHeads[string] { return &keptHeads[string]{s: s.state, ref: ref, kept: []keptRef[string]{k}} }
	head, ok, err := check().head(nil, k)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, check().at(k.rev, head), "the segment's copy alike")
	require.ErrorIs(t, check().at(k.rev, append(head, 0)), ErrCorrupt, "not alike")
	require.ErrorIs(t, check().at(k.rev+1, nil), ErrCorrupt, "passed without it")
	require.ErrorIs(t, check().end(), ErrCorrupt, "left at the walk's end")
}

// TestVerifyBothWalks: a segment verified through Records and through
// Revisions (a share of memory too small for a few passes) rehashes the
// same entries, and both find an entry memory keeps changed.
func TestVerifyBothWalks(t *testing.T) {
	s := sealWorkload(t, vfs.NewMem(), 7, WithMemory(1<<40))
	defer s.Close()
	require.NoError(t, s.Checkpoint())
	tr := s.tierOrNil()
	old := s.heldOlder()
	kept := s.keptRefs(tr)
	walk := func(share int) (n int64, err error) {
		for i := range tr.segs {
			k, err := s.verifySegment(tr, i, old, share, keptIn(kept, tr.refs[i]))
			if n += k; err != nil {
				return n, err
			}
		}
		return n, nil
	}
	nRecords, err := walk(1 << 30)
	require.NoError(t, err)
	nWindows, err := walk(1)
	require.NoError(t, err)
	require.Positive(t, nRecords)
	require.Equal(t, nRecords, nWindows)

	k := kept[len(kept)/2]
	k.kl.mu.Lock()
	es := k.kl.log.Entries()
	i := slices.IndexFunc(es, func(e revlog.Entry[string]) bool { return e.Rev == k.rev })
	es[i].Expires, es[i].HasTTL = 1<<62, true
	k.kl.mu.Unlock()
	for _, share := range []int{1 << 30, 1} {
		_, err := walk(share)
		require.ErrorIs(t, err, ErrCorrupt, "share %d", share)
		require.ErrorContains(t, err, "memory keeps", "share %d", share)
	}
}
