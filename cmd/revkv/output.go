package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/revkv/revkv"
)

// timeLayout is RFC 3339 with all nine digits of the nanoseconds, so that
// times line up and sort as text; a time is shown in its own zone.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// showTime formats t, or "" for the zero time.
func showTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(timeLayout)
}

// orDash is s, or "-" when s is empty: a table's absent cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// textValue shows a value in text output: a JSON object or array (what
// JSONCodec writes for a struct, a map or a slice) as compact JSON, as it
// is; other UTF-8 text quoted (Go syntax); anything else "base64:" and its
// standard base64.
func textValue(v []byte) string {
	if j, ok := jsonDoc(v); ok {
		return string(j)
	}
	if utf8.Valid(v) {
		return strconv.Quote(string(v))
	}
	return "base64:" + base64.StdEncoding.EncodeToString(v)
}

// jsonDoc returns v compacted if it is a JSON object or array: the values
// the tool shows as JSON, found by looking (no flag). A JSON number or
// string is left as text: "100" is as likely StringCodec's text as
// JSONCodec's number, and shows the same either way.
func jsonDoc(v []byte) (json.RawMessage, bool) {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || t[0] != '{' && t[0] != '[' || !json.Valid(t) {
		return nil, false
	}
	var b bytes.Buffer
	if json.Compact(&b, t) != nil {
		return nil, false
	}
	return b.Bytes(), true
}

// textWord shows a key, or an annotation's key or value, in text output:
// as it is, or quoted (Go syntax) if it is empty, "-", not UTF-8, or holds
// a space, a quote, an "=" or anything unprintable.
func textWord(s string) string {
	if s == "" || s == "-" || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '"' || r == '=' || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}

// textAnnotations shows annotations as key=value pairs in key order.
func textAnnotations(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, textWord(k)+"="+textWord(m[k]))
	}
	return strings.Join(parts, " ")
}

// jsonEntry is an entry in --json output. Key is absent inside a diff's
// before and after; a key or value that is not UTF-8 is given in base64
// instead (key_base64, value_base64). Deletes and expiries have no value;
// expires_at and annotations are absent when there are none.
type jsonEntry struct {
	Key         *string           `json:"key,omitempty"`
	KeyBase64   string            `json:"key_base64,omitempty"`
	Rev         revkv.Revision    `json:"rev"`
	Op          string            `json:"op,omitempty"`
	Time        string            `json:"time,omitempty"`
	Value       *string           `json:"value,omitempty"`
	ValueJSON   json.RawMessage   `json:"value_json,omitempty"`
	ValueBase64 string            `json:"value_base64,omitempty"`
	ExpiresAt   string            `json:"expires_at,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// entryJSON is e as --json shows it, with its revision's annotations.
func entryJSON(e revkv.Entry[[]byte], ann map[string]string) jsonEntry {
	j := versionJSON(e)
	j.Op = e.Op.String()
	j.Key, j.KeyBase64 = keyJSON(e.Key)
	j.Annotations = ann
	return j
}

// keyJSON is a key in --json output: itself if it is UTF-8, else base64.
func keyJSON(key string) (*string, string) {
	if utf8.ValidString(key) {
		return &key, ""
	}
	return nil, base64.StdEncoding.EncodeToString([]byte(key))
}

// versionJSON is e without its key and op: a diff's before or after.
func versionJSON(e revkv.Entry[[]byte]) jsonEntry {
	j := jsonEntry{Rev: e.Rev, Time: showTime(e.Time), ExpiresAt: showTime(e.ExpiresAt)}
	if e.Op == revkv.OpPut {
		if doc, ok := jsonDoc(e.Value); ok {
			j.ValueJSON = doc
		} else if utf8.Valid(e.Value) {
			v := string(e.Value)
			j.Value = &v
		} else {
			j.ValueBase64 = base64.StdEncoding.EncodeToString(e.Value)
		}
	}
	return j
}

// entryValue is e's value in a table: "-" for a delete or an expiry.
func entryValue(e revkv.Entry[[]byte]) string {
	if e.Op != revkv.OpPut {
		return "-"
	}
	return textValue(e.Value)
}

// writeJSON writes v as one line of JSON.
func (c *cli) writeJSON(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes aligned rows of text cells under a header, if any, written
// with the first row (an empty listing prints nothing). So that a listing of
// millions of rows streams, columns are aligned in blocks of blockRows.
type table struct {
	w      io.Writer
	tw     *tabwriter.Writer
	header []string
	rows   int
}

const blockRows = 1000

func newTable(w io.Writer, header ...string) *table {
	return &table{w: w, tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), header: header}
}

func (t *table) row(cells ...string) error {
	if t.rows == 0 && t.header != nil {
		t.line(t.header)
	}
	t.line(cells)
	if t.rows++; t.rows%blockRows == 0 {
		return t.tw.Flush()
	}
	return nil
}

func (t *table) line(cells []string) {
	io.WriteString(t.tw, strings.Join(cells, "\t")+"\n")
}

func (t *table) flush() error { return t.tw.Flush() }

// fields writes label/value lines with the values aligned: info, get and
// verify in text.
func fields(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		io.WriteString(tw, kv[i]+"\t"+kv[i+1]+"\n")
	}
	return tw.Flush()
}
