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
