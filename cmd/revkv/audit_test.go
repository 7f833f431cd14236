package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// The tests of the audit surface: annotations, digests, export and import.
// They need the root package's audit functions (audit.go), which are stubs
// returning errors.ErrUnsupported until the hash chain lands.

// TestAnnotationsShown: history, changes and get show the annotations of
// the annotated Update's two revisions, and none for the revisions written
// without any: the expiry that Update wrote first (revision 7) carries
// none, and neither does revision 1, below the floor but still retained.
func TestAnnotationsShown(t *testing.T) {
	dir := fixture(t)
	want := map[string]string{"who": "alice", "why": "rotate key"}
	annotated := map[revkv.Revision]bool{8: true, 9: true}
	for _, args := range [][]string{{"history", "config/a"}, {"changes", "--from", "1"}, {"changes"}} {
		args = append([]string{"--dir", dir}, args...)
		r := runTool(t, "", append(args, "--json")...)
		if args[2] == "changes" && len(args) > 3 && args[3] == "--from" {
			require.Equal(t, 1, r.code, "revision 1 is below the floor: changes from it is refused")
			continue
		}
		require.Equal(t, 0, r.code, r.stderr)
		seen := 0
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var e jsonEntry
			require.NoError(t, json.Unmarshal([]byte(line), &e))
			if annotated[e.Rev] {
				seen++
				require.Equal(t, want, e.Annotations, "revision %d", e.Rev)
			} else {
				require.Nil(t, e.Annotations, "revision %d", e.Rev)
			}
		}
		require.NotZero(t, seen)
		for _, line := range strings.Split(ok(t, args...), "\n") {
			if f := strings.Fields(line); len(f) > 0 && (f[0] == "8" || f[0] == "9") {
				require.True(t, strings.HasSuffix(line, `  who=alice why="rotate key"`), "%q", line)
			} else if len(f) > 0 && f[0] != "REV" {
				require.True(t, strings.HasSuffix(line, "  -"), "%q", line)
			}
		}
	}
	require.Contains(t, ok(t, "--dir", dir, "get", "config/c"), "\nannotations  who=alice why=\"rotate key\"\n")
	require.Contains(t, ok(t, "--dir", dir, "get", "config/a", "--rev", "4"), "\nannotations  -\n")
}

// TestVerify: verify prints the store's digest at the latest revision (the
// one info shows) and "ok"; with --rev and --digest it checks any retained
// revision's digest, upper or lower case, and a digest that differs is
// exit status 1 with an error naming the revision and both digests.
func TestVerify(t *testing.T) {
	dir := fixture(t)
	digests := digestsOf(t, dir)
	require.Len(t, digests, 10, "revisions 3 (the floor) to 12")
	require.NotEqual(t, digests[8], digests[9], "every revision moves the chain")

	require.Equal(t, "revision  12\ndigest    "+digests[12]+"\nok\n", ok(t, "--dir", dir, "verify"))
	require.Contains(t, ok(t, "--dir", dir, "info"), "\ndigest       "+digests[12]+"\n")
	for rev, hx := range digests {
		n := strconv.FormatInt(int64(rev), 10)
		out := ok(t, "--dir", dir, "verify", "--rev", n, "--digest", strings.ToUpper(hx))
		require.Contains(t, out, "revision "+n+" has the expected digest "+hx+"\nok\n")
	}

	wrong := digests[9][:63] + "0" // the last digit changed
	if digests[9][63] == '0' {
		wrong = digests[9][:63] + "1"
	}
	for _, asJSON := range []bool{false, true} {
		args := []string{"--dir", dir, "verify", "--rev", "9", "--digest", wrong}
		if asJSON {
			args = append(args, "--json")
		}
		r := runTool(t, "", args...)
		require.Equal(t, 1, r.code)
		require.Equal(t, "revkv: verify: revision 9 has digest "+digests[9]+", not the expected "+wrong+"\n", r.stderr)
		if !asJSON {
			require.Empty(t, r.stdout)
			continue
		}
		var v jsonVerify
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
		require.Equal(t, jsonVerify{Rev: 12, Digest: digests[12], CheckedRev: 9, Expected: wrong, Actual: digests[9], OK: false}, v)
	}
	r := runTool(t, "", "--dir", dir, "verify", "--rev", "13", "--digest", digests[9]) // after the latest
	require.Equal(t, 1, r.code)
	requireErrorLine(t, r.stderr)
	require.Contains(t, r.stderr, "revkv: verify: cannot read the digest of revision 13: ")
}

