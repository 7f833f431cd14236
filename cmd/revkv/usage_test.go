package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsageErrors: a command line that does not parse is exit status 2,
// with one error line on stderr that names what is wrong, nothing on
// stdout, and the directory untouched (nothing is opened).
func TestUsageErrors(t *testing.T) {
	dir := fixture(t)
	hex64 := strings.Repeat("0f", 32)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{nil, "no command given"},
		{[]string{"bogus"}, `"bogus" is not a command`},
		{[]string{"Info"}, `"Info" is not a command`},
		{[]string{"--bogus", "info"}, "flag provided but not defined: -bogus"},
		{[]string{"--dir"}, "flag needs an argument: -dir"},
		{[]string{"--dir", "", "info"}, "--dir is empty"},
		{[]string{"info", "extra"}, `info: unexpected argument "extra"`},
		{[]string{"info", "--rev", "3"}, "info: flag provided but not defined: -rev"},
		{[]string{"info", "--json=maybe"}, "info: invalid boolean value"},
		{[]string{"get"}, "get: KEY is missing"},
		{[]string{"get", "a", "b"}, `get: unexpected argument "b"`},
		{[]string{"get", "a", "--rev"}, "get: flag needs an argument: -rev"},
		{[]string{"get", "a", "--rev", "x"}, `--rev "x" is not a revision`},
		{[]string{"get", "a", "--rev", "1.5"}, `--rev "1.5" is not a revision`},
		{[]string{"get", "a", "--rev=-3"}, `--rev "-3" is not a revision`},
		{[]string{"get", "a", "--rev", "1", "--at", "1709294403500"}, "--rev and --at both say when"},
		{[]string{"get", "a", "--at", "yesterday"}, `--at "yesterday" is not a time`},
		{[]string{"get", "a", "--at", "2024-03-01"}, `--at "2024-03-01" is not a time`},
		{[]string{"get", "a", "--at", "2024-03-01 12:00:00"}, `is not a time`},
		{[]string{"get", "a", "--from", "1"}, "get: flag provided but not defined: -from"},
		{[]string{"history"}, "history: KEY is missing"},
		{[]string{"history", "a", "b"}, `history: unexpected argument "b"`},
		{[]string{"history", "a", "--rev", "1"}, "history: flag provided but not defined: -rev"},
		{[]string{"scan", "a", "b"}, `scan: unexpected argument "b"`},
		{[]string{"scan", "--rev", "1", "--at", "2024-03-01T12:00:00Z"}, "--rev and --at both say when"},
		{[]string{"scan", "--at", "noon"}, `--at "noon" is not a time`},
		{[]string{"diff"}, "diff: FROM is missing"},
		{[]string{"diff", "1"}, "diff: TO is missing"},
		{[]string{"diff", "x", "2"}, `FROM "x" is not a revision`},
		{[]string{"diff", "1", "y"}, `TO "y" is not a revision`},
		{[]string{"diff", "1", "2", "p", "q"}, `diff: unexpected argument "q"`},
		{[]string{"changes", "1", "2", "p", "q"}, `changes: unexpected argument "q"`},
		{[]string{"changes", "a", "2"}, `FROM "a" is not a revision`},
		{[]string{"changes", "--from", "9", "--to", "4"}, "changes: FROM (9) is after TO (4)"},
		{[]string{"changes", "9", "4"}, "changes: FROM (9) is after TO (4)"},
		{[]string{"changes", "1", "4", "--from", "1"}, "changes: give the range as FROM TO or as --from and --to, not both"},
		{[]string{"diff", "10", "3"}, "diff: FROM (10) is after TO (3)"},
		{[]string{"diff", "--from", "10", "--to", "3", "config/"}, "diff: FROM (10) is after TO (3)"},
		{[]string{"diff", "--from", "10"}, "diff: TO is missing"},
		{[]string{"changes", "--from", "x"}, `--from "x" is not a revision`},
		{[]string{"changes", "--to", "-"}, `--to "-" is not a revision`},
		{[]string{"verify", "extra"}, `verify: unexpected argument "extra"`},
		{[]string{"verify", "--rev", "3"}, "--rev and --digest go together"},
		{[]string{"verify", "--digest", hex64}, "--rev and --digest go together"},
		{[]string{"verify", "--rev", "x", "--digest", hex64}, `--rev "x" is not a revision`},
		{[]string{"verify", "--rev", "3", "--digest", "zz"}, `--digest "zz" is not a digest (64 hex digits)`},
		{[]string{"verify", "--rev", "3", "--digest", hex64[:62]}, "is not a digest (64 hex digits)"},
		{[]string{"verify", "--rev", "3", "--digest", hex64 + "00"}, "is not a digest (64 hex digits)"},
		{[]string{"export", "a", "b"}, `export: unexpected argument "b"`},
		{[]string{"import", "--json"}, "import: --json does not apply to it"},
		{[]string{"import", "file.jsonl"}, `import: unexpected argument "file.jsonl"`},
		{[]string{"checkpoint", "now"}, `checkpoint: unexpected argument "now"`},
		{[]string{"compact"}, "compact: REV is missing"},
		{[]string{"compact", "x"}, `REV "x" is not a revision`},
		{[]string{"compact", "1", "2"}, `compact: unexpected argument "2"`},
		{[]string{"compact", "--json", "3"}, "compact: --json does not apply to it"},
		{[]string{"help", "bogus"}, `help: "bogus" is not a command`},
		{[]string{"help", "get", "scan"}, `help: unexpected argument "scan"`},
	} {
		before := hashDir(t, dir)
		r := runTool(t, "", append([]string{"--dir", dir}, tc.args...)...)
		if tc.args != nil && tc.args[0] == "--dir" { // the fixture's --dir would be overridden
			r = runTool(t, "", tc.args...)
		}
		require.Equal(t, 2, r.code, "revkv %q: %s", tc.args, r.stderr)
		require.Empty(t, r.stdout, "revkv %q", tc.args)
		requireErrorLine(t, r.stderr)
		require.Contains(t, r.stderr, tc.says, "revkv %q", tc.args)
		require.Equal(t, before, hashDir(t, dir), "revkv %q", tc.args)
	}
}

