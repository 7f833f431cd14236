package main

import (
	"slices"
	"strings"
	"sync"

	"github.com/revkv/revkv/resp"
)

// Pub/sub, as Redis's RESP2 shapes it. PUBLISH never waits on a
// subscriber: it encodes the message once per subscriber and appends it to
// that subscriber's queue, which the subscriber's own sender goroutine
// writes out. A subscriber whose queue passes client-output-buffer-limit's
// pubsub hard limit (32 MB by default, CONFIG SET changes it) is
// disconnected, as Redis disconnects it: a slow reader never slows a
// publisher or anyone else. Messages are not history: they are not stored.

func init() {
	register(
		&command{name: "subscribe", arity: -2, conn: func(s *server, c *client, a [][]byte) { s.subscribe(c, a[1:], false) }},
		&command{name: "psubscribe", arity: -2, conn: func(s *server, c *client, a [][]byte) { s.subscribe(c, a[1:], true) }},
		&command{name: "unsubscribe", arity: -1, conn: func(s *server, c *client, a [][]byte) { s.unsubscribe(c, a[1:], false) }},
		&command{name: "punsubscribe", arity: -1, conn: func(s *server, c *client, a [][]byte) { s.unsubscribe(c, a[1:], true) }},
		&command{name: "publish", arity: 3, conn: cmdPublish},
		&command{name: "pubsub", arity: -2, conn: cmdPubsub,
			sub: map[string]int{"CHANNELS": -2, "NUMSUB": -2, "NUMPAT": 2, "HELP": 2}},
	)
}

// pubsub is the server's subscriptions.
type pubsub struct {
	mu       sync.Mutex // guards the maps
	channels map[string]map[*client]struct{}
	patterns map[string]map[*client]struct{}
}

// subscriber is a client's side of pub/sub: what it subscribed to (its
// goroutine's alone) and its queue (shared with publishers).
type subscriber struct {
	channels map[string]bool
	patterns map[string]bool

	mu      sync.Mutex // guards queue and dead
	queue   []byte
	dead    bool
	resp3   bool // messages as RESP3 pushes; guarded by the server's pubsub.mu
	wake    chan struct{}
	stopped chan struct{} // closed when the sender ends
}

func (sub *subscriber) count() int { return len(sub.channels) + len(sub.patterns) }

// subscribed says the client is in pub/sub's mode (RESP2): only the
// subscribe commands, PING, QUIT and RESET are allowed.
func (c *client) subscribed() bool { return c.sub != nil && c.sub.count() > 0 }

// pubsubAllowed are the commands a subscribed client may send.
var pubsubAllowed = map[string]bool{"subscribe": true, "psubscribe": true, "unsubscribe": true,
	"punsubscribe": true, "ping": true, "quit": true, "reset": true}

// flush writes the client's replies; it shares the connection with the
// sender of its pub/sub messages.
func (c *client) flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.w.Flush()
}

func (s *server) subscribe(c *client, names [][]byte, pattern bool) {
	if c.sub == nil {
		c.sub = &subscriber{channels: map[string]bool{}, patterns: map[string]bool{},
			wake: make(chan struct{}, 1), stopped: make(chan struct{})}
		go s.send(c)
	}
	kind, set := "subscribe", c.sub.channels
	if pattern {
		kind, set = "psubscribe", c.sub.patterns
	}
	// The confirmations go out, then the subscriptions start, with the
	// connection held: no message overtakes its confirmation.
	c.wmu.Lock()
	defer c.wmu.Unlock()
	s.pubsub.mu.Lock()
	defer s.pubsub.mu.Unlock()
	c.sub.resp3 = c.w.RESP3()
	for _, n := range names {
		name := string(n)
		if !set[name] {
			set[name] = true
			s.pubsub.add(name, c, pattern)
		}
		c.w.Push(3)
		c.w.BulkString(kind)
		c.w.Bulk(n)
		c.w.Int(int64(c.sub.count()))
	}
	if !c.inExec { // EXEC writes its array whole, after
		c.w.Flush()
	}
}

func (ps *pubsub) add(name string, c *client, pattern bool) {
	m := &ps.channels
	if pattern {
		m = &ps.patterns
	}
	if *m == nil {
		*m = map[string]map[*client]struct{}{}
	}
	if (*m)[name] == nil {
		(*m)[name] = map[*client]struct{}{}
	}
	(*m)[name][c] = struct{}{}
}

func (ps *pubsub) remove(name string, c *client, pattern bool) {
	m := ps.channels
	if pattern {
		m = ps.patterns
	}
	delete(m[name], c)
	if len(m[name]) == 0 {
		delete(m, name)
	}
}

