package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// everyCommand runs each command once, with the arguments it needs.
var everyCommand = [][]string{
	{"info"}, {"get", "k"}, {"history", "k"}, {"scan"}, {"diff", "0", "0"}, {"changes"},
	{"verify"}, {"export"}, {"import"}, {"checkpoint"}, {"compact", "0"},
}

// readOnly are the commands that must leave every byte of the directory as
// it was: every one but import, checkpoint and compact, and also when they
// fail.
var readOnly = [][]string{
	{"info"}, {"info", "--json"},
	{"get", "config/a"}, {"get", "config/a", "--rev", "4"}, {"get", "config/a", "--at", "2024-03-01T12:00:03Z"},
	{"get", "session/y"}, {"get", "nope"}, {"get", "config/a", "--rev", "1"}, {"get", "config/a", "--rev", "99"},
	{"history", "config/a"}, {"history", "nope"}, {"history", "session/y", "--json"},
	{"scan"}, {"scan", "--rev", "6"}, {"scan", "--at", "2024-03-01T12:00:07Z"}, {"scan", "--json"},
	{"diff", "3", "12"}, {"diff", "1", "12"}, {"diff", "3", "12", "--json"},
	{"changes"}, {"changes", "--from", "1"}, {"changes", "--json"},
	{"verify"}, {"verify", "--rev", "9", "--digest", strings.Repeat("ab", 32)},
	{"export"}, {"export", "config/"},
}

// TestStates runs every command against a directory that is fresh (opened
// and closed, nothing written), an empty directory (not a store's), a
// missing one, one another store holds, and a damaged one: each answers
// with its exit status and one line on stderr that says what is wrong, and
// none changes a directory it could not use.
func TestStates(t *testing.T) {
	type want struct {
		code   int
		stderr string // a part of the error line ("": none)
		stdout string // a part of stdout
	}
	notStore := want{1, "no revkv directory at DIR: it holds no LOCK, log or snapshot file", ""}
	missing := want{1, "no revkv directory at DIR", ""}
	locked := want{1, "revkv: DIR is in use by another process (a running revkv-server?)", ""}
	corrupt := want{1, "revkv: DIR is corrupt: 0000000000000001.log at offset", ""}
	skip := want{code: -1} // import into an empty or missing directory: TestExportImport
	notEmpty := want{1, "revkv: DIR is not empty: import writes only into an empty or absent directory", ""}
	states := []struct {
		name    string
		dir     func(t *testing.T) string
		changes bool // checkpoint and compact may change it
		want    map[string]want
		other   want // the commands not in want
	}{
		{"fresh", fresh, true, map[string]want{
			"info":       {0, "", "revision     0\ntime         -\nfloor        0\nlive keys    0\n"},
			"get":        {1, `revkv: key "k" not found`, ""},
			"history":    {1, `revkv: key "k" has no history: never written, or compacted away`, ""},
			"verify":     {0, "", "revision  0\ndigest    " + strings.Repeat("0", 64) + "\nok\n"},
			"import":     notEmpty,
			"checkpoint": {0, "", "checkpoint of DIR written at revision 0"},
			"compact":    {0, "", "compacted DIR at revision 0: the floor is 0"},
		}, want{0, "", ""}},
		{"empty", func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "empty")
			require.NoError(t, os.Mkdir(dir, 0o755))
			return dir
		}, false, map[string]want{"import": skip}, notStore},
		{"missing", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "missing")
		}, false, map[string]want{"import": skip}, missing},
		{"locked", func(t *testing.T) string {
			dir := fixture(t)
			hold(t, dir)
			return dir
		}, false, map[string]want{"import": notEmpty}, locked},
		{"damaged", damaged, false, map[string]want{"import": notEmpty}, corrupt},
	}
	for _, st := range states {
		for _, args := range everyCommand {
			w, ok := st.want[args[0]]
			if !ok {
				w = st.other
			}
			if w == skip {
				continue
			}
			t.Run(st.name+"/"+args[0], func(t *testing.T) {
				dir := st.dir(t)
				before := hashDir(t, dir)
				r := runTool(t, "", append([]string{"--dir", dir}, args...)...)
				stdout, stderr := strings.ReplaceAll(r.stdout, dir, "DIR"), strings.ReplaceAll(r.stderr, dir, "DIR")
				require.Equal(t, w.code, r.code, "stderr: %s", r.stderr)
				if w.stderr == "" {
					require.Empty(t, stderr)
				} else {
					requireErrorLine(t, stderr)
					require.Contains(t, stderr, w.stderr)
				}
				require.Contains(t, stdout, w.stdout)
				if !st.changes || args[0] != "checkpoint" && args[0] != "compact" {
					require.Equal(t, before, hashDir(t, dir), "the directory changed")
				}
				_, err := os.Stat(dir)
				require.Equal(t, st.name != "missing", err == nil, "a missing directory stays missing")
			})
		}
	}
}

