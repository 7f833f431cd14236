package web

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/chain"
)

// noChain is what the page says of a store that keeps no hash chain.
const noChain = "this store keeps no hash chain (it is in memory, made by New): there is no digest to check"

// apiDigest: the latest revision and its digest.
func (h *Handler) apiDigest(*http.Request) (any, error) {
	rev, d, err := h.s.Digest()
	if errors.Is(err, errors.ErrUnsupported) {
		return map[string]any{"chain": false, "sentence": noChain}, nil
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"chain": true, "rev": rev, "digest": hex.EncodeToString(d[:])}, nil
}

// apiVerify: whether this history leads to digest at revision rev, in one
// sentence.
func (h *Handler) apiVerify(r *http.Request) (any, error) {
	q := r.URL.Query()
	if q.Get("rev") == "" || q.Get("digest") == "" {
		return nil, badRequest("rev and digest are both needed: the revision a digest was taken at, and the digest")
	}
	rev, err := revParam(r, "rev", 0)
	if err != nil {
		return nil, err
	}
	hexd := strings.ToLower(strings.TrimSpace(q.Get("digest")))
	want, err := hex.DecodeString(hexd)
	if err != nil || len(want) != 32 {
		return nil, badRequest("digest %q is not a digest: 64 hex digits are expected", q.Get("digest"))
	}
	head, headD, err := h.s.Digest()
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, errorf(http.StatusNotFound, "%s", noChain)
	}
	if err != nil {
		return nil, err
	}
	if rev > head {
		return nil, errorf(http.StatusNotFound, "Revision %d is not in this history yet: its latest revision is %d, so this digest cannot be checked here.", rev, head)
	}
	got, err := h.s.DigestAt(rev)
	if errors.Is(err, revkv.ErrCompacted) {
		return nil, errorf(http.StatusGone, "Revision %d is below this history's floor (%d): its digest is no longer kept, so this digest cannot be checked here.", rev, h.s.Floor())
	}
	if err != nil {
		return nil, storeError(err, fmt.Sprintf("the digest of revision %d", rev))
	}
	out := map[string]any{"rev": rev, "expected": hexd, "actual": hex.EncodeToString(got[:]),
		"head": head, "head_digest": hex.EncodeToString(headD[:]), "ok": hex.EncodeToString(got[:]) == hexd}
	if out["ok"] == true {
		out["sentence"] = fmt.Sprintf("Yes: this history leads to that digest — revision %d has digest %s, so nothing up to it was rewritten, and the history goes on from there to revision %d.", rev, hexd, head)
	} else {
		out["sentence"] = fmt.Sprintf("No: this history does not lead to that digest — revision %d has digest %s here, so revision %d or one before it differs from the history the digest was taken of.", rev, out["actual"], rev)
	}
	return out, nil
}

// rehashResult is the end of a whole-history verification.
type rehashResult struct {
	OK       bool           `json:"ok"`
	Sentence string         `json:"sentence"`
	From     revkv.Revision `json:"from"`
	Head     revkv.Revision `json:"head"`
	Digest   string         `json:"digest,omitempty"`
	Rehashed int64          `json:"rehashed"`
	// Gaps counts the stretches of revisions whose entries are trimmed
	// away: the chain is picked up again from the digest kept after each.
	Gaps int64 `json:"gaps"`
}