func (s *server) unsubscribe(c *client, names [][]byte, pattern bool) {
	kind := "unsubscribe"
	if pattern {
		kind = "punsubscribe"
	}
	var set map[string]bool
	if c.sub != nil {
		set = c.sub.channels
		if pattern {
			set = c.sub.patterns
		}
	}
	if len(names) == 0 {
		for name := range set {
			names = append(names, []byte(name))
		}
		slices.SortFunc(names, func(x, y []byte) int { return strings.Compare(string(x), string(y)) })
	}
	if len(names) == 0 { // subscribed to none: one reply, as Redis
		c.w.Push(3)
		c.w.BulkString(kind)
		c.w.Null()
		c.w.Int(int64(c.subCount()))
		return
	}
	s.pubsub.mu.Lock()
	defer s.pubsub.mu.Unlock()
	for _, n := range names {
		name := string(n)
		if set[name] {
			delete(set, name)
			s.pubsub.remove(name, c, pattern)
		}
		c.w.Push(3)
		c.w.BulkString(kind)
		c.w.Bulk(n)
		c.w.Int(int64(c.subCount()))
	}
}

func (c *client) subCount() int {
	if c.sub == nil {
		return 0
	}
	return c.sub.count()
}

// unsubscribeAll ends a closing client's subscriptions and its sender.
func (s *server) unsubscribeAll(c *client) {
	if c.sub == nil {
		return
	}
	s.pubsub.mu.Lock()
	for name := range c.sub.channels {
		s.pubsub.remove(name, c, false)
	}
	for name := range c.sub.patterns {
		s.pubsub.remove(name, c, true)
	}
	s.pubsub.mu.Unlock()
	c.sub.mu.Lock()
	c.sub.dead = true
	c.sub.mu.Unlock()
	select {
	case c.sub.wake <- struct{}{}:
	default:
	}
	<-c.sub.stopped
}

// deliver queues a message for c; past the limit, c is disconnected.
func (s *server) deliver(c *client, msg []byte) {
	sub := c.sub
	sub.mu.Lock()
	if sub.dead {
		sub.mu.Unlock()
		return
	}
	sub.queue = append(sub.queue, msg...)
	if limit := s.pubsubLimit.Load(); limit > 0 && int64(len(sub.queue)) > limit {
		sub.dead, sub.queue = true, nil
		sub.mu.Unlock()
		s.log.Warn("disconnected a subscriber past client-output-buffer-limit pubsub", "client", c.id, "addr", c.addr)
		c.conn.Close()
		return
	}
	sub.mu.Unlock()
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// send writes c's queued messages until c closes.
func (s *server) send(c *client) {
	sub := c.sub
	defer close(sub.stopped)
	for range sub.wake {
		sub.mu.Lock()
		q, dead := sub.queue, sub.dead
		sub.queue = nil
		sub.mu.Unlock()
		if dead {
			return
		}
		if len(q) > 0 {
			c.wmu.Lock()
			_, err := c.conn.Write(q)
			c.wmu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

func cmdPublish(s *server, c *client, a [][]byte) {
	channel := string(a[1])
	s.pubsub.mu.Lock()
	n := 0
	send := func(subs map[*client]struct{}, kind string, pattern []byte) {
		var msgs [2][]byte // RESP2's, RESP3's: encoded once each
		for sc := range subs {
			i := b2i(sc.sub.resp3)
			if msgs[i] == nil {
				msgs[i] = encodeMessage(kind, pattern, a[1], a[2], i == 1)
			}
			s.deliver(sc, msgs[i])
			n++
		}
	}
	send(s.pubsub.channels[channel], "message", nil)
	for p, subs := range s.pubsub.patterns {
		if match([]byte(p), channel) {
			send(subs, "pmessage", []byte(p))
		}
	}
	s.pubsub.mu.Unlock()
	c.w.Int(int64(n))
}

// encodeMessage is a message's push (an array in RESP2): [message, channel, payload] or
// [pmessage, pattern, channel, payload].
func encodeMessage(kind string, pattern, channel, payload []byte, resp3 bool) []byte {
	w := resp.NewWriter(nil)
	w.SetRESP3(resp3)
	if pattern != nil {
		w.Push(4)
		w.BulkString(kind)
		w.Bulk(pattern)
	} else {
		w.Push(3)
		w.BulkString(kind)
	}
	w.Bulk(channel)
	w.Bulk(payload)
	return w.Take(0)
}

func cmdPubsub(s *server, c *client, a [][]byte) {
	s.pubsub.mu.Lock()
	defer s.pubsub.mu.Unlock()
	switch strings.ToUpper(string(a[1])) {
	case "CHANNELS":
		var names []string
		for name := range s.pubsub.channels {
			if len(a) < 3 || match(a[2], name) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		c.w.Array(len(names))
		for _, n := range names {
			c.w.BulkString(n)
		}
	case "NUMSUB":
		c.w.Array(2 * (len(a) - 2))
		for _, n := range a[2:] {
			c.w.Bulk(n)
			c.w.Int(int64(len(s.pubsub.channels[string(n)])))
		}
	case "NUMPAT":
		c.w.Int(int64(len(s.pubsub.patterns)))
	case "HELP":
		c.w.Array(4)
		c.w.Simple("PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
		c.w.Simple("CHANNELS [<pattern>]")
		c.w.Simple("NUMPAT")
		c.w.Simple("NUMSUB [<channel> ...]")
	}
}

// pubsubPing is PING in subscribed mode: [pong, message].
func pubsubPing(c *client, a [][]byte) {
	c.w.Array(2)
	c.w.BulkString("pong")
	if len(a) > 1 {
		c.w.Bulk(a[1])
	} else {
		c.w.BulkString("")
	}
}