// digestsOf reads the digest of every revision from the floor to the
// latest from the store in dir, in hex, and checks that Digest gives the
// latest one.
func digestsOf(t *testing.T, dir string) map[revkv.Revision]string {
	t.Helper()
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithReadOnly())
	require.NoError(t, err)
	defer s.Close()
	head, d, err := s.Digest()
	require.NoError(t, err)
	require.Equal(t, s.Rev(), head)
	out := map[revkv.Revision]string{}
	for rev := s.Floor(); rev <= head; rev++ {
		d, err := s.DigestAt(rev)
		require.NoError(t, err)
		out[rev] = hex.EncodeToString(d[:])
	}
	require.Equal(t, out[head], hex.EncodeToString(d[:]))
	return out
}

// TestExportIsStoreExport: export writes exactly what Store.Export writes,
// for every key and under a prefix, as JSON lines.
func TestExportIsStoreExport(t *testing.T) {
	dir := fixture(t)
	for _, prefix := range []string{"", "config/", "nothing/"} {
		s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithReadOnly())
		require.NoError(t, err)
		var want bytes.Buffer
		require.NoError(t, s.Export(&want, prefix))
		require.NoError(t, s.Close())
		args := []string{"--dir", dir, "export"}
		if prefix != "" {
			args = append(args, prefix)
		}
		got := ok(t, args...)
		require.Equal(t, want.String(), got, "prefix %q", prefix)
		if prefix == "" {
			require.NotEmpty(t, got)
		}
		for _, line := range strings.SplitAfter(got, "\n") {
			if line != "" {
				require.True(t, strings.HasSuffix(line, "\n") && json.Valid([]byte(line)), "a JSON line: %q", line)
			}
		}
	}
}

// TestExportImport: export, import into an absent (or empty) directory,
// export again gives the same bytes; the copy has the same digests, floor,
// annotations and answers.
func TestExportImport(t *testing.T) {
	src := fixture(t)
	exported := ok(t, "--dir", src, "export")
	require.NotEmpty(t, exported)
	for _, name := range []string{"absent", "empty"} {
		dst := filepath.Join(t.TempDir(), name)
		if name == "empty" {
			require.NoError(t, os.Mkdir(dst, 0o755))
		}
		r := runTool(t, exported, "--dir", dst, "import")
		require.Equal(t, 0, r.code, r.stderr)
		require.Empty(t, r.stderr)
		require.Equal(t, "imported into "+dst+": latest revision 12\n", r.stdout)
		require.Equal(t, exported, ok(t, "--dir", dst, "export"), "export, import, export: the same bytes")
		require.Equal(t, ok(t, "--dir", src, "verify"), ok(t, "--dir", dst, "verify"))
		require.Equal(t, digestsOf(t, src), digestsOf(t, dst))
		var a, b jsonInfo
		require.NoError(t, json.Unmarshal([]byte(ok(t, "--dir", src, "info", "--json")), &a))
		require.NoError(t, json.Unmarshal([]byte(ok(t, "--dir", dst, "info", "--json")), &b))
		require.Equal(t, []any{a.Rev, a.Time, a.Floor, a.LiveKeys, a.Digest}, []any{b.Rev, b.Time, b.Floor, b.LiveKeys, b.Digest})
		for _, args := range [][]string{
			{"changes", "--json"}, {"scan", "--json"}, {"diff", "3", "12", "--json"},
			{"history", "config/c", "--json"}, {"get", "config/a", "--json"}, {"history", "session/x"},
		} {
			require.Equal(t, ok(t, append([]string{"--dir", src}, args...)...), ok(t, append([]string{"--dir", dst}, args...)...), "%q", args)
		}
	}
}

// TestImportRefusesANonEmptyDirectory: import into a directory that holds
// anything is exit status 1 and changes nothing there; a bad input is exit
// status 1 with one error line.
func TestImportRefusesANonEmptyDirectory(t *testing.T) {
	store := fixture(t)
	other := filepath.Join(t.TempDir(), "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644))
	for _, dir := range []string{store, other} {
		before := hashDir(t, dir)
		r := runTool(t, `{"rev":1}`+"\n", "--dir", dir, "import")
		require.Equal(t, 1, r.code)
		require.Equal(t, "revkv: "+dir+" is not empty: import writes only into an empty or absent directory\n", r.stderr)
		require.Empty(t, r.stdout)
		require.Equal(t, before, hashDir(t, dir))
	}
	r := runTool(t, "this is not an export\n", "--dir", filepath.Join(t.TempDir(), "new"), "import")
	require.Equal(t, 1, r.code)
	requireErrorLine(t, r.stderr)
	require.Contains(t, r.stderr, "revkv: import \"")
}

// TestExportTakesJSON: every read command takes --json, export too: its
// output is JSON lines with or without it.
func TestExportTakesJSON(t *testing.T) {
	dir := fixture(t)
	require.Equal(t, ok(t, "--dir", dir, "export"), ok(t, "--dir", dir, "export", "--json"))
	require.Equal(t, ok(t, "--dir", dir, "export", "config/"), ok(t, "--json", "--dir", dir, "export", "config/"))
}
