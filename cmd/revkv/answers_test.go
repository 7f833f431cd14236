package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNotThere: asking for what is not there is exit status 1, with one
// line saying why and nothing on stdout (--json included): a key never
// written, deleted, expired (written into history or not yet), absent at a
// revision or time; history of a key never written; a revision compacted
// away or not yet written.
func TestNotThere(t *testing.T) {
	dir := fixture(t)
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"get", "nope"}, `revkv: key "nope" not found`},
		{[]string{"get", "config/b"}, `revkv: key "config/b" was deleted at revision 6`},
		{[]string{"get", "session/x"}, `revkv: key "session/x" expired at 2024-03-01T12:00:07.000000000Z (revision 7)`},
		{[]string{"get", "session/y"}, `revkv: key "session/y" expired at 2024-03-01T12:00:19.000000000Z`},
		{[]string{"get", "config/c", "--rev", "8"}, `revkv: key "config/c" is not there at revision 8`},
		{[]string{"get", "config/a", "--rev", "0"}, `revkv: key "config/a" is not there at revision 0`},
		{[]string{"get", "session/x", "--at", "2024-03-01T12:00:07Z"}, `revkv: key "session/x" is not there as of 2024-03-01T12:00:07Z`},
		{[]string{"get", "config/a", "--at", "1709290800000"}, `revkv: key "config/a" is not there as of 1709290800000`},
		{[]string{"get", "config/a", "--rev", "2"}, `revkv: view at 2: required revision has been compacted (floor is 3)`},
		{[]string{"get", "config/a", "--rev", "13"}, `revkv: view at 13: required revision is a future revision (latest is 12)`},
		{[]string{"get", "config/a", "--at", "9999-01-01T00:00:00Z"}, `revkv: view as of 9999-01-01T00:00:00Z: required revision is a future revision`},
		{[]string{"history", "nope"}, `revkv: key "nope" has no history: never written, or compacted away`},
		{[]string{"scan", "--rev", "2"}, `revkv: view at 2: required revision has been compacted (floor is 3)`},
		{[]string{"scan", "--rev", "13"}, `revkv: view at 13: required revision is a future revision (latest is 12)`},
		{[]string{"diff", "2", "9"}, `compacted`},
		{[]string{"diff", "3", "13"}, `future revision`},
		{[]string{"changes", "--from", "1"}, `revkv: changes under "" from 1: required revision has been compacted (restart from revision 3)`},
		{[]string{"changes", "--to", "13"}, `future revision`},
	} {
		for _, asJSON := range []bool{false, true} {
			args := append([]string{"--dir", dir}, tc.args...)
			if asJSON {
				args = append(args, "--json")
			}
			r := runTool(t, "", args...)
			require.Equal(t, 1, r.code, "revkv %q: %s", args, r.stderr)
			requireErrorLine(t, r.stderr)
			require.Contains(t, r.stderr, tc.stderr, "revkv %q", args)
			require.Empty(t, r.stdout, "revkv %q", args)
		}
	}
}

// TestEmptyListings: a listing with nothing in it prints nothing, not even
// its header, and succeeds.
func TestEmptyListings(t *testing.T) {
	dir := fixture(t)
	for _, args := range [][]string{
		{"scan", "nothing/"}, {"scan", "--rev", "0"}, {"scan", "--at", "2024-03-01T11:00:00Z"},
		{"diff", "9", "9"}, {"diff", "3", "12", "nothing/"}, {"changes", "nothing/"}, {"changes", "--from", "12", "--to", "12", "nothing/"},
	} {
		for _, asJSON := range []bool{false, true} {
			if asJSON {
				args = append(args, "--json")
			}
			require.Empty(t, ok(t, append([]string{"--dir", dir}, args...)...), "revkv %q", args)
		}
	}
}

// TestManyRowsStayAligned: a listing longer than a block of rows is
// aligned within each block, every row on its own line.
func TestManyRowsStayAligned(t *testing.T) {
	dir := bigStore(t, 2500)
	out := ok(t, "--dir", dir, "scan")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 1001, "1,000 keys and the header")
	require.Equal(t, "KEY       REV   TIME", lines[0][:20])
	for _, l := range lines[1:] {
		require.Regexp(t, `^key/\d{4}  \d{4}  \S+Z  -           "\d+"$`, l)
	}
	out = ok(t, "--dir", dir, "changes")
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2501)
	require.Equal(t, "1     ", lines[1][:6], "the first block is as wide as its widest revision, 1000")
	require.Equal(t, "1001  ", lines[1001][:6])
	require.Equal(t, "2001  ", lines[2001][:6])
}