// TestHelp: --help, -h and help print the tool's usage, listing every
// command with its summary; COMMAND --help, -h and help COMMAND print the
// command's usage and an example; all exit 0 and open nothing.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"-help"}} {
		out := ok(t, args...)
		require.Contains(t, out, "Usage: revkv [--dir DIR] COMMAND [flags] [args]")
		for _, cmd := range commands {
			require.Contains(t, out, "\n  "+cmd.name+strings.Repeat(" ", 12-len(cmd.name))+cmd.summary+"\n", "%q lists %s", args, cmd.name)
		}
		require.Contains(t, out, "REVKV_DIR")
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, cmd := range commands {
		for _, args := range [][]string{{cmd.name, "--help"}, {cmd.name, "-h"}, {"help", cmd.name}, {"--dir", missing, cmd.name, "x", "--help"}} {
			out := ok(t, args...)
			require.True(t, strings.HasPrefix(out, "Usage: revkv [--dir DIR] "+cmd.name), "%q: %s", args, out)
			require.Contains(t, out, "\nExample:\n  revkv ", "%q", args)
			require.Equal(t, cmd.json, strings.Contains(out, "--json"), "%q: --json is documented where it applies", args)
		}
	}
	_, err := os.Stat(missing)
	require.True(t, os.IsNotExist(err), "help creates nothing")
}

