package revkv

import (
	"fmt"
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
