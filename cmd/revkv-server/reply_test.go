package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReplyEntriesBound: REVKV.CHANGES and REVKV.DIFF refuse to gather
// more entries than revkv-max-reply-entries for one reply, with an error
// that says so, and the connection goes on; 0 lifts the bound.
func TestReplyEntriesBound(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	require.Equal(t, []any{"revkv-max-reply-entries", "1000000"}, do(c, "config", "get", "revkv-max-reply-entries"))
	for i := range 10 {
		do(c, "set", fmt.Sprint("k", i), "v")
	}
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 5))
	tooMany := "error: ERR REVKV.CHANGES would reply more than 5 entries (revkv-max-reply-entries): ask for a narrower range"
	require.Equal(t, tooMany, do(c, "revkv.changes", 1, 10))
	require.Len(t, do(c, "revkv.changes", 1, 5), 5)
	require.Equal(t, strings.Replace(tooMany, "CHANGES", "DIFF", 1), do(c, "revkv.diff", 0, 10))
	require.Len(t, do(c, "revkv.diff", 0, 5), 5)
	require.Equal(t, "PONG", do(c, "ping"), "the connection goes on")
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 0))
	require.Len(t, do(c, "revkv.changes", 1, 10), 10)
	require.Len(t, do(c, "revkv.diff", 0, 10), 10)
}

// TestHistoryReplyBound: REVKV.HISTORY streams a key's history and holds
// at most revkv-max-reply-entries of it: without COUNT, a longer history
// is the error; with COUNT n (n up to the bound) it keeps the newest n as
// it goes, whatever the history's length, but for a collection, whose
// elements' history needs all of its own.
func TestHistoryReplyBound(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	for i := range 12 {
		do(c, "set", "k", i)
		do(c, "hset", "h", fmt.Sprint("f", i), i)
	}
	require.Len(t, do(c, "revkv.history", "k"), 12)
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 5))
	tooMany := "error: ERR REVKV.HISTORY would reply more than 5 entries (revkv-max-reply-entries): ask for a narrower range"
	require.Equal(t, tooMany, do(c, "revkv.history", "k"))
	for _, n := range []int{0, 1, 3, 5} {
		h := do(c, "revkv.history", "k", "count", n).([]any)
		require.Len(t, h, n)
		for j, e := range h {
			require.Equal(t, fmt.Sprint(12-n+j), e.([]any)[5], "COUNT %d: the newest, oldest first", n)
		}
	}
	require.Equal(t, tooMany, do(c, "revkv.history", "k", "count", 6), "a reply past the bound")
	require.Equal(t, tooMany, do(c, "revkv.history", "h", "count", 2), "a collection needs all of its own history")
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 0))
	require.Len(t, do(c, "revkv.history", "h", "count", 2), 2, "with the bound lifted")
	require.Len(t, do(c, "revkv.history", "k"), 12)
	require.Equal(t, "PONG", do(c, "ping"))
}

// TestCollectionReplyBound: a collection's history and diff, which add
// its elements' rows to the key's own, stop at revkv-max-reply-entries
// too, where the key's own entries alone are within it.
func TestCollectionReplyBound(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	args := []any{"hset", "h"}
	for i := range 10 {
		args = append(args, fmt.Sprint("f", i), i)
	}
	require.Equal(t, int64(10), do(c, args...))
	rev := do(c, "revkv.rev")
	require.Len(t, do(c, "revkv.history", "h"), 11, "the key's entry and its ten elements'")
	require.Len(t, do(c, "revkv.diff", 0, rev, "h"), 11)
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 5))
	tooMany := "error: ERR REVKV.HISTORY would reply more than 5 entries (revkv-max-reply-entries): ask for a narrower range"
	require.Equal(t, tooMany, do(c, "revkv.history", "h"))
	require.Equal(t, strings.Replace(tooMany, "HISTORY", "DIFF", 1), do(c, "revkv.diff", 0, rev, "h"))
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 11))
	require.Len(t, do(c, "revkv.history", "h"), 11, "a reply of exactly the bound")
	require.Len(t, do(c, "revkv.diff", 0, rev, "h"), 11)
}

