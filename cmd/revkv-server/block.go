package main

import (
	"errors"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/revkv/revkv"
)

// Blocking pops and moves (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
// BZPOPMIN, BZPOPMAX, BZMPOP). A command that finds nothing waits, in
// the order clients blocked; after every write command, before its writer
// goes on, each waiting client in that order tries its command again (one
// Update each), until a round serves none: so, as in Redis, a client
// blocked on a key is served before any other command runs on the
// writer's connection, and the first to block is served first. Inside
// MULTI a blocking command does not block: it answers as if it timed out,
// as Redis's does.

// blocking is the server's waiting clients.
type blocking struct {
	mu      sync.Mutex // guards waiters
	waiters []*waiter
	n       atomic.Int32 // len(waiters), read without the lock by every write
	blocked atomic.Int32 // clients waiting past their first attempt: INFO's blocked_clients
	round   sync.Mutex   // one round of retries at a time
	// admitted is signalled (with mu) when a waiter's first attempt is
	// done or it leaves: later ones wait for earlier ones (block).
	admitted *sync.Cond
	closed   chan struct{}
}

type waiter struct {
	at       time.Time // when its command was read
	admitted bool      // its first attempt is done; guarded by blocking.mu
	id       int64     // its client's
	try      chan struct{}
	done     chan bool
	gone     chan struct{}
}

// wake runs rounds of retries while one serves a client.
func (b *blocking) wake() {
	if b.n.Load() == 0 {
		return
	}
	b.round.Lock()
	defer b.round.Unlock()
	for served := true; served; {
		served = false
		b.mu.Lock()
		ws := append([]*waiter(nil), b.waiters...)
		b.mu.Unlock()
		for _, w := range ws {
			select {
			case w.try <- struct{}{}:
				select {
				case ok := <-w.done:
					served = served || ok
				case <-w.gone:
				}
			case <-w.gone:
			}
		}
	}
}

func (b *blocking) remove(w *waiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.n.Store(int32(len(b.waiters)))
	close(w.gone)
	b.cond().Broadcast()
}

func (b *blocking) cond() *sync.Cond {
	if b.admitted == nil {
		b.admitted = sync.NewCond(&b.mu)
	}
	return b.admitted
}

// before orders waiters: by when their commands were read, and commands
// read within admitDelay of each other, which Redis would read in one
// turn of its loop, by their clients' connection order.
func (w *waiter) before(x *waiter) bool {
	if d := w.at.Sub(x.at); d > admitDelay || d < -admitDelay {
		return d < 0
	}
	return w.id < x.id
}

// admitDelay is how long a blocking command waits, from when it was read,
// before its first attempt: time for the goroutines of commands read just
// before it to queue, so that first attempts too go in the order the
// commands were read (two clients blocking on a key, then a push, are
// served first to last, as Redis serves them).
const admitDelay = 300 * time.Microsecond

// admit runs w's first attempt once every waiter whose command was read
// before w's has run its own.
func (b *blocking) admit(w *waiter, first func() bool) bool {
	time.Sleep(time.Until(w.at.Add(admitDelay)))
	b.mu.Lock()
	for b.earlierPending(w) {
		b.cond().Wait()
	}
	b.mu.Unlock()
	served := first()
	b.mu.Lock()
	w.admitted = true
	b.cond().Broadcast()
	b.mu.Unlock()
	return served
}

// earlierPending reports whether a waiter queued before w has not run its
// first attempt yet. b.mu is held.
func (b *blocking) earlierPending(w *waiter) bool {
	for _, x := range b.waiters {
		if x == w {
			return false
		}
		if !x.admitted {
			return true
		}
	}
	return false
}

