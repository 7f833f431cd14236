package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/resp"
)

// config is what the flags set.
type config struct {
	addr        string
	requirepass string
	maxClients  int
	maxValue    int64 // Redis's proto-max-bulk-len: the longest bulk string a client sends, and the longest string APPEND and SETRANGE make
	zsetCache   int64 // members the sorted sets' rank cache holds (zcache.go); 0: the default, < 0: none
}

// server speaks RESP to its clients over one store. Every command is one
// call of the store (an Update when it reads and writes, or writes several
// keys), so commands are atomic as in Redis; one connection's commands run
// in order, connections in parallel.
type server struct {
	store *revkv.Store[[]byte]
	cfg   config
	dir   string   // the store's directory; "" in memory
	addr  net.Addr // where it listens
	log   *slog.Logger
	start time.Time

	nextID atomic.Int64
	// mu guards clients and closing. It is never held while a client is
	// served or written to.
	mu      sync.Mutex
	clients map[*client]struct{}
	closing bool
	conns   sync.WaitGroup // one per client goroutine
	// sweeping is the sweeper's goroutine (sweep.go): shutdown waits for
	// it before it closes the store.
	sweeping sync.WaitGroup

	cursors cursors
	configs configs
	limits  limits
	// maxClients and pubsubLimit are what CONFIG SET may change.
	maxClients  atomic.Int64
	pubsubLimit atomic.Int64 // bytes a subscriber's unsent messages may reach; 0: no limit
	pubsub      pubsub
	blocking    blocking
	zsets       zcache // sorted sets' order-statistics trees (zcache.go)
	panicSites  sites  // where recovered panics came from, for the log
	// execHook, if set (by tests), runs as EXEC
	// begins: another client's write may land between the EXEC's reading
	// and its running.
	execHook atomic.Pointer[func()]
	// historyHook, if set (by tests), runs after each entry REVKV.HISTORY
	// reads of a key, with how many its reading has seen: the test may
	// trim the history under it there.
	historyHook atomic.Pointer[func(seen int)]
	stats       struct {
		commands    atomic.Int64
		connections atomic.Int64
		rejected    atomic.Int64
		panics      atomic.Int64 // commands' panics recovered (contain.go)
	}
}

func newServer(store *revkv.Store[[]byte], cfg config, log *slog.Logger) *server {
	if cfg.maxValue <= 0 {
		cfg.maxValue = resp.DefaultMaxBulk
	}
	s := &server{store: store, cfg: cfg, log: log, start: time.Now(), clients: map[*client]struct{}{}, cursors: newCursors(4096),
		blocking: blocking{closed: make(chan struct{})}}
	s.initConfig()
	return s
}

// zsetCacheSize is cfg's bound of the rank cache, in members.
func (cfg config) zsetCacheSize() int64 {
	switch {
	case cfg.zsetCache == 0:
		return defaultZsetCache
	case cfg.zsetCache < 0:
		return 0
	}
	return cfg.zsetCache
}

// client is one connection's state. Its fields are used by its own
// goroutine only, but for conn, which shutdown may close.
type client struct {
	srv  *server
	id   int64
	info clientInfo
	// created is when it connected; blockedNow says it waits in a
	// blocking command, which unblock (CLIENT UNBLOCK, CLIENT KILL) ends.
	created    time.Time
	blockedNow atomic.Bool
	unblock    chan string
	addr       string
	conn       net.Conn
	rd         *resp.Reader
	w          *resp.Writer
	authed     bool
	quit       bool // reply, flush, close
	// commands counts what this client ran (INFO sums them): one counter
	// per client, so that connections do not share a cache line.
	commands atomic.Int64

	// MULTI: queued is non-nil between MULTI and EXEC/DISCARD; dirty says a
	// queued command was refused, so EXEC must abort.
	queued  [][][]byte
	inMulti bool
	dirty   bool
	// watched maps each WATCHed key to its ModRev when watched.
	watched map[string]revkv.Revision
	// execView is the latest state when an EXEC of reads alone was read
	// from the connection: the transaction answers as of then (cmdExec).
	// Set and closed by the connection's loop, around the EXEC's dispatch.
	execView *revkv.View[[]byte]

	// wmu serializes writes to conn: the client's replies (flush) and its
	// pub/sub messages (pubsub.go). sub is nil until it subscribes.
	wmu sync.Mutex
	sub *subscriber
	// retrying is set while a blocked command tries again (block.go);
	// inExec while EXEC runs its commands.
	retrying bool
	inExec   bool
	// purgeAfter is set by a MEMORY PURGE in an EXEC's Update, which runs
	// it once the Update has let go of the store's write lock.
	purgeAfter bool
	// ztx is the running Update's versions of sorted sets' trees (nil
	// outside one: updateZ).
	ztx  *ztx
	ztxs ztx // what ztx points to, reused
	// readAt is when the command being run was read: blocked clients
	// queue in that order (block.go).
	readAt time.Time
	// in is what rd reads: the connection, after what was read from it
	// while a command blocked (block.go).
	in connReader
	// run is the pipeline's run of writes not yet applied (pipeline.go).
	run writeRun
}

