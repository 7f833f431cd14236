package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// flipLast flips a byte of the last record of dir's log, as damage to it
// leaves it: a tail Open may cut, never in silence. It returns the log's
// name within dir and its size.
func flipLast(t *testing.T, dir string) (string, int) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	name := logs[len(logs)-1]
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	b[len(b)-3] ^= 0x10
	require.NoError(t, os.WriteFile(name, b, 0o644))
	return filepath.Base(name), len(b)
}

// TestTornTailIsReported: a flipped byte in the last record of the log is
// told to an auditor: info shows the bytes that are not whole records and
// the revisions they could have held, verify exits 1 saying so (as
// redis-check-aof reports a short AOF), and repair cuts them, keeping a
// copy in *.damaged and saying what it moved; afterwards verify is ok.
func TestTornTailIsReported(t *testing.T) {
	dir := fixture(t)
	seg, size := flipLast(t, dir)
	before := hashDir(t, dir)

	info := ok(t, "--dir", dir, "info")
	require.Contains(t, info, "revision     11\n", "the last record is not read")
	require.Regexp(t, `\nnot read     \d+ bytes of `+seg+` from offset \d+ are not whole records \(a torn write, or damage to the last record\); they could have held revision 12 and later \(the first record there, whole but failing its checksum, reads as revisions 12 to 12\) \(revkv repair cuts them, keeping a copy\)\n`, info)
	var ji jsonInfo
	require.NoError(t, json.Unmarshal([]byte(ok(t, "--dir", dir, "info", "--json")), &ji))
	require.NotNil(t, ji.NotRead)
	require.Equal(t, seg, ji.NotRead.File)
	require.Equal(t, int64(size), ji.NotRead.Offset+ji.NotRead.Bytes)
	require.EqualValues(t, 12, ji.NotRead.Rev)
	require.EqualValues(t, 12, ji.NotRead.Reads)
	require.False(t, ji.NotRead.Cut)

	r := runTool(t, "", "--dir", dir, "verify")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	requireErrorLine(t, r.stderr)
	require.Contains(t, r.stderr, "revkv: verify: "+dir+": ")
	require.Contains(t, r.stderr, "bytes of "+seg+" from offset ")
	require.Contains(t, r.stderr, "they could have held revision 12 and later")
	r = runTool(t, "", "--dir", dir, "verify", "--json")
	require.Equal(t, 1, r.code)
	var jv jsonVerify
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &jv))
	require.False(t, jv.OK)
	require.NotNil(t, jv.NotRead)
	require.Equal(t, before, hashDir(t, dir), "info and verify change nothing")

	out := ok(t, "--dir", dir, "repair")
	require.Regexp(t, `^repaired `+regexpQuote(dir)+`: \d+ bytes of `+seg+` from offset \d+ are not whole records .*; they could have held revision 12 and later \(the first record there, whole but failing its checksum, reads as revisions 12 to 12\); cut them and moved them to `+seg+`\.damaged; the latest revision is now 11\n$`, out)
	kept, err := os.ReadFile(filepath.Join(dir, seg+".damaged"))
	require.NoError(t, err)
	require.Len(t, kept, int(ji.NotRead.Bytes))
	st, err := os.Stat(filepath.Join(dir, seg))
	require.NoError(t, err)
	require.Equal(t, ji.NotRead.Offset, st.Size())
	require.Contains(t, ok(t, "--dir", dir, "verify"), "ok\n")
	require.Equal(t, "nothing to repair: every record of "+dir+" is whole\n", ok(t, "--dir", dir, "repair"))
}

// TestRepairDamage: a damaged record with whole records after it is
// corrupt to every command; repair cuts the log there, moving the rest
// aside, and says so; the store then opens.
func TestRepairDamage(t *testing.T) {
	dir := damaged(t)
	r := runTool(t, "", "--dir", dir, "verify")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "is corrupt")
	var jr jsonRepair
	require.NoError(t, json.Unmarshal([]byte(ok(t, "--dir", dir, "repair", "--json")), &jr))
	require.NotNil(t, jr.Cut)
	require.True(t, jr.Cut.Damaged)
	require.Contains(t, jr.Cut.Why, "checksum mismatch")
	require.Equal(t, []string{"0000000000000001.log.damaged"}, jr.Cut.Moved)
	require.Equal(t, jr.Rev+1, jr.Cut.Rev)
	require.Contains(t, ok(t, "--dir", dir, "verify"), "ok\n")
	r = runTool(t, "", "--dir", filepath.Join(dir, "missing"), "repair")
	require.Equal(t, 1, r.code)
	requireErrorLine(t, r.stderr)
}

func regexpQuote(s string) string { return regexp.QuoteMeta(s) }

// TestHeaderDamageOrNewer: the tool tells a log of a newer format (upgrade
// revkv) from a damaged header (the version's bytes flipped), which it
// calls corrupt.
func TestHeaderDamageOrNewer(t *testing.T) {
	dir := fixture(t)
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	seg := filepath.Base(logs[0])
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)

	newer := append([]byte{}, b...)
	binary.LittleEndian.PutUint32(newer[8:], 2)
	binary.LittleEndian.PutUint32(newer[12:], ^uint32(2))
	require.NoError(t, os.WriteFile(logs[0], newer, 0o644))
	r := runTool(t, "", "--dir", dir, "info")
	require.Equal(t, 1, r.code)
	requireErrorLine(t, r.stderr)
	require.Equal(t, "revkv: "+dir+" was written by a newer revkv, not damaged: "+seg+": format version 2, written by a newer revkv: this build reads version 1; open it with a revkv that reads version 2\n", r.stderr)

	damaged := append([]byte{}, b...)
	damaged[10] ^= 1
	require.NoError(t, os.WriteFile(logs[0], damaged, 0o644))
	r = runTool(t, "", "--dir", dir, "verify")
	require.Equal(t, 1, r.code)
	require.Equal(t, "revkv: "+dir+" is corrupt: "+seg+" at offset 0: damaged header: its format version reads 65537 with check 0x0, which no revkv writes (this build reads version 1)\n", r.stderr)
	require.NotContains(t, r.stderr, "newer")

	require.NoError(t, os.WriteFile(logs[0], newer, 0o644))
	r = runTool(t, "", "--dir", dir, "repair")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "was written by a newer revkv, not damaged")
	got, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	require.Equal(t, newer, got, "repair leaves a newer format alone")
}