// block runs attempt (which replies and reports true when it served the
// client, or replies nothing and reports false) now, then at each retry,
// until it serves or timeout passes (0: forever), when it replies a null
// array as Redis does.
func (s *server) block(c *client, timeout time.Duration, attempt func(tx *revkv.Txn[[]byte]) bool) {
	// Registered before the first attempt: a write between the two would
	// otherwise wake no one.
	b := &s.blocking
	w := &waiter{at: c.readAt, id: c.id, try: make(chan struct{}), done: make(chan bool, 1), gone: make(chan struct{})}
	b.mu.Lock()
	// In the order the commands were read, not the order their goroutines
	// got here: two clients blocking at once are served as Redis, reading
	// one command at a time, would serve them.
	i := len(b.waiters)
	for i > 0 && w.before(b.waiters[i-1]) {
		i--
	}
	b.waiters = slices.Insert(b.waiters, i, w)
	b.n.Store(int32(len(b.waiters)))
	b.mu.Unlock()
	defer b.remove(w)
	if b.admit(w, func() bool { return s.tryBlocked(c, attempt, true) }) {
		return
	}
	b.blocked.Add(1)
	defer b.blocked.Add(-1)
	select { // an unblock meant for an earlier command
	case <-c.unblock:
	default:
	}
	c.blockedNow.Store(true)
	defer c.blockedNow.Store(false)
	gone, stop := c.watchClose()
	defer stop()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-w.try:
			ok := s.tryBlocked(c, attempt, false)
			w.done <- ok
			if ok {
				return
			}
		case <-expired:
			c.w.NullArray()
			return
		case <-b.closed:
			c.w.NullArray()
			return
		case <-gone: // the client closed the connection: no one to answer
			return
		case how := <-c.unblock:
			if how == "error" {
				c.w.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
			} else {
				c.w.NullArray()
			}
			return
		}
	}
}

// tryBlocked runs attempt in an Update. After the first attempt, a key
// waited on that holds another type is passed over (c.retrying), as in
// Redis, where only a key of the awaited type wakes a blocked client.
func (s *server) tryBlocked(c *client, attempt func(tx *revkv.Txn[[]byte]) bool, first bool) bool {
	mark := c.w.Len()
	served := false
	c.retrying = !first
	defer func() { c.retrying = false }()
	_, err := s.updateZ(c, func(tx *revkv.Txn[[]byte]) error {
		served = attempt(tx)
		return nil
	})
	if err != nil {
		c.w.Truncate(mark)
		c.w.Error(storeError(err))
		return true
	}
	return served // the reply goes out with the client's next flush: a slow reader never holds up a round
}

