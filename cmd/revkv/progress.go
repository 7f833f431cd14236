package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/revkv/revkv"
)

// progressEvery is how often progress is shown, at most.
const progressEvery = 200 * time.Millisecond

// progress shows on stderr how far a long run has got: one line,
// rewritten in place at most every progressEvery, and erased when the run
// ends (done), so that what follows starts on a clean line. Its methods do
// nothing on a nil *progress, which is what runs get whose stderr is not a
// terminal. The store may call report from several goroutines.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	label string
	total revkv.Revision // the revision the run ends at, if known
	last  time.Time      // when the line was last written, or the run began
	shown bool           // the line is on the screen
}

// progress returns a reporter labelled label if stderr is a terminal, else
// nil.
func (c *cli) progress(label string) *progress {
	if !c.stderrTerm {
		return nil
	}
	return newProgress(c.stderr, label, c.now)
}

func newProgress(w io.Writer, label string, now func() time.Time) *progress {
	return &progress{w: w, now: now, label: label, last: now()}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// report shows that the run has reached rev, unless the line was written
// less than progressEvery ago (or the run began less than that ago: a
// short run shows nothing).
func (p *progress) report(rev revkv.Revision) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.now()
	if t.Sub(p.last) < progressEvery {
		return
	}
	p.last, p.shown = t, true
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r\x1b[K%s: revision %d of %d (%d%%)", p.label, rev, p.total, 100*min(rev, p.total)/p.total)
	} else {
		fmt.Fprintf(p.w, "\r\x1b[K%s: revision %d", p.label, rev)
	}
}

// next starts the next stage of the run under label, ending at total (0:
// not known).
func (p *progress) next(label string, total revkv.Revision) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.total, p.last = label, total, p.now()
}

// done erases the line, if one is shown.
func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
