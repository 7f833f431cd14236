package web

import (
	"fmt"
	"iter"
	"net/http"
	"sort"
	"strconv"

	"github.com/revkv/revkv"
)

// histCache holds the last key's history read whole, at the store's
// revision then: zooming and paging through one key's timeline reads it
// once.
type histCache struct {
	key     string
	head    revkv.Revision
	entries []Entry
}

// historyRange yields key's retained entries with from <= Rev <= to (to
// <= 0: up to the latest), oldest first, as Store.HistoryRange does. The
// timeline counts a key's entries and pages and zooms through them, so it
// reads History once per key and revision and keeps the last key's copy,
// where HistoryRange would read the history again at each request.
func (h *Handler) historyRange(key string, from, to revkv.Revision) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		es := h.keyHistory(key)
		if to <= 0 {
			to = h.s.Rev()
		}
		i := sort.Search(len(es), func(i int) bool { return es[i].Rev >= from })
		for ; i < len(es) && es[i].Rev <= to; i++ {
			if !yield(es[i], nil) {
				return
			}
		}
	}
}

// keyHistory is History(key), read once per key and revision.
func (h *Handler) keyHistory(key string) []Entry {
	head := h.s.Rev()
	h.mu.Lock()
	c := h.hist
	h.mu.Unlock()
	if c.entries != nil && c.key == key && c.head == head {
		return c.entries
	}
	es := h.s.History(key)
	h.mu.Lock()
	h.hist = histCache{key: key, head: head, entries: es}
	h.mu.Unlock()
	return es
}

// keySpan is what the key's history holds: how many entries, the first
// and the last.
type keySpan struct {
	N           int
	First, Last Entry
}

func (h *Handler) span(key string) (keySpan, error) {
	var sp keySpan
	for e, err := range h.historyRange(key, 0, 0) {
		if err != nil {
			return sp, err
		}
		if sp.N == 0 {
			sp.First = e
		}
		sp.Last = e
		sp.N++
	}
	if sp.N == 0 {
		return sp, errorf(http.StatusNotFound, "key %q has no history here (never written, or its history is gone)", key)
	}
	return sp, nil
}

// apiHistory: a page of a key's entries, oldest first, from a revision
// on.
func (h *Handler) apiHistory(r *http.Request) (any, error) {
	key, err := keyParam(r, "key", true)
	if err != nil {
		return nil, err
	}
	from, err := revParam(r, "from", 0)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(r, "limit", defLimit, maxLimit)
	if err != nil {
		return nil, err
	}
	sp, err := h.span(key)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"key": key, "count": sp.N, "first_rev": sp.First.Rev, "last_rev": sp.Last.Rev}
	entries := []jsonEntry{}
	for e, err := range h.historyRange(key, from, 0) {
		if err != nil {
			return nil, storeError(err, "the history of "+strconv.Quote(key))
		}
		if len(entries) == limit {
			out["next_from"] = e.Rev
			break
		}
		entries = append(entries, h.entryJSON(e, false, true))
	}
	out["entries"] = entries
	return out, nil
}

// timelineMark is an entry on the timeline: for a put, NextNS is when the
// key's next entry took the value's place ("" while it is the latest).
type timelineMark struct {
	jsonEntry
	NextNS string `json:"next_ns,omitempty"`
}

// timelineBin counts the entries of one column of a dense timeline.
type timelineBin struct {
	T0NS    string         `json:"t0_ns"`
	T1NS    string         `json:"t1_ns"`
	FromRev revkv.Revision `json:"from_rev"`
	ToRev   revkv.Revision `json:"to_rev"`
	Puts    int            `json:"puts"`
	Deletes int            `json:"deletes"`
	Expires int            `json:"expires"`
}

