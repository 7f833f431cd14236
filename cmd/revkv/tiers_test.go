package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/segment"
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

// TestSealedFixtureAgrees: every read command answers the same on the
// fixture's history written with the default memory bound (sealed, as a
// store's directory is after Close) as on the unsealed one.
func TestSealedFixtureAgrees(t *testing.T) {
	plain, sealed := fixture(t), sealedFixture(t)
	var info jsonInfo
	require.NoError(t, json.Unmarshal([]byte(ok(t, "--dir", sealed, "info", "--json")), &info))
	require.Len(t, info.Tiers.Segments, 2, "the checkpoint at 9 and Close seal")
	for _, args := range [][]string{
		{"get", "config/a"}, {"get", "config/a", "--rev", "4"}, {"get", "config/a", "--at", "2024-03-01T12:00:03Z", "--json"},
		{"history", "config/a", "--json"}, {"history", "session/x"}, {"history", "bin/blob"},
		{"scan", "--json"}, {"scan", "config/", "--rev", "6"}, {"scan", "--at", "2024-03-01T12:00:16Z"},
		{"diff", "3", "12", "--json"}, {"diff", "3", "9"}, {"diff", "6", "12", "config/"},
		{"changes", "--json"}, {"changes", "config/", "--from", "5", "--to", "11"},
		{"verify"}, {"verify", "--rev", "8", "--digest", digestsOf(t, plain)[8]},
		{"export"}, {"export", "session/"},
	} {
		require.Equal(t, ok(t, append([]string{"--dir", plain}, args...)...), ok(t, append([]string{"--dir", sealed}, args...)...), "%q", args)
	}
}

// TestWriteCommandsKeepTiers: checkpoint and compact leave an unsealed
// directory unsealed (its owner keeps history in the log and snapshots),
// and a sealed one sealed.
func TestWriteCommandsKeepTiers(t *testing.T) {
	plain, sealed := fixture(t), sealedFixture(t)
	for _, args := range [][]string{{"compact", "4"}, {"checkpoint"}} {
		ok(t, append([]string{"--dir", plain}, args...)...)
		ok(t, append([]string{"--dir", sealed}, args...)...)
	}
	_, err := os.Stat(filepath.Join(plain, segment.ManifestName))
	require.ErrorIs(t, err, os.ErrNotExist, "the tool sealed an unsealed directory")
	var info jsonInfo
	require.NoError(t, json.Unmarshal([]byte(ok(t, "--dir", sealed, "info", "--json")), &info))
	require.NotEmpty(t, info.Tiers.Segments)
	require.Equal(t, ok(t, "--dir", plain, "export"), ok(t, "--dir", sealed, "export"))
}
