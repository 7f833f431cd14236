package web

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/revkv/revkv"
)

// eventEvery is how often at most the page is told of new revisions.
const eventEvery = 200 * time.Millisecond

// streamStarted, when set (by tests), runs after the stream's headers are
// sent and before its watch starts: a revision committed there must still
// be told.
var streamStarted func()

// keepalive is how often an idle stream sends a comment, so that proxies
// keep it open.
const keepalive = 15 * time.Second

// apiEvents streams, for a live store, a "revision" event ({rev, keys:
// the keys written since the last event, at most 100, and more: whether
// there were others}) at most every eventEvery while revisions are
// committed. It follows the store with Watch from the revision after the
// one that was latest when the request came, so that a revision committed
// while the stream starts is told too.
func (h *Handler) apiEvents(w http.ResponseWriter, r *http.Request) {
	if !h.opts.Live {
		h.fail(w, http.StatusNotFound, "this store does not change while it is served: there are no new revisions to follow")
		return
	}
	from := h.s.Rev() + 1
	ev, ok := startEvents(w)
	if !ok {
		h.fail(w, http.StatusInternalServerError, "this connection cannot stream")
		return
	}
	if streamStarted != nil {
		streamStarted()
	}
	ctx, cancel := context.WithCancel(r.Context())
	var mu sync.Mutex // guards what the watch gathered since the last event
	var rev revkv.Revision
	var keys []string
	var more bool
	var werr error
	ended := make(chan struct{})
	defer func() { cancel(); <-ended }() // nothing of the stream outlives it
	go func() {
		defer close(ended)
		seen := map[string]bool{}
		for e, err := range h.s.Watch(ctx, "", from) {
			mu.Lock()
			if err != nil {
				werr = err
				mu.Unlock()
				return
			}
			if len(keys) == 0 {
				clear(seen)
			}
			rev = e.Rev
			if !seen[e.Key] && !h.hidden(e.Key) {
				if len(keys) < 100 {
					seen[e.Key] = true
					keys = append(keys, e.Key)
				} else {
					more = true
				}
			}
			mu.Unlock()
		}
	}()
	tick := time.NewTicker(eventEvery)
	defer tick.Stop()
	sent, quiet := revkv.Revision(0), time.Now()
	for {
		select {
		case <-ended:
			if ctx.Err() == nil {
				ev.send("failure", map[string]string{"error": fmt.Sprint(werr)})
			}
			return
		case <-tick.C:
		}
		mu.Lock()
		r, ks, m := rev, keys, more
		keys, more = nil, false
		mu.Unlock()
		switch {
		case r > sent:
			if ev.send("revision", map[string]any{"rev": r, "keys": ks, "more": m}) != nil {
				return
			}
			sent, quiet = r, time.Now()
		case time.Since(quiet) > keepalive:
			if _, err := fmt.Fprint(w, ": still here\n\n"); err != nil {
				return
			}
			ev.f.Flush()
			quiet = time.Now()
		}
	}
}