// TestDiffReplyBoundRows: DIFF counts the rows it replies, the plain ones
// after a collection's element rows included, and not the element keys a
// diff without a prefix also meets (which show as element rows): a reply
// of exactly the bound passes, one more is the error. A negative bound is
// refused.
func TestDiffReplyBoundRows(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "hset", "k1", "a", 1, "b", 2, "c", 3)
	do(c, "set", "k2", 1)
	do(c, "set", "k3", 1)
	rev := do(c, "revkv.rev")
	require.Len(t, do(c, "revkv.diff", 0, rev, "k"), 6, "k1, its three fields, k2, k3")
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 5))
	require.Equal(t, "error: ERR REVKV.DIFF would reply more than 5 entries (revkv-max-reply-entries): ask for a narrower range", do(c, "revkv.diff", 0, rev, "k"))
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 6))
	require.Len(t, do(c, "revkv.diff", 0, rev, "k"), 6)

	_, addr = startServer(t, config{})
	c = newClient(t, addr)
	do(c, "zadd", "z", 1, "a", 2, "b", 3, "c")
	rev = do(c, "revkv.rev")
	require.Len(t, do(c, "revkv.diff", 0, rev), 4, "z and its three members")
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 4))
	require.Len(t, do(c, "revkv.diff", 0, rev), 4, "the members' own keys and score index are not rows")
	require.Contains(t, do(c, "config", "set", "revkv-max-reply-entries", -1), "error: ERR CONFIG SET failed")
	require.Equal(t, []any{"revkv-max-reply-entries", "4"}, do(c, "config", "get", "revkv-max-reply-entries"))
}

// TestHistoryCollectionAfterLongHistory: a key that was a plain value for
// longer than the bound and then a collection cannot show its history
// with COUNT (the collection needs all of it), and the error says why.
func TestHistoryCollectionAfterLongHistory(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	for i := range 10 {
		do(c, "set", "t", i)
	}
	do(c, "del", "t")
	do(c, "hset", "t", "f", 1)
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 3))
	require.Equal(t, "error: ERR REVKV.HISTORY of a collection shows all of the key's own history, more than 3 entries (revkv-max-reply-entries): raise the bound", do(c, "revkv.history", "t", "count", 1))
	require.Equal(t, "OK", do(c, "config", "set", "revkv-max-reply-entries", 0))
	require.Len(t, do(c, "revkv.history", "t", "count", 1), 1)
}

// TestHistoryCutWhileRead: REVKV.HISTORY streams a key's history a few
// hundred entries at a time, so a compaction between two reads can cut
// the history it is in. It then reads the history again: the reply is the
// history kept after the cut, whole, never the entries before the cut
// joined to those after it. Cut three times in a row, it says so.
func TestHistoryCutWhileRead(t *testing.T) {
	for _, cuts := range []int{1, 2, 3} {
		t.Run(fmt.Sprint("cuts=", cuts), func(t *testing.T) {
			s, addr := startServer(t, config{})
			c := newClient(t, addr)
			for i := range 2000 { // far more than one of HistoryRange's reads
				_, err := s.store.Put("k", []byte(fmt.Sprint(i)))
				require.NoError(t, err)
			}
			made := 0
			hook := func(seen int) { // each reading's first entry: cut what it has not read yet
				if seen != 1 || made == cuts {
					return
				}
				made++
				for i := range 1000 {
					_, err := s.store.Put("k", []byte(fmt.Sprint("more", i)))
					require.NoError(t, err)
				}
				require.NoError(t, s.store.Compact(s.store.Rev()-500))
			}
			s.historyHook.Store(&hook)
			got := do(c, "revkv.history", "k")
			s.historyHook.Store(nil)
			require.Equal(t, cuts, made)
			if cuts == 3 {
				require.Equal(t, "error: ERR REVKV.HISTORY: the key's history was cut while it was read, three times: try again", got)
				return
			}
			h := got.([]any)
			require.Len(t, h, 501, "the history kept since the last cut")
			for i := 1; i < len(h); i++ {
				require.Equal(t, h[i-1].([]any)[2].(int64)+1, h[i].([]any)[2], "no hole at entry %d", i)
			}
			require.Equal(t, int64(s.store.Rev()), h[len(h)-1].([]any)[2])
			require.Equal(t, got, do(c, "revkv.history", "k"), "the same as a reading with no cut")
		})
	}
}
