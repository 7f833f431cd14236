package web

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/revkv/revkv"
)

// cutAt is how many bytes of a value the page shows before it cuts it,
// with a link to see it whole.
const cutAt = 4096

// jsonValue is a value as the page shows it.
type jsonValue struct {
	// Kind is "text", "json" (Text pretty-printed) or "binary" (Text in
	// hex, Base64 the bytes).
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Base64 string `json:"base64,omitempty"`
	Size   int    `json:"size"` // bytes of the whole value
	Cut    bool   `json:"cut"`  // Text shows only the first cutAt bytes
}

// renderValue shows v: JSON pretty-printed, other UTF-8 text as it is,
// anything else as hex and base64. Unless whole, cut at cutAt bytes.
func renderValue(v []byte, whole bool) jsonValue {
	out := jsonValue{Size: len(v)}
	cut := func(b []byte) []byte {
		if !whole && len(b) > cutAt {
			out.Cut = true
			b = b[:cutAt]
			for len(b) > 0 && !utf8.Valid(b) { // do not end inside a rune
				b = b[:len(b)-1]
			}
		}
		return b
	}
	switch {
	case isText(v):
		out.Kind = "text"
		if t := bytes.TrimSpace(v); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
			var pretty bytes.Buffer
			if json.Indent(&pretty, t, "", "  ") == nil {
				out.Kind = "json"
				v = pretty.Bytes()
			}
		}
		out.Text = string(cut(v))
	default:
		out.Kind = "binary"
		b := v
		if !whole && len(b) > cutAt/2 {
			b, out.Cut = b[:cutAt/2], true
		}
		out.Text = hex.EncodeToString(b)
		out.Base64 = base64.StdEncoding.EncodeToString(b)
	}
	return out
}

// isText says whether v is UTF-8 with no control characters but tab,
// newline and carriage return.
func isText(v []byte) bool {
	if !utf8.Valid(v) {
		return false
	}
	for _, r := range string(v) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

// jsonEntry is one entry of a key's history, as the API gives it. Times
// are RFC 3339 with nanoseconds, in UTC, and as Unix nanoseconds in a
// string (a JavaScript number cannot hold them exactly).
type jsonEntry struct {
	Key       string            `json:"key"`
	KeyB64    string            `json:"key_b64,omitempty"` // the key's bytes, when they are not UTF-8
	Rev       revkv.Revision    `json:"rev"`
	Op        string            `json:"op"` // put, delete or expire
	Time      string            `json:"time"`
	TimeNS    string            `json:"time_ns"`
	ExpiresAt string            `json:"expires_at,omitempty"`
	ExpiresNS string            `json:"expires_ns,omitempty"`
	Value     *jsonValue        `json:"value,omitempty"` // puts only
	Notes     map[string]string `json:"notes,omitempty"` // the revision's annotations
}

var opNames = map[revkv.Op]string{revkv.OpPut: "put", revkv.OpDelete: "delete", revkv.OpExpire: "expire"}

// fmtTime is t as the API writes it.
func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// entryJSON is e for the API: its value cut unless whole, with its
// revision's annotations when notes.
func (h *Handler) entryJSON(e Entry, whole, notes bool) jsonEntry {
	j := jsonEntry{Key: e.Key, Rev: e.Rev, Op: opNames[e.Op], Time: fmtTime(e.Time), TimeNS: strconv.FormatInt(e.Time.UnixNano(), 10)}
	if !utf8.ValidString(e.Key) {
		j.KeyB64 = base64.StdEncoding.EncodeToString([]byte(e.Key))
	}
	if !e.ExpiresAt.IsZero() {
		j.ExpiresAt, j.ExpiresNS = fmtTime(e.ExpiresAt), strconv.FormatInt(e.ExpiresAt.UnixNano(), 10)
	}
	if e.Op == revkv.OpPut {
		v := renderValue(e.Value, whole)
		j.Value = &v
	}
	if notes {
		j.Notes = h.notes(e.Rev)
	}
	return j
}

// notes returns rev's annotations, nil if it has none or they are gone.
func (h *Handler) notes(rev revkv.Revision) map[string]string {
	m, err := h.s.Annotations(rev)
	if err != nil {
		return nil
	}
	return m
}

// sortedNotes returns m as key, value pairs in key order (the chain's
// order).
func sortedNotes(m map[string]string) []string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, k, m[k])
	}
	return kv
}

// notesErr is Annotations' error for rev, ignoring a store that keeps
// none.
func (h *Handler) notesErr(rev revkv.Revision) (map[string]string, error) {
	m, err := h.s.Annotations(rev)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil
	}
	return m, err
}
