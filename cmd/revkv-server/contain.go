package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// A panic in a command (a bug: no input should cause one) is contained to
// the command: its reply so far is dropped and replaced by -ERR internal
// error, the connection goes on, and every other one never notices. The
// store makes this safe: an Update whose function panics writes nothing,
// and each other store call is atomic, so a command's write is whole or
// not at all. EXEC's commands run in one Update: a panic in one of them
// writes none of them.

const errInternal = "ERR internal error"

// contain, deferred by whoever runs commands for c, recovers a panic of
// theirs: it drops what they built after mark and writes replies errors in
// its place (one per command the client awaits an answer to).
func (s *server) contain(c *client, mark, replies int) {
	p := recover()
	if p == nil {
		return
	}
	if mark <= c.w.Len() { // a command that flushed (REVKV.WATCH) left nothing to drop
		c.w.Truncate(mark)
	}
	for range replies {
		c.w.Error(errInternal)
	}
	s.recovered(c, p)
}

// recovered counts a recovered panic and logs it, with its stack, the
// first time it comes from a place in the code: a client repeating the
// command that panics does not flood the log.
func (s *server) recovered(c *client, p any) {
	s.stats.panics.Add(1)
	site := panicSite()
	if !s.panicSites.first(site) {
		return
	}
	s.log.Error("recovered from a panic in a command: replied ERR internal error",
		"client", c.id, "addr", c.addr, "panic", fmt.Sprint(p), "site", site, "stack", string(debug.Stack()))
}

// panicSite names where the panic being recovered began: the first frame
// below the deferred call that is not the runtime's.
func panicSite() string {
	var pcs [32]uintptr
	n := runtime.Callers(4, pcs[:]) // runtime.Callers, panicSite, recovered, its deferred caller
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if f.Function != "" && !isRuntime(f.Function) {
			return fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}

func isRuntime(fn string) bool { return strings.HasPrefix(fn, "runtime.") }

// sites remembers the places panics came from, up to a bound: past it, no
// more are logged (INFO's panics_recovered still counts them).
type sites struct {
	mu   sync.Mutex // guards seen
	seen map[string]struct{}
}

// maxSites bounds the sites remembered.
const maxSites = 64

// first reports whether site is new, remembering it.
func (ss *sites) first(site string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.seen[site]; ok || len(ss.seen) >= maxSites {
		return false
	}
	if ss.seen == nil {
		ss.seen = map[string]struct{}{}
	}
	ss.seen[site] = struct{}{}
	return true
}