// apiTimeline: the entries of a key between two revisions, as marks when
// there are at most max of them, else counted in columns of time that the
// page draws as bars and zooms into. Either way it holds only the window
// asked for.
func (h *Handler) apiTimeline(r *http.Request) (any, error) {
	key, err := keyParam(r, "key", true)
	if err != nil {
		return nil, err
	}
	from, err := revParam(r, "from", 0)
	if err != nil {
		return nil, err
	}
	to, err := revParam(r, "to", 0)
	if err != nil {
		return nil, err
	}
	if to > 0 && from > to {
		return nil, badRequest("from=%d is after to=%d", from, to)
	}
	most, err := intParam(r, "max", defMarks, maxMarks)
	if err != nil {
		return nil, err
	}
	sp, err := h.span(key)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"key": key, "count": sp.N, "first_rev": sp.First.Rev, "last_rev": sp.Last.Rev, "head": h.s.Rev()}
	// First pass: how many, of which kind, and when.
	var n, puts, deletes, expires int
	var first, last Entry
	for e := range h.historyRange(key, from, to) {
		if n == 0 {
			first = e
		}
		last = e
		n++
		switch e.Op {
		case revkv.OpPut:
			puts++
		case revkv.OpDelete:
			deletes++
		case revkv.OpExpire:
			expires++
		}
	}
	out["window"] = map[string]any{"from_rev": first.Rev, "to_rev": last.Rev, "n": n, "puts": puts, "deletes": deletes, "expires": expires}
	if n == 0 {
		out["marks"] = []timelineMark{}
		return out, nil
	}
	t0, t1 := first.Time.UnixNano(), last.Time.UnixNano()
	out["t0_ns"], out["t1_ns"] = strconv.FormatInt(t0, 10), strconv.FormatInt(t1, 10)
	if n <= most {
		out["marks"] = h.marks(key, first.Rev, last.Rev, n)
		return out, nil
	}
	out["bins"] = h.bins(key, first.Rev, last.Rev, t0, t1)
	return out, nil
}

// marks are the n entries of key from..to, each put with when the next
// entry replaced it.
func (h *Handler) marks(key string, from, to revkv.Revision, n int) []timelineMark {
	ms := make([]timelineMark, 0, n)
	for e := range h.historyRange(key, from, 0) {
		if len(ms) > 0 {
			if p := &ms[len(ms)-1]; p.Op == "put" {
				p.NextNS = strconv.FormatInt(e.Time.UnixNano(), 10)
			}
		}
		if e.Rev > to {
			break
		}
		ms = append(ms, timelineMark{jsonEntry: h.entryJSON(e, false, true)})
	}
	return ms
}

// bins counts the entries of key from..to in equal columns of time from
// t0 to t1.
func (h *Handler) bins(key string, from, to revkv.Revision, t0, t1 int64) []timelineBin {
	bs := make([]timelineBin, bins)
	w := max((t1-t0)/bins+1, 1)
	for i := range bs {
		bs[i].T0NS = strconv.FormatInt(t0+int64(i)*w, 10)
		bs[i].T1NS = strconv.FormatInt(t0+int64(i+1)*w-1, 10)
	}
	for e := range h.historyRange(key, from, to) {
		i := min(int((e.Time.UnixNano()-t0)/w), bins-1)
		b := &bs[i]
		if b.FromRev == 0 {
			b.FromRev = e.Rev
		}
		b.ToRev = e.Rev
		switch e.Op {
		case revkv.OpPut:
			b.Puts++
		case revkv.OpDelete:
			b.Deletes++
		case revkv.OpExpire:
			b.Expires++
		}
	}
	return bs
}

// entryAt is key's entry made at revision rev.
func (h *Handler) entryAt(r *http.Request) (Entry, error) {
	key, err := keyParam(r, "key", true)
	if err != nil {
		return Entry{}, err
	}
	rev, err := h.headRev(r, "rev", 0)
	if err != nil {
		return Entry{}, err
	}
	if r.URL.Query().Get("rev") == "" {
		return Entry{}, badRequest("rev is missing")
	}
	for e := range h.historyRange(key, rev, rev) {
		return e, nil
	}
	if _, err := h.span(key); err != nil {
		return Entry{}, err
	}
	return Entry{}, errorf(http.StatusNotFound, "key %q has no entry made at revision %d", key, rev)
}

// apiEntry: one entry, its value whole if whole=1.
func (h *Handler) apiEntry(r *http.Request) (any, error) {
	e, err := h.entryAt(r)
	if err != nil {
		return nil, err
	}
	return h.entryJSON(e, r.URL.Query().Get("whole") == "1", true), nil
}

// apiValue: one entry's value, its bytes as they are, as a download.
func (h *Handler) apiValue(w http.ResponseWriter, r *http.Request) {
	e, err := h.entryAt(r)
	if err == nil && e.Op != revkv.OpPut {
		err = errorf(http.StatusNotFound, "revision %d %ss the key: it has no value", e.Rev, opNames[e.Op])
	}
	if err != nil {
		h.failErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="value-%d.bin"`, e.Rev))
	w.Header().Set("Content-Length", strconv.Itoa(len(e.Value)))
	w.Write(e.Value)
}