// timeoutArg parses a blocking command's timeout in seconds (a float, as
// Redis 6 on takes it).
func timeoutArg(c *client, b []byte) (time.Duration, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f*1000 > math.MaxInt64/2 {
		c.w.Error("ERR timeout is not a float or out of range")
		return 0, false
	}
	if f < 0 {
		c.w.Error("ERR timeout is negative")
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

func init() {
	register(
		blockingCmd("blpop", -3, func(c *client, tx *revkv.Txn[[]byte], a [][]byte) bool { return bpop(c, tx, a, true) }),
		blockingCmd("brpop", -3, func(c *client, tx *revkv.Txn[[]byte], a [][]byte) bool { return bpop(c, tx, a, false) }),
		blockingCmd("bzpopmin", -3, func(c *client, tx *revkv.Txn[[]byte], a [][]byte) bool { return bzpop(c, tx, a, false) }),
		blockingCmd("bzpopmax", -3, func(c *client, tx *revkv.Txn[[]byte], a [][]byte) bool { return bzpop(c, tx, a, true) }),
		blockingCmd("blmove", 6, func(c *client, tx *revkv.Txn[[]byte], a [][]byte) bool {
			from, _ := side(a[3])
			to, _ := side(a[4])
			v, done := lmove(c, tx, string(a[1]), string(a[2]), from, to)
			if v != nil {
				c.w.Bulk(v)
			}
			return !done || v != nil
		}),
		blockingCmd("brpoplpush", 4, func(c *client, tx *revkv.Txn[[]byte], a [][]byte) bool {
			v, done := lmove(c, tx, string(a[1]), string(a[2]), false, true)
			if v != nil {
				c.w.Bulk(v)
			}
			return !done || v != nil
		}),
		blockingCmd("blmpop", -5, func(c *client, tx *revkv.Txn[[]byte], a [][]byte) bool {
			keys, dir, count, _ := mpopArgs(c, a, 2, "LEFT", "RIGHT")
			key, vals, done := lmpopFirst(c, tx, keys, dir == 0, count)
			if key != "" {
				lmpopReply(c, key, vals)
			}
			return !done || key != ""
		}),
		blockingCmd("bzmpop", -5, func(c *client, tx *revkv.Txn[[]byte], a [][]byte) bool {
			keys, dir, count, _ := mpopArgs(c, a, 2, "MIN", "MAX")
			key, els, done := zmpopFirst(c, tx, keys, dir == 1, count)
			if key != "" {
				zmpopReply(c, key, els)
			}
			return !done || key != ""
		}),
	)
}

// blockingCmd makes a blocking command of attempt, which pops (and replies)
// or reports false having replied nothing (or replies an error and
// reports true). Its timeout is its last argument (BLMPOP's, BZMPOP's the
// first): checked, with the other arguments, before it blocks.
func blockingCmd(name string, arity int, attempt func(c *client, tx *revkv.Txn[[]byte], a [][]byte) bool) *command {
	check := func(c *client, a [][]byte) (time.Duration, bool) {
		at := len(a) - 1
		if name == "blmpop" || name == "bzmpop" {
			at = 1
		}
		t, ok := timeoutArg(c, a[at])
		if !ok {
			return 0, false
		}
		switch name {
		case "blmove":
			_, ok1 := side(a[3])
			_, ok2 := side(a[4])
			if !ok1 || !ok2 {
				c.w.Error(errSyntax)
				return 0, false
			}
		case "blmpop":
			_, _, _, ok = mpopArgs(c, a, 2, "LEFT", "RIGHT")
		case "bzmpop":
			_, _, _, ok = mpopArgs(c, a, 2, "MIN", "MAX")
		}
		return t, ok
	}
	return &command{name: name, arity: arity,
		conn: func(s *server, c *client, a [][]byte) {
			if t, ok := check(c, a); ok {
				s.block(c, t, func(tx *revkv.Txn[[]byte]) bool { return attempt(c, tx, a) })
			}
		},
		write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) { // in MULTI: never blocks
			if _, ok := check(c, a); ok && !attempt(c, tx, a) {
				c.w.NullArray()
			}
		},
	}
}

// bpop is BLPOP/BRPOP's attempt: [key, value] from the first non-empty list.
func bpop(c *client, tx *revkv.Txn[[]byte], a [][]byte, left bool) bool {
	key, vals, done := lmpopFirst(c, tx, a[1:len(a)-1], left, 1)
	if key != "" {
		c.w.Array(2)
		c.w.BulkString(key)
		c.w.Bulk(vals[0])
	}
	return !done || key != ""
}

// bzpop is BZPOPMIN/BZPOPMAX's attempt: [key, member, score].
func bzpop(c *client, tx *revkv.Txn[[]byte], a [][]byte, max bool) bool {
	key, els, done := zmpopFirst(c, tx, a[1:len(a)-1], max, 1)
	if key != "" {
		c.w.Array(3)
		c.w.BulkString(key)
		c.w.BulkString(els[0].member)
		c.w.Double(formatScore(els[0].score))
	}
	return !done || key != ""
}

// loadSource is load for a key a blocking command pops from: on a retry, a
// key of another type is passed over as empty.
func loadSource(c *client, tx *revkv.Txn[[]byte], key string, typ byte) *meta {
	if c.retrying {
		if t := typeOf(tx, key); t != "none" && t != typeName(typ) {
			return &meta{key: key, typ: typ}
		}
	}
	return load(c, tx, key, typ)
}

// connReader is a connection read through what was read from it while the
// client's goroutine waited in a blocking command.
type connReader struct {
	conn  net.Conn
	stash []byte
	err   error
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(r.stash) > 0 {
		n := copy(p, r.stash)
		r.stash = r.stash[n:]
		return n, nil
	}
	if r.err != nil {
		err := r.err
		r.err = nil
		return 0, err
	}
	return r.conn.Read(p)
}

// watchClose reads the connection while the client blocks, as Redis does,
// keeping what comes for after: gone closes when the client has closed it
// (or it failed), so that a blocked command whose client left serves no
// one. stop ends the watch (the read is cut by a deadline) before the
// client's goroutine reads again.
func (c *client) watchClose() (gone <-chan struct{}, stop func()) {
	g, done := make(chan struct{}), make(chan struct{})
	var stopping atomic.Bool
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := c.in.conn.Read(buf)
			c.in.stash = append(c.in.stash, buf[:n]...)
			if err != nil {
				var ne net.Error
				if !stopping.Load() || !errors.As(err, &ne) || !ne.Timeout() {
					c.in.err = err
					close(g)
				}
				return
			}
		}
	}()
	return g, func() {
		stopping.Store(true)
		c.in.conn.SetReadDeadline(time.Now())
		<-done
		c.srv.mu.Lock() // shutdown's deadline, if it came meanwhile, stands
		if !c.srv.closing {
			c.in.conn.SetReadDeadline(time.Time{})
		}
		c.srv.mu.Unlock()
	}
}
