package main

import (
	"strings"

	"github.com/revkv/revkv"
)

// A command runs in one of three ways, which decides how MULTI/EXEC runs
// it inside one Update:
//   - read: answers from a reader, which is the store outside a
//     transaction (no write lock taken) and the transaction inside one;
//   - write: runs inside a transaction (an Update of its own outside EXEC),
//     so that what it reads and what it writes are one atomic step;
//   - conn: acts on the connection or the server; queued by MULTI (but for
//     notQueued), it runs at EXEC after the Update, in its place in the
//     reply.
type command struct {
	name  string
	arity int // as Redis counts it: the name included; -n means at least n
	read  func(c *client, r reader, args [][]byte)
	write func(c *client, tx *revkv.Txn[[]byte], args [][]byte)
	conn  func(s *server, c *client, args [][]byte)
	// sub, for a command with subcommands, is each one's arity (the
	// command's name and the subcommand's included). Like the command's
	// own arity, it is checked before MULTI queues the command.
	sub map[string]int
}

// reader is what read commands need: the store (storeReader), or a
// transaction (txReader).
type reader interface {
	// Get is GetEntry's value: from the store's index alone, without
	// reading the key's history.
	Get(key string) ([]byte, bool)
	GetEntry(key string) (revkv.Entry[[]byte], bool)
	// Keys returns the live keys with prefix, in order.
	// Keys returns the live user keys with prefix, in order.
	Keys(prefix string) []string
	Len() int
	// kv is a consistent snapshot for commands that read more than one
	// key (a collection's metadata and its elements): the transaction, or
	// a View of the latest state opened on first use.
	kv() kv
}

// storeReader reads the store: Get and GetEntry straight from its index
// (a string command reads one key), the rest from one View.
type storeReader struct {
	store *revkv.Store[[]byte]
	view  *revkv.View[[]byte]
}

func (r *storeReader) Get(key string) ([]byte, bool) { return r.store.Get(key) }
func (r *storeReader) GetEntry(key string) (revkv.Entry[[]byte], bool) {
	return r.store.GetEntry(key)
}
func (r *storeReader) Keys(prefix string) []string { return userKeys(r.kv(), prefix) }
func (r *storeReader) Len() int                    { return len(r.Keys("")) }
func (r *storeReader) kv() kv {
	if r.view == nil {
		r.view = r.store.Latest()
	}
	return viewKV{View: r.view}
}

func (r *storeReader) close() {
	if r.view != nil {
		r.view.Close()
	}
}

type txReader struct{ *revkv.Txn[[]byte] }

func (r txReader) Keys(prefix string) []string { return userKeys(r.Txn, prefix) }
func (r txReader) Len() int                    { return len(r.Keys("")) }
func (r txReader) kv() kv                      { return r.Txn }

// latestReader reads a View of the latest state, as storeReader does the
// store: a read-only EXEC's commands (execReads).
type latestReader struct{ v *revkv.View[[]byte] }

func (r latestReader) Get(key string) ([]byte, bool)                   { return r.v.Get(key) }
func (r latestReader) GetEntry(key string) (revkv.Entry[[]byte], bool) { return r.v.Entry(key) }
func (r latestReader) Keys(prefix string) []string                     { return userKeys(r.kv(), prefix) }
func (r latestReader) Len() int                                        { return len(r.Keys("")) }
func (r latestReader) kv() kv                                          { return viewKV{View: r.v} }

// viewReader reads a View: REVKV.AT's commands.
type viewReader struct{ v *revkv.View[[]byte] }

func (r viewReader) Get(key string) ([]byte, bool)                   { return r.v.Get(key) }
func (r viewReader) GetEntry(key string) (revkv.Entry[[]byte], bool) { return r.v.Entry(key) }
func (r viewReader) Keys(prefix string) []string                     { return userKeys(r.kv(), prefix) }
func (r viewReader) Len() int                                        { return len(r.Keys("")) }
func (r viewReader) kv() kv                                          { return viewKV{View: r.v, old: true} }

var commands = map[string]*command{}

func register(cmds ...*command) {
	for _, c := range cmds {
		commands[c.name] = c
	}
}

