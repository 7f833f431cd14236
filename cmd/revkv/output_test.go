package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// TestTextForms: how values, keys and annotations read in text output.
func TestTextForms(t *testing.T) {
	for v, want := range map[string]string{
		"v1": `"v1"`, "": `""`, "-": `"-"`, "a b": `"a b"`, "multi\nline": `"multi\nline"`,
		"tab\there": `"tab\there"`, `say "hi"`: `"say \"hi\""`, "héllo ✓": `"héllo ✓"`,
		"\xff\x00\x01": "base64:/wAB", "base64:x": `"base64:x"`,
	} {
		require.Equal(t, want, textValue([]byte(v)), "value %q", v)
	}
	for k, want := range map[string]string{
		"config/a": "config/a", "": `""`, "-": `"-"`, "key with space": `"key with space"`,
		"a=b": `"a=b"`, `q"`: `"q\""`, "line\nbreak": `"line\nbreak"`, "\xff": `"\xff"`, "naïve": "naïve",
	} {
		require.Equal(t, want, textWord(k), "key %q", k)
	}
	require.Equal(t, "", textAnnotations(nil))
	require.Equal(t, `ticket=OPS-1 who=alice why="rotate key" "x y"=""`,
		textAnnotations(map[string]string{"why": "rotate key", "who": "alice", "ticket": "OPS-1", "x y": ""}))
}

// TestJSONForms: the field names and forms of an entry in --json output.
func TestJSONForms(t *testing.T) {
	at := time.Date(2024, 3, 1, 12, 0, 0, 5, time.FixedZone("", 5*3600+1800))
	for _, tc := range []struct {
		e    revkv.Entry[[]byte]
		ann  map[string]string
		want string
	}{
		{revkv.Entry[[]byte]{Key: "k", Op: revkv.OpPut, Value: []byte("v"), Rev: 3, Time: at, ExpiresAt: at.Add(time.Second)},
			map[string]string{"who": "alice"},
			`{"key":"k","rev":3,"op":"put","time":"2024-03-01T12:00:00.000000005+05:30","value":"v","expires_at":"2024-03-01T12:00:01.000000005+05:30","annotations":{"who":"alice"}}`},
		{revkv.Entry[[]byte]{Key: "", Op: revkv.OpPut, Value: []byte{}, Rev: 1, Time: at}, nil,
			`{"key":"","rev":1,"op":"put","time":"2024-03-01T12:00:00.000000005+05:30","value":""}`},
		{revkv.Entry[[]byte]{Key: "\xfe", Op: revkv.OpPut, Value: []byte{0xff}, Rev: 2, Time: at}, nil,
			`{"key_base64":"/g==","rev":2,"op":"put","time":"2024-03-01T12:00:00.000000005+05:30","value_base64":"/w=="}`},
		{revkv.Entry[[]byte]{Key: "<&>", Op: revkv.OpDelete, Rev: 4, Time: at}, nil,
			`{"key":"<&>","rev":4,"op":"delete","time":"2024-03-01T12:00:00.000000005+05:30"}`},
		{revkv.Entry[[]byte]{Key: "s", Op: revkv.OpExpire, Rev: 5, Time: at}, map[string]string{},
			`{"key":"s","rev":5,"op":"expire","time":"2024-03-01T12:00:00.000000005+05:30"}`},
	} {
		c := newCLI(nil, io.Discard, io.Discard)
		var b bytes.Buffer
		c.out.Reset(&b)
		require.NoError(t, c.writeJSON(entryJSON(tc.e, tc.ann)))
		require.NoError(t, c.out.Flush())
		require.Equal(t, tc.want+"\n", b.String())
		require.True(t, json.Valid(b.Bytes()))
	}
}

