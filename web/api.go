package web

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/revkv/revkv"
)

// The API: every answer is JSON, every refusal too ({"error": ...,
// "status": ...}): 400 for a parameter that does not parse or asks too
// much, 404 for a key, revision, entry or path that is not there, 405 for
// a method other than GET and HEAD, 410 for history no longer kept.

// Limits on what one request may ask for.
const (
	maxKeyLen   = 64 << 10 // bytes of a key (or a prefix) in a request
	defLimit    = 100      // rows of a page of keys, state or diff
	maxLimit    = 1000
	defMarks    = 400 // a timeline's marks before it draws counts instead
	maxMarks    = 2000
	bins        = 120 // a dense timeline's columns
	maxStreamed = 2   // whole-history verifications at once
)

func (h *Handler) routeAPI() {
	for path, fn := range map[string]func(*http.Request) (any, error){
		"/api/info":     h.apiInfo,
		"/api/keys":     h.apiKeys,
		"/api/history":  h.apiHistory,
		"/api/timeline": h.apiTimeline,
		"/api/entry":    h.apiEntry,
		"/api/rev":      h.apiRev,
		"/api/state":    h.apiState,
		"/api/diff":     h.apiDiff,
		"/api/digest":   h.apiDigest,
		"/api/verify":   h.apiVerify,
	} {
		h.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			v, err := fn(r)
			if err != nil {
				h.failErr(w, err)
				return
			}
			h.writeJSON(w, http.StatusOK, v)
		})
	}
	h.mux.HandleFunc("/api/value", h.apiValue)
	h.mux.HandleFunc("/api/verify/all", h.apiVerifyAll)
	h.mux.HandleFunc("/api/events", h.apiEvents)
	h.mux.HandleFunc("/api/", h.notFound)
}

// apiError is a refusal with its status.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) error {
	return &apiError{status, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return errorf(http.StatusBadRequest, format, args...)
}

// storeError turns the store's error into a refusal: ErrFutureRevision
// 404, ErrCompacted 410.
func storeError(err error, what string) error {
	msg := strings.TrimPrefix(err.Error(), "revkv: ")
	switch {
	case errors.Is(err, revkv.ErrFutureRevision):
		return errorf(http.StatusNotFound, "%s is not there yet: %s", what, msg)
	case errors.Is(err, revkv.ErrCompacted):
		return errorf(http.StatusGone, "%s is no longer kept: %s", what, msg)
	case errors.Is(err, revkv.ErrClosed):
		return errorf(http.StatusServiceUnavailable, "the store is closed")
	}
	return err
}

func (h *Handler) failErr(w http.ResponseWriter, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		h.fail(w, ae.status, "%s", ae.msg)
		return
	}
	h.fail(w, http.StatusInternalServerError, "%s", strings.TrimPrefix(err.Error(), "revkv: "))
}

func (h *Handler) fail(w http.ResponseWriter, status int, format string, args ...any) {
	h.writeJSON(w, status, map[string]any{"error": fmt.Sprintf(format, args...), "status": status})
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.fail(w, http.StatusNotFound, "nothing here: %q is not a page or an API path", r.URL.Path)
}

func (h *Handler) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

// The parameters.

// keyParam is the key a request names: key, or key_b64 for one whose
// bytes are not UTF-8.
func keyParam(r *http.Request, name string, required bool) (string, error) {
	q := r.URL.Query()
	k, b64 := q.Get(name), q.Get(name+"_b64")
	if b64 != "" {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return "", badRequest("%s_b64 is not base64: %v", name, err)
		}
		k = string(b)
	}
	switch {
	case len(k) > maxKeyLen:
		return "", badRequest("%s is %d bytes long: at most %d are accepted", name, len(k), maxKeyLen)
	case required && k == "" && !q.Has(name) && b64 == "":
		return "", badRequest("%s is missing", name)
	}
	return k, nil
}

// revParam parses a revision: absent, def; else a whole number, 0 or
// more.
func revParam(r *http.Request, name string, def revkv.Revision) (revkv.Revision, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("%s=%q is not a revision (a whole number, 0 or more)", name, s)
	}
	return revkv.Revision(n), nil
}

// headRev is a revision parameter that must not be above the latest.
func (h *Handler) headRev(r *http.Request, name string, def revkv.Revision) (revkv.Revision, error) {
	rev, err := revParam(r, name, def)
	if err != nil {
		return 0, err
	}
	if head := h.s.Rev(); rev > head {
		return 0, errorf(http.StatusNotFound, "revision %d is not there yet: the latest is %d", rev, head)
	}
	return rev, nil
}

func intParam(r *http.Request, name string, def, most int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil || n < 1:
		return 0, badRequest("%s=%q is not a count (a whole number, 1 or more)", name, s)
	case n > most:
		return 0, badRequest("%s=%d is too many: at most %d", name, n, most)
	}
	return n, nil
}

// timeParam parses a time: RFC 3339, its nanoseconds and offset kept, or
// Unix milliseconds (as cmd/revkv's TIME).
func timeParam(r *http.Request, name string) (time.Time, bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return time.Time{}, false, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), true, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false, badRequest("%s=%q is not a time (RFC 3339, as 2024-03-01T12:00:00.000000001Z, or Unix milliseconds)", name, s)
	}
	return t, true, nil
}

// apiInfo: the store's latest revision, its time, its floor, and what the
// page serves.
func (h *Handler) apiInfo(*http.Request) (any, error) {
	head := h.s.Rev()
	info := map[string]any{"title": h.opts.Title, "rev": head, "floor": h.s.Floor(), "live": h.opts.Live, "live_keys": h.s.Len()}
	if head > 0 {
		if e, err := h.revEntry(head); err == nil {
			info["time"], info["time_ns"] = fmtTime(e.Time), strconv.FormatInt(e.Time.UnixNano(), 10)
		}
	}
	_, _, err := h.s.Digest()
	info["chain"] = err == nil
	return info, nil
}

// revEntry is the entry revision rev made. Changes from one revision
// costs O(keys) to start, so the key is found first with Diff between the
// revision and the one before (after the first Diff has built its index,
// O(1)); Changes under that key alone then gives its entry.
func (h *Handler) revEntry(rev revkv.Revision) (Entry, error) {
	for d, err := range h.s.Diff("", rev-1, rev) {
		if err != nil {
			break // below the floor, say: Changes says what it can
		}
		for e, err := range h.s.Changes(d.Key, rev, rev) {
			if err == nil && e.Rev == rev && e.Key == d.Key {
				return e, nil
			}
			break
		}
		break
	}
	for e, err := range h.s.Changes("", rev, rev) {
		if err != nil {
			return Entry{}, storeError(err, fmt.Sprintf("revision %d", rev))
		}
		return e, nil
	}
	return Entry{}, errorf(http.StatusNotFound, "revision %d has no entry kept", rev)
}

// apiRev: the entry revision rev made, with its time (the page's slider
// turns a revision into a time with it).
func (h *Handler) apiRev(r *http.Request) (any, error) {
	rev, err := h.headRev(r, "rev", h.s.Rev())
	if err != nil {
		return nil, err
	}
	if rev == 0 {
		return map[string]any{"rev": 0}, nil
	}
	e, err := h.revEntry(rev)
	if err != nil {
		return nil, err
	}
	return h.entryJSON(e, false, true), nil
}
