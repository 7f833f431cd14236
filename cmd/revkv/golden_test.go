package main

import (
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the tool's output")

// goldenCases are run against the fixture; each must succeed, and its
// stdout (the fixture's path replaced by DIR) is testdata/NAME.golden.
// Every case but export and import's runs again with --json, against
// testdata/NAME.json.golden. "DIGEST9" in args stands for revision 9's
// digest, read from the store.
var goldenCases = []struct {
	name string
	args []string
	json bool
}{
	{"info", []string{"info"}, true},
	{"get", []string{"get", "config/a"}, true},
	{"get-rev", []string{"get", "config/a", "--rev", "4"}, true},
	{"get-at", []string{"get", "config/a", "--at", "2024-03-01T12:00:03.5Z"}, true},
	{"get-at-offset", []string{"get", "config/a", "--at", "2024-03-01T13:00:03.999999999+01:00"}, false},
	{"get-at-ms", []string{"get", "config/a", "--at", "1709294403500"}, false},
	{"get-base64", []string{"get", "bin/blob"}, true},
	{"get-expires", []string{"get", "session/long"}, true},
	{"get-quoted-key", []string{"get", "key with space"}, true},
	{"history", []string{"history", "config/a"}, true},
	{"history-expired", []string{"history", "session/x"}, true},
	{"history-ttl", []string{"history", "session/y"}, true},
	{"history-annotated", []string{"history", "config/c"}, true},
	{"scan", []string{"scan"}, true},
	{"scan-prefix", []string{"scan", "config/"}, true},
	{"scan-rev", []string{"scan", "--rev", "6"}, true},
	{"scan-at", []string{"scan", "--at", "2024-03-01T12:00:07Z"}, true}, // session/x expired at 12:00:07
	{"diff", []string{"diff", "3", "12"}, true},
	{"diff-prefix", []string{"diff", "6", "9", "config/"}, true},
	{"changes", []string{"changes"}, true},
	{"changes-range", []string{"changes", "config/", "--from", "4", "--to", "9"}, true},
	{"verify", []string{"verify"}, true},
	{"verify-rev", []string{"verify", "--rev", "9", "--digest", "DIGEST9"}, true},
	{"export", []string{"export"}, false},
	{"export-prefix", []string{"export", "config/"}, false},
}

// TestGolden checks every command's output on the fixture, as text and as
// JSON, against the golden files (go test -update rewrites them).
func TestGolden(t *testing.T) {
	dir := fixture(t)
	for _, tc := range goldenCases {
		for _, asJSON := range []bool{false, true} {
			if asJSON && !tc.json {
				continue
			}
			name, args := tc.name, tc.args
			if asJSON {
				name, args = name+".json", append(args[:len(args):len(args)], "--json")
			}
			t.Run(name, func(t *testing.T) {
				if strings.Contains(strings.Join(args, " "), "DIGEST9") {
					args = replaceArg(args, "DIGEST9", digestAt(t, dir, 9))
				}
				out := ok(t, append([]string{"--dir", dir}, args...)...)
				golden(t, name, strings.ReplaceAll(out, dir, "DIR"))
			})
		}
	}
}

// golden compares got with testdata/name.golden, or writes it there with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test -update, and read what it wrote")
	require.Equal(t, string(want), got, "output differs from %s", path)
}

func replaceArg(args []string, old, new string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, old, new)
	}
	return out
}

// digestAt reads revision rev's digest from the store in dir, in hex.
func digestAt(t *testing.T, dir string, rev revkv.Revision) string {
	t.Helper()
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithReadOnly())
	require.NoError(t, err)
	defer s.Close()
	d, err := s.DigestAt(rev)
	require.NoError(t, err)
	return hex.EncodeToString(d[:])
}

// TestGoldenTimesAgree: a TIME in RFC 3339 keeps its fraction and its
// offset, and Unix milliseconds name the same instant: the three --at
// forms of the golden cases ask for one instant and get one answer.
func TestGoldenTimesAgree(t *testing.T) {
	dir := fixture(t)
	get := func(at string) string { return ok(t, "--dir", dir, "get", "config/a", "--at", at) }
	want := get("2024-03-01T12:00:03.5Z")
	require.Contains(t, want, `"v2"`)
	require.Equal(t, want, get("2024-03-01T13:00:03.5+01:00"))
	require.Equal(t, want, get("1709294403500"))
	require.Contains(t, get("2024-03-01T12:00:02.999999999Z"), `"v1"`, "the nanoseconds count")
	require.Contains(t, get("2024-03-01T13:00:03+01:00"), `"v2"`, "the offset counts")
	require.Contains(t, get("2024-03-01T13:00:02.999999999+01:00"), `"v1"`, "the offset counts")
}
