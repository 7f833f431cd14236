package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/revkv/revkv"
)

// prefixCount is what history holds under a prefix up to a revision:
// each key ever written there (and still in history) with its number of
// entries and its last one. It is built by one walk of Changes and
// brought up to date by walking only what came after.
type prefixCount struct {
	prefix string
	rev    revkv.Revision // counted up to here
	floor  revkv.Revision // the store's floor when counting began
	keys   map[string]*keyCount
	sorted []string // the keys, in order; nil when a key was added since
	revs   int64    // entries counted
}

type keyCount struct {
	revs int64
	last Entry
}

// keepCounts is how many prefixes' counts the handler keeps.
const keepCounts = 4

// counts returns the counts under prefix at the latest revision.
func (h *Handler) counts(prefix string) (*prefixCount, error) {
	h.countsMu.Lock()
	defer h.countsMu.Unlock()
	var pc *prefixCount
	for i, c := range h.prefixes {
		if c.prefix == prefix {
			pc = c
			h.prefixes = slices.Delete(h.prefixes, i, i+1)
			break
		}
	}
	if floor := h.s.Floor(); pc == nil || pc.floor != floor { // a compaction drops what was counted
		pc = &prefixCount{prefix: prefix, floor: floor, keys: map[string]*keyCount{}}
	}
	if head := h.s.Rev(); pc.rev < head {
		if err := pc.walk(h.s, head, h.hidden); err != nil {
			return nil, err
		}
	}
	h.prefixes = slices.Insert(h.prefixes, 0, pc)
	if len(h.prefixes) > keepCounts {
		h.prefixes = h.prefixes[:keepCounts]
	}
	return pc, nil
}

// walk counts the entries after pc.rev up to head, leaving out those of
// hidden keys. A stretch trimmed away while it walks is skipped, from where
// Changes says it can go on.
func (pc *prefixCount) walk(s *Store, head revkv.Revision, hidden func(string) bool) error {
	from := max(pc.rev+1, s.Floor(), 1)
	for from <= head {
		restart := revkv.Revision(0)
		for e, err := range s.Changes(pc.prefix, from, head) {
			if err != nil {
				var oe *revkv.OpError
				if errors.Is(err, revkv.ErrCompacted) && errors.As(err, &oe) && oe.Rev > from {
					restart = oe.Rev
					break
				}
				return storeError(err, "the history under "+strconv.Quote(pc.prefix))
			}
			from = e.Rev + 1
			if hidden(e.Key) {
				continue
			}
			kc := pc.keys[e.Key]
			if kc == nil {
				kc = &keyCount{}
				pc.keys[e.Key] = kc
				pc.sorted = nil
			}
			kc.revs++
			kc.last = e
			pc.revs++
		}
		if restart == 0 {
			break
		}
		from = restart
	}
	pc.rev = head
	if pc.sorted == nil {
		pc.sorted = make([]string, 0, len(pc.keys))
		for k := range pc.keys {
			pc.sorted = append(pc.sorted, k)
		}
		slices.Sort(pc.sorted)
	}
	return nil
}

// jsonKey is one key of the keys view.
type jsonKey struct {
	Key       string         `json:"key"`
	KeyB64    string         `json:"key_b64,omitempty"`
	Live      bool           `json:"live"`
	Revisions int64          `json:"revisions"`
	LastRev   revkv.Revision `json:"last_rev"`
	LastOp    string         `json:"last_op"`
	LastTime  string         `json:"last_time"`
	ExpiresAt string         `json:"expires_at,omitempty"`
}

// apiKeys: the keys under a prefix whose name holds q, a page of them at a
// time, with how many keys are live there and how many revisions history
// holds there.
func (h *Handler) apiKeys(r *http.Request) (any, error) {
	prefix, err := keyParam(r, "prefix", false)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query().Get("q")
	if len(q) > maxKeyLen {
		return nil, badRequest("q is %d bytes long: at most %d are accepted", len(q), maxKeyLen)
	}
	after, err := keyParam(r, "after", false)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(r, "limit", defLimit, maxLimit)
	if err != nil {
		return nil, err
	}
	pc, err := h.counts(prefix)
	if err != nil {
		return nil, err
	}
	live := 0
	for k := range h.s.Scan(prefix) {
		if !h.hidden(k) {
			live++
		}
	}
	keys, matched := []jsonKey{}, 0
	var next string
	lq := strings.ToLower(q)
	for _, k := range pc.sorted {
		if q != "" && !strings.Contains(strings.ToLower(k), lq) {
			continue
		}
		matched++
		if after != "" && k <= after || next != "" {
			continue
		}
		if len(keys) == limit {
			next = keys[len(keys)-1].Key
			continue
		}
		kc := pc.keys[k]
		e := h.entryJSON(kc.last, false, false)
		jk := jsonKey{Key: k, KeyB64: e.KeyB64, Revisions: kc.revs, LastRev: kc.last.Rev, LastOp: e.Op, LastTime: e.Time}
		if le, ok := h.s.GetEntry(k); ok {
			jk.Live = true
			if !le.ExpiresAt.IsZero() {
				jk.ExpiresAt = fmtTime(le.ExpiresAt)
			}
		}
		keys = append(keys, jk)
	}
	out := map[string]any{"prefix": prefix, "q": q, "rev": pc.rev, "live_keys": live, "revisions": pc.revs,
		"keys_total": len(pc.keys), "matched": matched, "keys": keys, "children": children(pc.sorted, prefix)}
	if next != "" {
		out["next_after"] = next
	}
	return out, nil
}

// maxChildren is how many of a prefix's sub-prefixes the keys view lists.
const maxChildren = 200

// jsonChild is a prefix one level below another: what follows it up to
// and with the next "/", and how many keys in history are under it.
type jsonChild struct {
	Prefix string `json:"prefix"`
	Keys   int    `json:"keys"`
}

// children lists the prefixes one "/" below prefix among the sorted keys
// (at most maxChildren), for browsing a key space like folders.
func children(sorted []string, prefix string) []jsonChild {
	out := []jsonChild{}
	for _, k := range sorted {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			continue
		}
		p := prefix + rest[:i+1]
		if n := len(out); n > 0 && out[n-1].Prefix == p {
			out[n-1].Keys++
			continue
		}
		if len(out) == maxChildren {
			break
		}
		out = append(out, jsonChild{Prefix: p, Keys: 1})
	}
	return out
}
