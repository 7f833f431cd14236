package web

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/revkv/revkv"
)

// apiState: the live keys under a prefix as they were at a revision (rev)
// or a time (at, to the nanosecond), a page at a time, with how many there
// were.
func (h *Handler) apiState(r *http.Request) (any, error) {
	prefix, err := keyParam(r, "prefix", false)
	if err != nil {
		return nil, err
	}
	after, err := keyParam(r, "after", false)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(r, "limit", defLimit, maxLimit)
	if err != nil {
		return nil, err
	}
	at, byTime, err := timeParam(r, "at")
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	if byTime && q.Get("rev") != "" {
		return nil, badRequest("rev and at both say when: give one of them")
	}
	out := map[string]any{"prefix": prefix}
	var v *revkv.View[[]byte]
	if byTime {
		if v, err = h.s.AsOf(at); err != nil {
			return nil, storeError(err, "the state as of "+fmtTime(at))
		}
		out["at"], out["at_ns"] = fmtTime(at), strconv.FormatInt(at.UnixNano(), 10)
	} else {
		rev, err := h.headRev(r, "rev", h.s.Rev())
		if err != nil {
			return nil, err
		}
		if v, err = h.s.At(rev); err != nil {
			return nil, storeError(err, "the state at revision "+strconv.FormatInt(int64(rev), 10))
		}
	}
	defer v.Close()
	out["rev"] = v.Rev()
	if v.Rev() > 0 {
		if e, err := h.revEntry(v.Rev()); err == nil {
			out["time"], out["time_ns"] = fmtTime(e.Time), strconv.FormatInt(e.Time.UnixNano(), 10)
		}
	}
	keys, live := []jsonEntry{}, 0
	for k := range v.Scan(prefix) {
		if h.hidden(k) {
			continue
		}
		live++
		if after != "" && k <= after || len(keys) > limit {
			continue
		}
		if len(keys) == limit {
			out["next_after"] = keys[len(keys)-1].Key
			keys = append(keys, jsonEntry{}) // a marker: the page is full
			continue
		}
		if e, ok := v.Entry(k); ok {
			keys = append(keys, h.entryJSON(e, false, false))
		}
	}
	if len(keys) > limit {
		keys = keys[:limit]
	}
	out["live_keys"], out["keys"] = live, keys
	return out, nil
}

// jsonDiff is one key of a diff: how it changed, both entries (nil where
// the key was absent), and for a changed value the parts of each that
// differ.
type jsonDiff struct {
	Key    string     `json:"key"`
	KeyB64 string     `json:"key_b64,omitempty"`
	Kind   string     `json:"kind"` // added, changed, deleted or expired
	Before *jsonEntry `json:"before,omitempty"`
	After  *jsonEntry `json:"after,omitempty"`
	// End is the delete or expiry that ended the key, for those kinds.
	End        *jsonEntry `json:"end,omitempty"`
	BeforeDiff []span     `json:"before_diff,omitempty"`
	AfterDiff  []span     `json:"after_diff,omitempty"`
}

// apiDiff: the keys under a prefix whose entry at to is not the one at
// from, in key order, a page at a time, with the count of each kind.
func (h *Handler) apiDiff(r *http.Request) (any, error) {
	prefix, err := keyParam(r, "prefix", false)
	if err != nil {
		return nil, err
	}
	after, err := keyParam(r, "after", false)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(r, "limit", defLimit, maxLimit)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	if q.Get("from") == "" || q.Get("to") == "" {
		return nil, badRequest("from and to are both needed: the two revisions to compare")
	}
	from, err := h.headRev(r, "from", 0)
	if err != nil {
		return nil, err
	}
	to, err := h.headRev(r, "to", 0)
	if err != nil {
		return nil, err
	}
	if from > to {
		return nil, badRequest("from=%d is after to=%d: give the earlier revision first", from, to)
	}
	counts := map[string]int{"added": 0, "changed": 0, "deleted": 0, "expired": 0}
	changes := []jsonDiff{}
	out := map[string]any{"prefix": prefix, "from": from, "to": to}
	for d, err := range h.s.Diff(prefix, from, to) {
		if err != nil {
			return nil, storeError(err, "the diff from "+strconv.FormatInt(int64(from), 10))
		}
		if h.hidden(d.Key) {
			continue
		}
		kind := "changed"
		switch {
		case d.Before.Rev == 0:
			kind = "added"
		case d.After.Rev == 0:
			kind = "deleted"
			if end, ok := h.lastEntry(d.Key, to); ok && end.Op == revkv.OpExpire {
				kind = "expired"
			}
		}
		counts[kind]++
		if after != "" && d.Key <= after || len(changes) > limit {
			continue
		}
		if len(changes) == limit {
			out["next_after"] = changes[len(changes)-1].Key
			changes = append(changes, jsonDiff{})
			continue
		}
		changes = append(changes, h.diffJSON(d, kind, to))
	}
	if len(changes) > limit {
		changes = changes[:limit]
	}
	out["counts"], out["changes"] = counts, changes
	return out, nil
}

