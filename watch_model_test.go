package revkv_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// hwatch is a live Watch the randomised test follows: after every step it
// must have yielded exactly the model's Changes from where it stood to the
// latest revision, and ErrCompacted (then nothing) exactly when the model
// says an entry it needs is gone.
type hwatch struct {
	prefix string
	pos    int64 // the next revision it may yield
	next   func() (revkv.Entry[int], error, bool)
	stop   func()
	s      *revkv.Store[int] // the store it follows
}

// openWatch starts a watcher at a random prefix and revision (1..Rev()+1).
func (h *harness) openWatch() {
	p := testPrefixes[h.rng.Intn(len(testPrefixes))]
	from := 1 + h.rng.Int63n(h.m.rev()+1)
	next, stop := iter.Pull2(h.s.Watch(context.Background(), p, revkv.Revision(from)))
	h.watches = append(h.watches, &hwatch{prefix: p, pos: from, next: next, stop: stop, s: h.s})
	h.did("Watch(%q, %d)", p, from)
}

// closeWatch stops a random watcher, as breaking its loop would.
func (h *harness) closeWatch() {
	if len(h.watches) == 0 {
		return
	}
	i := h.rng.Intn(len(h.watches))
	h.watches[i].stop()
	h.did("stop Watch(%q) at %d", h.watches[i].prefix, h.watches[i].pos)
	h.watches = append(h.watches[:i], h.watches[i+1:]...)
}

// pullWatches takes from every watcher what the model says is there. Each
// entry is already visible, so a watcher that does not yield it at once
// hangs the test (go test's -timeout reports it).
func (h *harness) pullWatches() {
	kept := h.watches[:0]
	for _, w := range h.watches {
		if w.s != h.s {
			kept = append(kept, w) // the original store, during a crash check
			continue
		}
		head := h.m.rev()
		if w.pos > head {
			kept = append(kept, w)
			continue
		}
		what := fmt.Sprintf("Watch(%q) from %d to %d", w.prefix, w.pos, head)
		want, wantErr := h.m.Changes(w.prefix, revkv.Revision(w.pos), revkv.Revision(head))
		for _, e := range want {
			got, err, ok := h.pull(w, what)
			require.True(h.t, ok, "%s: ended early\n%s", what, h)
			require.NoError(h.t, err, "%s\n%s", what, h)
			h.eq(e, got, what)
		}
		if wantErr == nil {
			w.pos = head + 1
			kept = append(kept, w)
			continue
		}
		_, err, ok := h.pull(w, what)
		require.True(h.t, ok, "%s: ended without its error\n%s", what, h)
		h.sameErr(errKindRev(wantErr), err, what)
		var oe, ge *revkv.OpError
		if errors.As(wantErr, &oe) && errors.As(err, &ge) {
			h.eq(oe.Rev, ge.Rev, what+": restart revision")
		}
		_, _, ok = w.next()
		require.False(h.t, ok, "%s: goes on after its error", what)
		w.stop()
		h.did("%s ended: %v", what, err)
	}
	h.watches = kept
}

// pull takes w's next entry, failing the test with the trace if it does
// not come within 10 s (it is due at once: the model says it is there).
func (h *harness) pull(w *hwatch, what string) (revkv.Entry[int], error, bool) {
	type result struct {
		e   revkv.Entry[int]
		err error
		ok  bool
	}
	ch := make(chan result, 1)
	go func() {
		e, err, ok := w.next()
		ch <- result{e, err, ok}
	}()
	select {
	case r := <-ch:
		return r.e, r.err, r.ok
	case <-time.After(10 * time.Second):
		h.t.Fatalf("%s: nothing comes\n%s", what, h)
		return revkv.Entry[int]{}, nil, false
	}
}

// stopWatches ends every watcher: before the store closes, they must first
// have yielded everything (pullWatches), and then end cleanly.
func (h *harness) stopWatches() {
	for _, w := range h.watches {
		w.stop()
	}
	h.watches = nil
}