// rehash recomputes the hash chain from every revision the store holds,
// from its floor to its latest revision as it was when it began, each
// from the entry and annotations the page shows, and checks each link
// against the digest the store keeps (which Open checked against the
// directory's files). progress is called now and then with the revisions
// done and to do.
func (h *Handler) rehash(ctx context.Context, progress func(done, total int64)) (rehashResult, error) {
	head, headD, err := h.s.Digest()
	if err != nil {
		return rehashResult{}, err
	}
	from := max(h.s.Floor(), 1)
	res := rehashResult{From: from, Head: head, Digest: hex.EncodeToString(headD[:]), OK: true}
	var hasher chain.Hasher
	var link chain.Rev
	next := from // the revision the chain expects next
	var prev chain.Digest
	tick := time.Now()
	for next <= head {
		restart := revkv.Revision(0)
		for e, err := range h.s.Changes("", next, head) {
			if err != nil {
				var oe *revkv.OpError
				if errors.Is(err, revkv.ErrCompacted) && errors.As(err, &oe) && oe.Rev > next {
					restart = oe.Rev
					break
				}
				return res, err
			}
			if e.Rev != next || e.Rev == from { // the first, or after a gap: pick the chain up
				if e.Rev != from {
					res.Gaps++
				}
				if prev, err = h.s.DigestAt(e.Rev - 1); err != nil {
					return res, err
				}
			}
			notes, err := h.notesErr(e.Rev)
			if err != nil {
				return res, err
			}
			link = chain.Rev{Rev: int64(e.Rev), Key: e.Key, Op: uint8(e.Op), Sec: e.Time.Unix(), Nsec: int32(e.Time.Nanosecond()),
				Notes: sortedNotes(notes)}
			if !e.ExpiresAt.IsZero() {
				link.HasTTL, link.Expires = true, e.ExpiresAt.UnixNano()
			}
			if e.Op == revkv.OpPut {
				link.Value = e.Value
			}
			prev = hasher.Next(prev, &link)
			kept, err := h.s.DigestAt(e.Rev)
			if err != nil {
				return res, err
			}
			res.Rehashed++
			if kept != prev {
				res.OK = false
				res.Sentence = fmt.Sprintf("No: revision %d (key %q) does not hash to the digest kept for it: the history shown here is not the one the chain records.", e.Rev, e.Key)
				return res, nil
			}
			next = e.Rev + 1
			if res.Rehashed%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return res, err
				}
				if time.Since(tick) > 100*time.Millisecond {
					tick = time.Now()
					progress(int64(next-from), int64(head-from+1))
				}
			}
		}
		if restart == 0 {
			break
		}
		next = restart
	}
	progress(int64(head-from+1), int64(head-from+1))
	res.Sentence = fmt.Sprintf("Yes: every one of the %d revisions kept, from %d to %d, hashes to the digest the chain records, which ends in %s.", res.Rehashed, from, head, res.Digest)
	if res.Gaps > 0 {
		res.Sentence = fmt.Sprintf("Yes: every one of the %d revisions kept, from %d to %d, hashes to the digest the chain records (picked up again after %d trimmed stretches), which ends in %s.", res.Rehashed, from, head, res.Gaps, res.Digest)
	}
	return res, nil
}

// apiVerifyAll streams a whole-history verification as server-sent
// events: "progress" ({done, total}) now and then, then one "result" (a
// rehashResult) or "failure" ({error}).
func (h *Handler) apiVerifyAll(w http.ResponseWriter, r *http.Request) {
	if _, _, err := h.s.Digest(); errors.Is(err, errors.ErrUnsupported) {
		h.fail(w, http.StatusNotFound, "%s", noChain)
		return
	}
	h.mu.Lock()
	busy := h.verifyN >= maxStreamed
	if !busy {
		h.verifyN++
	}
	h.mu.Unlock()
	if busy {
		h.fail(w, http.StatusTooManyRequests, "%d verifications of the whole history are running already: try again when one ends", maxStreamed)
		return
	}
	defer func() { h.mu.Lock(); h.verifyN--; h.mu.Unlock() }()
	ev, ok := startEvents(w)
	if !ok {
		h.fail(w, http.StatusInternalServerError, "this connection cannot stream")
		return
	}
	res, err := h.rehash(r.Context(), func(done, total int64) {
		ev.send("progress", map[string]int64{"done": done, "total": total})
	})
	if err != nil {
		ev.send("failure", map[string]string{"error": strings.TrimPrefix(err.Error(), "revkv: ")})
		return
	}
	ev.send("result", res)
}

// events writes server-sent events.
type events struct {
	w http.ResponseWriter
	f http.Flusher
}

func startEvents(w http.ResponseWriter) (*events, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &events{w, f}, true
}

func (e *events) send(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}