func (h *Handler) diffJSON(d revkv.KeyDiff[[]byte], kind string, to revkv.Revision) jsonDiff {
	j := jsonDiff{Key: d.Key, Kind: kind}
	if !utf8.ValidString(d.Key) {
		j.KeyB64 = h.entryJSON(Entry{Key: d.Key}, false, false).KeyB64
	}
	if d.Before.Rev != 0 {
		e := h.entryJSON(d.Before, false, true)
		j.Before = &e
	}
	if d.After.Rev != 0 {
		e := h.entryJSON(d.After, false, true)
		j.After = &e
	}
	if kind == "deleted" || kind == "expired" {
		if end, ok := h.lastEntry(d.Key, to); ok {
			e := h.entryJSON(end, false, true)
			j.End = &e
		}
	}
	if j.Before != nil && j.After != nil && j.Before.Value != nil && j.After.Value != nil {
		b, a := j.Before.Value, j.After.Value
		if b.Kind != "binary" && a.Kind != "binary" && !b.Cut && !a.Cut {
			j.BeforeDiff, j.AfterDiff = textDiff(b.Text, a.Text)
		}
	}
	return j
}

// lastEntry is key's last entry at or below rev.
func (h *Handler) lastEntry(key string, rev revkv.Revision) (Entry, bool) {
	var last Entry
	ok := false
	for e := range h.historyRange(key, 0, rev) {
		last, ok = e, true
	}
	return last, ok
}

// span is a piece of a value in a diff: Changed marks the part not in
// the other value.
type span struct {
	Text    string `json:"text"`
	Changed bool   `json:"changed,omitempty"`
}

// textDiff marks what differs between a and b: the lines that are not
// in their longest common subsequence of lines and, where lines replaced
// as many lines, pairing them in order, only the characters between each
// pair's common prefix and suffix. Past maxDiffLines lines each, everything between the common
// first and last lines is marked.
func textDiff(a, b string) (before, after []span) {
	la, lb := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	if len(la) > maxDiffLines || len(lb) > maxDiffLines {
		return affix(a, b)
	}
	// lcs[i][j]: the longest common subsequence of la[i:] and lb[j:].
	lcs := make([][]int32, len(la)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(lb)+1)
	}
	for i := len(la) - 1; i >= 0; i-- {
		for j := len(lb) - 1; j >= 0; j-- {
			if la[i] == lb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	var da, db []string // the lines removed and added since the last common one
	flush := func() {
		// Lines replaced one for one: only the characters that differ.
		n := min(len(da), len(db))
		for k := range n {
			x, y := affix(da[k], db[k])
			before, after = append(before, x...), append(after, y...)
		}
		if len(da) > n {
			before = append(before, span{strings.Join(da[n:], ""), true})
		}
		if len(db) > n {
			after = append(after, span{strings.Join(db[n:], ""), true})
		}
		da, db = nil, nil
	}
	for i < len(la) || j < len(lb) {
		switch {
		case i < len(la) && j < len(lb) && la[i] == lb[j]:
			flush()
			before, after = append(before, span{la[i], false}), append(after, span{lb[j], false})
			i, j = i+1, j+1
		case j == len(lb) || i < len(la) && lcs[i+1][j] >= lcs[i][j+1]:
			da = append(da, la[i])
			i++
		default:
			db = append(db, lb[j])
			j++
		}
	}
	flush()
	return before, after
}

const maxDiffLines = 2000

// affix marks the middle of a and b, between their common prefix and
// suffix (whole UTF-8 characters).
func affix(a, b string) (before, after []span) {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	for p > 0 && p < len(a) && !utf8.RuneStart(a[p]) {
		p--
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	for s > 0 && !utf8.RuneStart(a[len(a)-s]) {
		s--
	}
	mk := func(x string) []span {
		var out []span
		for _, sp := range []span{{x[:p], false}, {x[p : len(x)-s], true}, {x[len(x)-s:], false}} {
			if sp.Text != "" {
				out = append(out, sp)
			}
		}
		return out
	}
	return mk(a), mk(b)
}