// requireErrorLine requires stderr to be one line beginning "revkv: ".
func requireErrorLine(t *testing.T, stderr string) {
	t.Helper()
	require.True(t, strings.HasPrefix(stderr, "revkv: "), "stderr %q does not begin with revkv: ", stderr)
	require.True(t, strings.HasSuffix(stderr, "\n"), "stderr %q is not a line", stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "stderr %q is not one line", stderr)
	require.NotContains(t, stderr, "revkv: revkv:", "the prefix is said once")
}

// TestReadOnlyChangesNothing: every command but import, checkpoint and
// compact leaves every byte of the directory as it was, a torn tail
// included, whether it succeeds or fails; checkpoint, which writes, shows that the hash sees a
// change.
func TestReadOnlyChangesNothing(t *testing.T) {
	dir := fixture(t)
	tear(t, dir) // which an Open that writes would cut
	before := hashDir(t, dir)
	require.Len(t, before, 3, "a snapshot, a log and LOCK")
	for _, args := range readOnly {
		runTool(t, "", append([]string{"--dir", dir}, args...)...)
		require.Equal(t, before, hashDir(t, dir), "revkv %q changed the directory", args)
	}
	ok(t, "--dir", dir, "checkpoint")
	require.NotEqual(t, before, hashDir(t, dir), "checkpoint writes")
}

// TestReadOnlyLeavesATornTail: a read-only command on a directory whose
// log ends in a torn record answers from the records before it, and leaves
// the torn bytes on disk (a writing Open would cut them).
func TestReadOnlyLeavesATornTail(t *testing.T) {
	dir := fixture(t)
	tear(t, dir)
	before := hashDir(t, dir)
	require.Contains(t, ok(t, "--dir", dir, "info"), "revision     12\n")
	require.Contains(t, ok(t, "--dir", dir, "scan", "config/"), `"v3"`)
	require.Equal(t, before, hashDir(t, dir))
}

// tear appends half a record to the log in dir, as a crash mid-write
// leaves it.
func tear(t *testing.T, dir string) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	f, err := os.OpenFile(logs[len(logs)-1], os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0x42, 0, 0})
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestCompact: compact REV leaves the floor at REV, as info shows; reads
// below it are refused; REV below the floor or after the latest revision
// fails and changes nothing.
func TestCompact(t *testing.T) {
	dir := fixture(t)
	require.Equal(t, "compacted DIR at revision 8: the floor is 8\n",
		strings.ReplaceAll(ok(t, "--dir", dir, "compact", "8"), dir, "DIR"))
	require.Contains(t, ok(t, "--dir", dir, "info"), "\nfloor        8\n")
	require.Contains(t, ok(t, "--dir", dir, "info", "--json"), `"floor":8,`)
	r := runTool(t, "", "--dir", dir, "get", "config/a", "--rev", "7")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "compacted")
	require.Contains(t, ok(t, "--dir", dir, "get", "config/a", "--rev", "8"), `"v3"`)

	before := hashDir(t, dir)
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"compact", "5"}, 1, "revkv: compact: revision 5 is below the floor, 8: the history below 8 is gone already\n"},
		{[]string{"compact", "13"}, 1, "revkv: compact: revision 13 is after the latest revision, 12\n"},
		{[]string{"compact", "x"}, 2, `revkv: REV "x" is not a revision (a whole number, 0 or more)` + "\n"},
		{[]string{"compact", "-1"}, 2, "revkv: compact: flag provided but not defined: -1 (see 'revkv compact --help')\n"},
	} {
		r := runTool(t, "", append([]string{"--dir", dir}, tc.args...)...)
		require.Equal(t, tc.code, r.code, "%q", tc.args)
		require.Equal(t, tc.stderr, r.stderr, "%q", tc.args)
		require.Equal(t, before, hashDir(t, dir), "%q changed the directory", tc.args)
	}
	ok(t, "--dir", dir, "compact", "8") // at the floor: nothing to do
	require.Contains(t, ok(t, "--dir", dir, "info"), "\nfloor        8\n")
	ok(t, "--dir", dir, "compact", "12")
	require.Contains(t, ok(t, "--dir", dir, "info"), "\nfloor        12\n")
}

// TestCheckpoint: checkpoint writes a snapshot at the latest revision and
// deletes the log it covers; every read answers as before.
func TestCheckpoint(t *testing.T) {
	dir := fixture(t)
	reads := [][]string{{"scan", "--json"}, {"history", "config/a"}, {"changes"}, {"diff", "3", "12"}, {"get", "session/long"}}
	var want []string
	for _, args := range reads {
		want = append(want, runTool(t, "", append([]string{"--dir", dir}, args...)...).stdout)
	}
	require.Equal(t, "checkpoint of DIR written at revision 12\n",
		strings.ReplaceAll(ok(t, "--dir", dir, "checkpoint"), dir, "DIR"))
	info := ok(t, "--dir", dir, "info")
	require.Contains(t, info, "000000000000000c.snap  snapshot")
	require.NotContains(t, info, "0000000000000009.snap")
	require.NotContains(t, info, "000000000000000a.log")
	for i, args := range reads {
		require.Equal(t, want[i], runTool(t, "", append([]string{"--dir", dir}, args...)...).stdout, "%q", args)
	}
}
