package web

import (
	"strings"
	"testing"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/web/webtest"
	"github.com/stretchr/testify/require"
)

// marked joins the changed spans with "|".
func marked(spans []span) string {
	var out []string
	for _, s := range spans {
		if s.Changed {
			out = append(out, s.Text)
		}
	}
	return strings.Join(out, "|")
}

func whole(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.Text)
	}
	return b.String()
}

// TestTextDiff: the spans of each side put together are that side; what
// is marked is what differs.
func TestTextDiff(t *testing.T) {
	for _, c := range []struct {
		a, b, before, after string
	}{
		{"apples", "apricots", "ple", "ricot"},
		{"same", "same", "", ""},
		{"", "new", "", "new"},
		{"old", "", "old", ""},
		{"a\nb\nc\n", "a\nB\nc\n", "b", "B"},
		{"a\nb\n", "a\nb\nc\n", "", "c\n"},
		{"x\ny\nz", "z", "x\ny\n", ""},
		{"café au lait", "café noir", "au lait", "noir"},
		{"été", "étè", "é", "è"}, // whole characters, never half of one
		{strings.Repeat("l\n", 2500) + "a", strings.Repeat("l\n", 2500) + "b", "a", "b"},
	} {
		before, after := textDiff(c.a, c.b)
		require.Equal(t, c.a, whole(before), "%q %q", c.a, c.b)
		require.Equal(t, c.b, whole(after), "%q %q", c.a, c.b)
		require.Equal(t, c.before, marked(before), "%q %q", c.a, c.b)
		require.Equal(t, c.after, marked(after), "%q %q", c.a, c.b)
	}
}

// TestRenderValue: JSON pretty, text as it is, control bytes and invalid
// UTF-8 as binary; cut on a character boundary.
func TestRenderValue(t *testing.T) {
	for _, c := range []struct {
		v    string
		kind string
		text string
	}{
		{`{"a":1}`, "json", "{\n  \"a\": 1\n}"},
		{` [1,2] `, "json", "[\n  1,\n  2\n]"},
		{`{"a":`, "text", `{"a":`},
		{"plain\ttext\n", "text", "plain\ttext\n"},
		{"<b>x</b>", "text", "<b>x</b>"},
		{"\x00\x01", "binary", "0001"},
		{"bell\a", "binary", "62656c6c07"},
		{"\xff\xfe", "binary", "fffe"},
		{"", "text", ""},
	} {
		r := renderValue([]byte(c.v), false)
		require.Equal(t, c.kind, r.Kind, "%q", c.v)
		require.Equal(t, c.text, r.Text, "%q", c.v)
		require.Equal(t, len(c.v), r.Size)
	}
	long := strings.Repeat("é", cutAt) // 2 bytes each
	r := renderValue([]byte(long), false)
	require.True(t, r.Cut)
	require.Equal(t, cutAt, len(r.Text))
	r = renderValue([]byte("a"+long), false)
	require.Equal(t, cutAt-1, len(r.Text), "not half of a character")
	r = renderValue([]byte(long), true)
	require.False(t, r.Cut)
	require.Equal(t, long, r.Text)
}

// TestChildren: the prefixes one "/" below, with their counts, in order.
func TestChildren(t *testing.T) {
	keys := []string{"a", "b/1", "b/2", "b/c/3", "c/", "d/x", "e"}
	require.Equal(t, []jsonChild{{"b/", 3}, {"c/", 1}, {"d/", 1}}, children(keys, ""))
	require.Equal(t, []jsonChild{{"b/c/", 1}}, children(keys, "b/"))
	require.Equal(t, []jsonChild{}, children(keys, "z/"))
}

// TestRevEntry: the entry of each revision, found through Diff, is the
// one Changes gives, expiries and deletes included.
func TestRevEntry(t *testing.T) {
	dir := t.TempDir() + "/data"
	f, err := webtest.Build(dir)
	require.NoError(t, err)
	s, err := webtest.Open(dir)
	require.NoError(t, err)
	defer s.Close()
	h := New(s, Options{})
	for rev := revkv.Revision(1); rev <= f.Head; rev++ {
		var want revkv.Entry[[]byte]
		for e, err := range s.Changes("", rev, rev) {
			require.NoError(t, err)
			want = e
		}
		got, err := h.revEntry(rev)
		require.NoError(t, err)
		require.Equal(t, want, got, "revision %d", rev)
	}
	_, err = h.revEntry(f.Head + 1)
	require.Error(t, err)
}
