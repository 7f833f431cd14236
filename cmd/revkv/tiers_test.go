package main

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// TestInfoShowsTiers: on a directory whose history was sealed twice, with
// a log since, info lists the segments with their revisions and bytes,
// where memory starts, and the log since the last seal; the other read
// commands still answer the sealed revisions. After Close, everything is
// sealed.
func TestInfoShowsTiers(t *testing.T) {
	dir := t.TempDir()
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithMemory(1<<40))
	require.NoError(t, err)
	for i := 1; i <= 30; i++ {
		_, err := s.Put(fmt.Sprint("k", i%4), []byte(fmt.Sprint(i)))
		require.NoError(t, err)
		if i == 10 || i == 20 {
			require.NoError(t, s.Checkpoint())
		}
	}
	// A copy of the directory while the store is open, as a crash would
	// leave it (every Put is synced): Close would seal the log's tail too.
	dir, open := t.TempDir(), dir
	require.NoError(t, os.CopyFS(dir, os.DirFS(open)))
	require.NoError(t, s.Close())

	var info jsonInfo
	require.NoError(t, json.Unmarshal([]byte(ok(t, "--dir", dir, "info", "--json")), &info))
	require.Len(t, info.Tiers.Segments, 2)
	require.Equal(t, jsonSegment{Name: "0000000000000001-000000000000000a.seg", First: 1, Last: 10, Bytes: info.Tiers.Segments[0].Bytes}, info.Tiers.Segments[0])
	require.Equal(t, revkv.Revision(11), info.Tiers.Segments[1].First)
	require.Equal(t, revkv.Revision(20), info.Tiers.Segments[1].Last)
	require.Positive(t, info.Tiers.Segments[0].Bytes)
	require.Equal(t, revkv.Revision(21), info.Tiers.MemoryFrom)
	require.Positive(t, info.Tiers.LogBytes)

	text := ok(t, "--dir", dir, "info")
	require.Contains(t, text, "sealed       revisions 1-20 in 2 segments")
	require.Contains(t, text, "in memory    revisions from 21")
	require.Contains(t, ok(t, "--dir", dir, "get", "k1", "--rev", "5"), "5", "a sealed revision's value")
	require.Contains(t, ok(t, "--dir", dir, "verify"), "ok", "the sealed entries re-hash")
	hist := ok(t, "--dir", dir, "history", "k2")
	for _, r := range []string{"2", "6", "10", "14", "18", "22", "26", "30"} {
		require.Regexp(t, "(?m)^"+r+" ", hist, "k2's revision %s, sealed or not:\n%s", r, hist)
	}

	text = ok(t, "--dir", open, "info")
	require.Contains(t, text, "sealed       revisions 1-30 in 3 segments", "Close seals the log's tail")
}
