package main

import "github.com/revkv/revkv"

func init() {
	register(
		&command{name: "multi", arity: 1, conn: cmdMulti},
		&command{name: "exec", arity: 1, conn: cmdExec},
		&command{name: "discard", arity: 1, conn: cmdDiscard},
		&command{name: "watch", arity: -2, conn: cmdWatch},
		&command{name: "unwatch", arity: 1, conn: cmdUnwatch},
	)
}

func cmdMulti(s *server, c *client, _ [][]byte) {
	if c.inMulti {
		c.w.Error("ERR MULTI calls can not be nested")
		return
	}
	c.inMulti, c.dirty, c.queued = true, false, nil
	c.w.Simple("OK")
}

func cmdDiscard(s *server, c *client, _ [][]byte) {
	if !c.inMulti {
		c.w.Error("ERR DISCARD without MULTI")
		return
	}
	c.inMulti, c.dirty, c.queued, c.watched = false, false, nil, nil
	c.w.Simple("OK")
}

// cmdWatch remembers each key's ModRev: EXEC fails if any moved (a write,
// a delete or an expiry of the key since).
func cmdWatch(s *server, c *client, a [][]byte) {
	if c.inMulti {
		c.w.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.watched == nil {
		c.watched = map[string]revkv.Revision{}
	}
	_, err := s.store.Update(func(tx *revkv.Txn[[]byte]) error {
		for _, k := range a[1:] {
			if _, ok := c.watched[string(k)]; !ok {
				c.watched[string(k)] = tx.ModRev(string(k))
			}
		}
		return nil
	})
	if err != nil {
		c.w.Error(storeError(err))
		return
	}
	c.w.Simple("OK")
}

func cmdUnwatch(s *server, c *client, _ [][]byte) {
	c.watched = nil
	c.w.Simple("OK")
}

// cmdExec runs the queued commands in one Update: none of another client's
// writes come between them, and all of their writes commit together (a
// panic in one of them writes none: EXEC answers -ERR internal error). A
// command's own error (a wrong type of value, say) is its reply and does
// not stop the others, as in Redis. Commands on the connection or the
// server (PING, SELECT, INFO, REVKV.*...) run after it, in their places in
// the reply.
func cmdExec(s *server, c *client, _ [][]byte) {
	if !c.inMulti {
		c.w.Error("ERR EXEC without MULTI")
		return
	}
	queued, dirty, watched := c.queued, c.dirty, c.watched
	c.inMulti, c.dirty, c.queued, c.watched = false, false, nil, nil
	if hook := s.execHook.Load(); hook != nil {
		(*hook)()
	}
	if dirty {
		c.w.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	// Replies are built aside, per command, so that the ones run after the
	// Update land in their places.
	replies := make([][]byte, len(queued))
	mark := c.w.Len()
	var aborted bool
	var err error
	if v := c.execView; v != nil {
		aborted, err = execReads(c, v, queued, watched, replies, mark)
	} else {
		aborted, err = execUpdate(s, c, queued, watched, replies, mark)
	}
	if c.purgeAfter {
		c.purgeAfter = false
		purge()
	}
	if err != nil {
		c.w.Truncate(mark)
		c.w.Error(storeError(err))
		return
	}
	if aborted {
		c.w.NullArray()
		return
	}
	s.blocking.wake()
	c.inExec = true
	defer func() { c.inExec = false }()
	for i, args := range queued {
		if replies[i] == nil {
			s.runConn(c, lookup(args[0]), args)
			replies[i] = c.w.Take(mark)
		}
	}
	c.w.Array(len(queued))
	for _, r := range replies {
		c.w.Raw(r)
	}
}

// execUpdate runs the queued commands in one Update, after checking the
// watched keys in it; each read or write command's reply goes in its
// place in replies.
func execUpdate(s *server, c *client, queued [][][]byte, watched map[string]revkv.Revision, replies [][]byte, mark int) (aborted bool, err error) {
	_, err = s.updateZ(c, func(tx *revkv.Txn[[]byte]) error {
		for k, rev := range watched {
			if tx.ModRev(k) != rev {
				aborted = true
				return nil
			}
		}
		for i, args := range queued {
			cmd := lookup(args[0])
			switch {
			case cmd.read != nil:
				cmd.read(c, txReader{tx}, args)
			case cmd.write != nil:
				cmd.write(c, tx, args)
			default:
				continue
			}
			replies[i] = c.w.Take(mark)
		}
		return nil
	})
	return aborted, err
}

// execReads runs a transaction of reads alone in v, the latest state when
// its EXEC was read from the connection. Redis answers an EXEC before any
// command another client sends after it; revkv-server runs each client on
// its own goroutine, and a write sent just after the EXEC (or a blocked
// command it serves, writing a watched key) could otherwise commit first
// and abort it. Reads alone need no lock to be atomic: they are answered,
// and the watched keys checked, at the moment the EXEC arrived, which lies
// between its sending and its reply.
func execReads(c *client, v *revkv.View[[]byte], queued [][][]byte, watched map[string]revkv.Revision, replies [][]byte, mark int) (aborted bool, err error) {
	for k, rev := range watched {
		if v.ModRev(k) != rev {
			return true, v.Err()
		}
	}
	for i, args := range queued {
		if cmd := lookup(args[0]); cmd.read != nil {
			cmd.read(c, latestReader{v}, args)
			replies[i] = c.w.Take(mark)
		}
	}
	return false, v.Err()
}

// readsOnly reports whether EXEC would run queued without a write: each
// command reads, or runs on the connection or the server after.
func readsOnly(queued [][][]byte) bool {
	for _, args := range queued {
		if cmd := lookup(args[0]); cmd == nil || cmd.write != nil {
			return false
		}
	}
	return true
}

// runConn runs a command on the connection queued by MULTI: a panic in it
// is its own slot's error, not EXEC's (the Update is already committed).
func (s *server) runConn(c *client, cmd *command, args [][]byte) {
	defer s.contain(c, c.w.Len(), 1)
	cmd.conn(s, c, args)
}