// serve accepts connections on ln until shutdown closes it.
func (s *server) serve(ln net.Listener) error {
	s.mu.Lock()
	if !s.closing { // added under mu, before shutdown's Wait
		s.sweeping.Go(s.sweeper)
	}
	s.mu.Unlock()
	for {
		conn, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.accept(conn)
	}
}

func (s *server) accept(conn net.Conn) {
	c := &client{srv: s, id: s.nextID.Add(1), addr: conn.RemoteAddr().String(), conn: conn,
		created: time.Now(), unblock: make(chan string, 1), info: clientInfo{multi: -1},
		w: resp.NewWriter(conn), authed: s.cfg.requirepass == ""}
	c.in.conn = conn
	c.rd = resp.NewReader(&c.in)
	c.rd.MaxBulk = s.cfg.maxValue
	s.mu.Lock()
	if s.closing || s.maxClients.Load() > 0 && int64(len(s.clients)) >= s.maxClients.Load() {
		s.mu.Unlock()
		s.stats.rejected.Add(1)
		c.w.Error("ERR max number of clients reached")
		conn.SetWriteDeadline(time.Now().Add(time.Second))
		c.w.Flush()
		conn.Close()
		return
	}
	s.clients[c] = struct{}{}
	s.conns.Add(1)
	s.mu.Unlock()
	s.stats.connections.Add(1)
	go s.handle(c)
}

// handle runs one connection: read a command, run it, and write the replies
// once the client has sent nothing more (a pipeline's replies go in one
// write), or once they pass 64 KiB.
func (s *server) handle(c *client) {
	defer func() {
		if p := recover(); p != nil { // outside any command: the connection is beyond repair
			s.recovered(c, p)
		}
		c.conn.Close()
		s.unsubscribeAll(c)
		s.mu.Lock()
		delete(s.clients, c)
		s.stats.commands.Add(c.commands.Load())
		s.mu.Unlock()
		s.conns.Done()
	}()
	for {
		c.rd.Unauthenticated = !c.authed
		args, err := c.rd.ReadCommand()
		if err != nil {
			s.applyRun(c)
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				c.w.Error("ERR " + pe.Error())
				s.log.Debug("protocol error", "client", c.id, "addr", c.addr, "err", pe)
			}
			c.flush()
			return
		}
		c.commands.Add(1)
		c.readAt = time.Now()
		// A pipeline's run of writes is one Update (pipeline.go).
		cmd := runnable(c, args)
		if cmd != nil {
			c.run.add(cmd, args)
			if c.rd.Buffered() > 0 && !c.run.full() {
				continue
			}
		}
		s.applyRun(c)
		if cmd == nil {
			if c.inMulti && !c.dirty && len(args) == 1 && bytes.EqualFold(args[0], execName) && readsOnly(c.queued) {
				c.execView = s.store.Latest()
			}
			s.dispatch(c, args)
			if c.execView != nil { // EXEC did not run (it was refused): its view is not needed
				c.execView.Close()
				c.execView = nil
			}
		}
		if c.quit {
			c.flush()
			return
		}
		if c.rd.Buffered() == 0 || c.w.Len() > 64<<10 {
			if err := c.flush(); err != nil {
				return
			}
		}
	}
}

var execName = []byte("exec")

// shutdown stops accepting, lets every client finish the commands it has
// sent (a client's next read finds the deadline), waits up to grace for
// them, closes what is left, and closes the store.
func (s *server) shutdown(ln net.Listener, grace time.Duration) error {
	s.mu.Lock()
	if !s.closing {
		close(s.blocking.closed) // blocked clients answer as if timed out
	}
	s.closing = true
	for c := range s.clients {
		c.conn.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	ln.Close()
	done := make(chan struct{})
	go func() { s.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		s.mu.Lock()
		for c := range s.clients {
			c.conn.Close()
		}
		s.mu.Unlock()
		<-done
	}
	s.sweeping.Wait()
	return s.store.Close()
}

// listen opens the listening socket.
func listen(addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(context.Background(), "tcp", addr)
}

// fatal prints an error and exits: flag and startup errors.
func fatal(format string, args ...any) {
	// One prefix: the store's errors say "revkv:" for when they stand alone.
	fmt.Fprintf(os.Stderr, "revkv-server: %s\n", strings.TrimPrefix(fmt.Sprintf(format, args...), "revkv: "))
	os.Exit(2)
}