// TestFlagsAnywhere: flags may come before or after the arguments, the
// global ones after the command too; "--" ends the flags.
func TestFlagsAnywhere(t *testing.T) {
	dir := fixture(t)
	same := [][][]string{
		{
			{"--dir", dir, "get", "config/a", "--rev", "4"},
			{"--dir", dir, "get", "--rev", "4", "config/a"},
			{"--dir", dir, "get", "--rev=4", "config/a"},
			{"get", "config/a", "--dir", dir, "--rev", "4"},
			{"get", "--dir=" + dir, "config/a", "-rev", "4"},
		},
		{
			{"--dir", dir, "--json", "scan", "config/", "--at", "1709294403500"},
			{"--dir", dir, "scan", "--json", "config/", "--at", "1709294403500"},
			{"--dir", dir, "scan", "config/", "--at", "1709294403500", "--json"},
			{"scan", "--at", "1709294403500", "config/", "--json", "--dir", dir},
		},
		{
			{"--dir", dir, "changes", "config/", "--from", "4", "--to", "9"},
			{"--dir", dir, "changes", "--to", "9", "config/", "--from", "4"},
		},
		{
			{"--dir", dir, "diff", "3", "12", "session/"},
			{"diff", "3", "--dir", dir, "12", "session/"},
			{"--dir", dir, "diff", "session/", "--from", "3", "--to", "12"},
		},
		{
			{"--dir", dir, "changes", "4", "9", "config/"},
			{"--dir", dir, "changes", "config/", "--from", "4", "--to", "9"},
		},
	}
	for _, group := range same {
		want := ok(t, group[0]...)
		require.NotEmpty(t, want)
		for _, args := range group[1:] {
			require.Equal(t, want, ok(t, args...), "revkv %q", args)
		}
	}
	// After "--", a key may begin with "-".
	r := runTool(t, "", "--dir", dir, "get", "--", "-k")
	require.Equal(t, 1, r.code)
	require.Equal(t, "revkv: key \"-k\" not found\n", r.stderr)
	r = runTool(t, "", "--dir", dir, "history", "--json", "--", "--json")
	require.Equal(t, 1, r.code)
	require.Equal(t, "revkv: key \"--json\" has no history: never written, or compacted away\n", r.stderr)
	require.Contains(t, ok(t, "--dir", dir, "scan", "--", "config/"), "config/a")
}

// TestDirFromEnv: without --dir the directory is $REVKV_DIR, else the
// current directory; --dir wins over both.
func TestDirFromEnv(t *testing.T) {
	dir := fixture(t)
	t.Setenv("REVKV_DIR", dir)
	require.Contains(t, ok(t, "info"), "directory    "+dir+"\n")
	other := fresh(t)
	require.Contains(t, ok(t, "info", "--dir", other), "directory    "+other+"\n")

	t.Setenv("REVKV_DIR", "")
	t.Chdir(dir)
	require.Contains(t, ok(t, "info"), "directory    "+dir+"\n")
	require.Contains(t, ok(t, "get", "config/c"), `"new"`)
	t.Chdir(t.TempDir())
	r := runTool(t, "", "info")
	require.Equal(t, 1, r.code)
	require.Equal(t, "revkv: no revkv directory at .: it holds no LOCK, log or snapshot file\n", r.stderr)
}

// TestVersion: --version prints the tool's version, the server's (issue
// 35, item 12).
func TestVersion(t *testing.T) {
	require.Equal(t, "revkv "+version+"\n", ok(t, "--version"))
	src, err := os.ReadFile(filepath.Join("..", "revkv-server", "main.go"))
	require.NoError(t, err)
	require.Contains(t, string(src), "const version = \""+version+"\"", "the tool and the server have one version")
}

// TestOnePrefix: an error of the store inside one of the tool's is said
// with one "revkv:", as one sentence.
func TestOnePrefix(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "copy2")
	r := runTool(t, "{\"nope\":1}\n", "--dir", dir, "import")
	require.Equal(t, 1, r.code)
	requireErrorLine(t, r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "revkv:"), r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "import"), r.stderr)
	require.Equal(t, "revkv: wrapped: inner: x", "revkv: "+oneSentence(fmt.Errorf("wrapped: %v", errors.New("revkv: inner: x"))))
}

// TestExportHelpNamesEveryField: 'revkv help export' names every field of
// an export's header and lines, and where to read how to recompute the
// digests.
func TestExportHelpNamesEveryField(t *testing.T) {
	out := ok(t, "help", "export")
	for _, f := range []string{"revkv_export", "prefix", "rev", "time", "first", "base", "floor", "compact_rev", "compacted", "trim_floor",
		"zone", "offset", "key", "key_base64", "op", "value", "value_base64", "expires_at", "annotations", "annotations_base64",
		"trimmed", "dropped", "prev", "digest", "SECONDS.NANOSECONDS", "Export format"} {
		require.Regexp(t, `\b`+regexp.QuoteMeta(f)+`\b`, out, "help export names %s", f)
	}
}
