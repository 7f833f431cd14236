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