// TestParse: REV, TIME and HEX, and flags split from arguments.
func TestParse(t *testing.T) {
	for _, s := range []string{"0", "7", "9223372036854775807"} {
		_, err := parseRev("REV", s)
		require.NoError(t, err, s)
	}
	for _, s := range []string{"", "-1", "1.0", "0x10", "1e3", " 1", "9223372036854775808"} {
		_, err := parseRev("REV", s)
		require.ErrorAs(t, err, new(*usageError), "%q", s)
	}
	tm, err := parseTime("--at", "2024-03-01T12:00:00.123456789+05:30")
	require.NoError(t, err)
	require.Equal(t, 123456789, tm.Nanosecond(), "the nanoseconds are kept")
	_, off := tm.Zone()
	require.Equal(t, 5*3600+1800, off, "the offset is kept")
	tm, err = parseTime("--at", "1709294403500")
	require.NoError(t, err)
	require.True(t, tm.Equal(time.Date(2024, 3, 1, 12, 0, 3, 500e6, time.UTC)))
	tm, err = parseTime("--at", "-1")
	require.NoError(t, err)
	require.True(t, tm.Equal(time.UnixMilli(-1)))
	for _, s := range []string{"", "now", "2024-03-01", "2024-03-01T12:00:00", "2024-03-01 12:00:00Z", "1.5"} {
		_, err := parseTime("--at", s)
		require.ErrorAs(t, err, new(*usageError), "%q", s)
	}
	d, err := parseDigest("00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff")
	require.NoError(t, err)
	require.Equal(t, byte(0xaa), d[10])
	for _, s := range []string{"", "00", strings.Repeat("z", 64)} {
		_, err := parseDigest(s)
		require.ErrorAs(t, err, new(*usageError), "%q", s)
	}

	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("rev", "", "")
	fs.Bool("json", false, "")
	for _, tc := range []struct{ args, flags, pos []string }{
		{[]string{"k", "--rev", "3"}, []string{"--rev", "3"}, []string{"k"}},
		{[]string{"--json", "k", "-rev=3"}, []string{"--json", "-rev=3"}, []string{"k"}},
		{[]string{"--json=false", "a", "b"}, []string{"--json=false"}, []string{"a", "b"}},
		{[]string{"-", "--rev"}, []string{"--rev"}, []string{"-"}},
		{[]string{"--", "--rev", "3"}, nil, []string{"--rev", "3"}},
		{[]string{"--nope", "k"}, []string{"--nope"}, []string{"k"}},
	} {
		flags, pos := splitArgs(fs, tc.args)
		require.Equal(t, tc.flags, flags, "%q", tc.args)
		require.Equal(t, tc.pos, pos, "%q", tc.args)
	}
}

// TestJSONValues: a value JSONCodec wrote for a struct or a slice shows as
// JSON, not as an escaped string, in text and as value_json with --json;
// a JSON number or string, text that only looks like JSON, and bytes that
// are not text are shown as before.
func TestJSONValues(t *testing.T) {
	type cfg struct {
		RPS  int    `json:"rps"`
		Note string `json:"note"`
	}
	dir := filepath.Join(t.TempDir(), "json")
	s, err := revkv.Open(dir, revkv.JSONCodec[cfg]())
	require.NoError(t, err)
	_, err = s.Put("cfg", cfg{RPS: 500, Note: "a \"spike\""})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	b, err := revkv.Open(dir, revkv.BytesCodec())
	require.NoError(t, err)
	for k, v := range map[string]string{"list": " [1, 2]\n", "num": "100", "str": `"sam"`, "broken": "{not json", "bin": "\xff\x00"} {
		_, err = b.Put(k, []byte(v))
		require.NoError(t, err)
	}
	require.NoError(t, b.Close())

	out := ok(t, "--dir", dir, "history", "cfg")
	require.Contains(t, out, `{"rps":500,"note":"a \"spike\""}`)
	require.NotContains(t, out, `\"rps\"`)
	var j jsonEntry
	require.NoError(t, json.Unmarshal([]byte(ok(t, "--dir", dir, "get", "cfg", "--json")), &j))
	require.JSONEq(t, `{"rps":500,"note":"a \"spike\""}`, string(j.ValueJSON))
	require.Nil(t, j.Value)
	scan := ok(t, "--dir", dir, "scan")
	for _, want := range []string{"[1,2]", `"100"`, `"\"sam\""`, `"{not json"`, "base64:/wA="} {
		require.Contains(t, scan, want)
	}
	require.Contains(t, ok(t, "--help"), "value_json")
}