// lookup finds a command by its name in any case, without allocating for
// names up to 32 bytes.
func lookup(name []byte) *command {
	var buf [32]byte
	if len(name) > len(buf) {
		return commands[strings.ToLower(string(name))]
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return commands[string(buf[:len(name)])]
}

// notQueued are the commands MULTI runs at once instead of queueing.
var notQueued = map[string]bool{"multi": true, "exec": true, "discard": true, "watch": true, "quit": true, "revkv.watch": true}

// noAuth are the commands a client may send before AUTH.
var noAuth = map[string]bool{"auth": true, "hello": true, "quit": true}

func (s *server) dispatch(c *client, args [][]byte) {
	defer s.contain(c, c.w.Len(), 1)
	cmd := lookup(args[0])
	if cmd != nil {
		defer c.ran(cmd.name)
	}
	if cmd == nil {
		if c.inMulti {
			c.dirty = true
		}
		c.w.Error(unknownCommand(args))
		return
	}
	if !c.authed && !noAuth[cmd.name] { // c.authed first: no map lookup once authenticated
		c.w.Error("NOAUTH Authentication required.")
		return
	}
	if c.sub != nil && !c.w.RESP3() && !pubsubAllowed[cmd.name] && c.subscribed() { // RESP3 allows any command
		c.w.Error("ERR Can't execute '" + cmd.name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		return
	}
	if cmd.name == "ping" && !c.w.RESP3() && c.subscribed() && len(args) <= 2 {
		pubsubPing(c, args)
		return
	}
	if !arityOK(cmd.arity, len(args)) {
		if c.inMulti {
			c.dirty = true
		}
		c.w.Error("ERR wrong number of arguments for '" + cmd.name + "' command")
		return
	}
	if anyReserved(args[1:]) {
		if c.inMulti {
			c.dirty = true
		}
		c.w.Error(errReserved)
		return
	}
	if cmd.sub != nil && len(args) > 1 && !subArity(c, cmd.name, args, cmd.sub[strings.ToUpper(string(args[1]))]) {
		if c.inMulti {
			c.dirty = true
		}
		return
	}
	if c.inMulti && !notQueued[cmd.name] { // c.inMulti first, as above
		c.queued = append(c.queued, copyArgs(args))
		c.w.Simple("QUEUED")
		return
	}
	switch {
	case cmd.conn != nil:
		cmd.conn(s, c, args)
	case cmd.read != nil:
		r := &storeReader{store: s.store}
		defer r.close()
		cmd.read(c, r, args)
	default:
		s.update(c, func(tx *revkv.Txn[[]byte]) { cmd.write(c, tx, args) })
		s.blocking.wake()
	}
}

// arityOK reports whether n arguments (the name included) fit arity, as
// Redis counts it.
func arityOK(arity, n int) bool {
	return arity > 0 && n == arity || arity < 0 && n >= -arity || arity == 0
}

// anyReserved reports whether an argument starts with the internal prefix.
func anyReserved(args [][]byte) bool {
	for _, a := range args {
		if reserved(a) {
			return true
		}
	}
	return false
}

// update runs fn in an Update. fn writes its reply itself; a failure of the
// store (closed, a failed disk) replaces it.
func (s *server) update(c *client, fn func(tx *revkv.Txn[[]byte])) {
	mark := c.w.Len()
	_, err := s.updateZ(c, func(tx *revkv.Txn[[]byte]) error {
		fn(tx)
		return nil
	})
	if err != nil {
		c.w.Truncate(mark)
		c.w.Error(storeError(err))
	}
}

// storeError is the reply for a store that cannot write.
func storeError(err error) string {
	return "ERR " + err.Error()
}

// unknownCommand is Redis's reply to a command it does not know.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.WriteString(trunc(args[0], 128))
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		if b.Len() > 400 {
			break
		}
		b.WriteString("'")
		b.WriteString(trunc(a, 128))
		b.WriteString("' ")
	}
	return b.String()
}

func trunc(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

func copyArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// The texts of Redis's common errors.
const (
	errSyntax   = "ERR syntax error"
	errNotInt   = "ERR value is not an integer or out of range"
	errNotFloat = "ERR value is not a valid float"
	errOverflow = "ERR increment or decrement would overflow"
	errNoKey    = "ERR no such key"
	errDBIndex  = "ERR DB index is out of range"
	errTooBig   = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	errOffset   = "ERR offset is out of range"
)

func invalidExpire(cmd string) string {
	return "ERR invalid expire time in '" + cmd + "' command"
}
