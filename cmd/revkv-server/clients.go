package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// CLIENT LIST, INFO, KILL and UNBLOCK: what GUIs and Redis's units ask of
// the other connections. What one client's goroutine changes and another's
// CLIENT LIST reads is in clientInfo, under its lock.

// clientInfo is what CLIENT LIST shows of a client.
type clientInfo struct {
	mu    sync.Mutex // guards the fields below
	name  string
	cmd   string    // the last command's name
	last  time.Time // when it ran
	sub   int
	psub  int
	multi int // commands queued; -1 outside MULTI
	resp  int // 2 or 3
}

func (c *client) setName(name string) {
	c.info.mu.Lock()
	c.info.name = name
	c.info.mu.Unlock()
}

func (c *client) getName() string {
	c.info.mu.Lock()
	defer c.info.mu.Unlock()
	return c.info.name
}

// ran records a command for CLIENT LIST.
func (c *client) ran(cmd string) {
	c.info.mu.Lock()
	c.info.cmd, c.info.last = cmd, time.Now()
	if c.sub != nil {
		c.info.sub, c.info.psub = len(c.sub.channels), len(c.sub.patterns)
	}
	c.info.multi, c.info.resp = -1, 2
	if c.w.RESP3() {
		c.info.resp = 3
	}
	if c.inMulti {
		c.info.multi = len(c.queued)
	}
	c.info.mu.Unlock()
}

// line is the client's CLIENT LIST line.
func (c *client) line(s *server) string {
	c.info.mu.Lock()
	defer c.info.mu.Unlock()
	flags := ""
	if c.info.sub+c.info.psub > 0 {
		flags += "P"
	}
	if c.info.multi >= 0 {
		flags += "x"
	}
	if c.blockedNow.Load() {
		flags += "b"
	}
	if flags == "" {
		flags = "N"
	}
	laddr := ""
	if a := c.conn.LocalAddr(); a != nil {
		laddr = a.String()
	}
	now := time.Now()
	last := c.info.last
	if last.IsZero() {
		last = c.created
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=0 name=%s age=%d idle=%d flags=%s db=0 sub=%d psub=%d ssub=0 multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=default redir=-1 resp=%d\n",
		c.id, c.addr, laddr, c.info.name, int64(now.Sub(c.created).Seconds()), int64(now.Sub(last).Seconds()),
		flags, c.info.sub, c.info.psub, c.info.multi, c.info.cmd, c.info.resp)
}

// others returns the server's clients in id order.
func (s *server) others() []*client {
	s.mu.Lock()
	cs := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	slices.SortFunc(cs, func(x, y *client) int { return int(x.id - y.id) })
	return cs
}

// clientType is CLIENT LIST TYPE's and CLIENT KILL TYPE's class of c.
func clientType(c *client) string {
	c.info.mu.Lock()
	defer c.info.mu.Unlock()
	if c.info.sub+c.info.psub > 0 {
		return "pubsub"
	}
	return "normal"
}

func validType(t string) bool {
	switch t {
	case "normal", "pubsub", "master", "replica", "slave":
		return true
	}
	return false
}

// clientList: CLIENT LIST [TYPE type] [ID id...].
func (s *server) clientList(c *client, a [][]byte) {
	typ := ""
	var ids []int64
	for i := 2; i < len(a); i++ {
		switch opt := strings.ToUpper(string(a[i])); {
		case opt == "TYPE" && i+1 < len(a):
			typ = strings.ToLower(string(a[i+1]))
			if !validType(typ) {
				c.w.Error("ERR Unknown client type '" + string(a[i+1]) + "'")
				return
			}
			i++
		case opt == "ID" && i+1 < len(a):
			for i++; i < len(a); i++ {
				id, ok := parseInt(a[i])
				if !ok || id <= 0 {
					c.w.Error("ERR Invalid client ID")
					return
				}
				ids = append(ids, id)
			}
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	var b strings.Builder
	for _, o := range s.others() {
		if typ != "" && clientType(o) != typ || ids != nil && !slices.Contains(ids, o.id) {
			continue
		}
		b.WriteString(o.line(s))
	}
	c.w.BulkString(b.String())
}

// clientKill: CLIENT KILL addr, or CLIENT KILL [ID id] [ADDR addr] [LADDR
// addr] [TYPE type] [USER name] [SKIPME yes|no]...
func (s *server) clientKill(c *client, a [][]byte) {
	if len(a) == 3 { // the old form: one address, OK or an error
		for _, o := range s.others() {
			if o.addr == string(a[2]) {
				s.kill(o)
				c.w.Simple("OK")
				return
			}
		}
		c.w.Error("ERR No such client")
		return
	}
	if len(a)%2 != 0 {
		c.w.Error(errSyntax)
		return
	}
	var id int64
	addr, laddr, typ, user := "", "", "", ""
	skipMe := true
	for i := 2; i < len(a); i += 2 {
		v := string(a[i+1])
		switch strings.ToUpper(string(a[i])) {
		case "ID":
			n, ok := parseInt(a[i+1])
			if !ok || n <= 0 {
				c.w.Error("ERR client-id should be greater than 0")
				return
			}
			id = n
		case "ADDR":
			addr = v
		case "LADDR":
			laddr = v
		case "TYPE":
			typ = strings.ToLower(v)
			if !validType(typ) {
				c.w.Error("ERR Unknown client type '" + v + "'")
				return
			}
		case "USER":
			user = v
		case "SKIPME":
			switch strings.ToLower(v) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				c.w.Error(errSyntax)
				return
			}
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	n := 0
	for _, o := range s.others() {
		switch {
		case id != 0 && o.id != id, addr != "" && o.addr != addr,
			laddr != "" && o.conn.LocalAddr().String() != laddr,
			typ != "" && clientType(o) != typ, user != "" && user != "default",
			skipMe && o == c:
			continue
		}
		s.kill(o)
		n++
	}
	c.w.Int(int64(n))
}

// kill closes o's connection, and ends its blocking command if any.
func (s *server) kill(o *client) {
	o.conn.Close()
	select {
	case o.unblock <- "kill":
	default:
	}
}

// clientUnblock: CLIENT UNBLOCK id [TIMEOUT|ERROR].
func (s *server) clientUnblock(c *client, a [][]byte) {
	id, ok := parseInt(a[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	how := "timeout"
	if len(a) == 4 {
		how = strings.ToLower(string(a[3]))
		if how != "timeout" && how != "error" {
			c.w.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	} else if len(a) > 4 {
		c.w.Error(errSyntax)
		return
	}
	for _, o := range s.others() {
		if o.id == id && o.blockedNow.Load() {
			select {
			case o.unblock <- how:
				c.w.Int(1)
			default:
				c.w.Int(0)
			}
			return
		}
	}
	c.w.Int(0)
}
