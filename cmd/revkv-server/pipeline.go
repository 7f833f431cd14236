package main

import (
	"errors"

	"github.com/revkv/revkv"
)

// A pipeline's run of write commands is applied as one Update: one hold of
// the store's write lock, one clock reading, one publish (and, on a
// directory under --sync always, one fsync) instead of one each. Each
// command runs in the Update as it would alone, in order, and writes its
// own reply, an error included; a later command sees what an earlier one
// wrote, as it would one by one. The run is not a transaction a client
// can rely on: only MULTI promises that (another client's commands may
// come between a pipeline's runs). A run ends at the first command that
// is not a write (or is not admitted: it is answered by dispatch, error
// included), when nothing more is buffered, or at maxRun commands or
// maxRunBytes of arguments, so that one client's pipeline holds the lock
// no longer than that.

// maxRun and maxRunBytes bound a run of writes applied as one Update: its
// commands, and their arguments' bytes (a command bigger than that runs
// alone).
const (
	maxRun      = 128
	maxRunBytes = 1 << 20
)

// writeRun is a connection's run of write commands waiting to be applied.
// Their arguments are copied into arena (the reader's buffer is reused by
// the next read): ends holds each argument's end, cmds each command and
// its number of arguments. All are reused from run to run.
type writeRun struct {
	arena []byte
	ends  []int
	cmds  []runCmd
	args  [][]byte // one command's arguments while it runs
}

type runCmd struct {
	cmd  *command
	argc int
}

// add appends a command to the run.
func (r *writeRun) add(cmd *command, args [][]byte) {
	for _, a := range args {
		r.arena = append(r.arena, a...)
		r.ends = append(r.ends, len(r.arena))
	}
	r.cmds = append(r.cmds, runCmd{cmd, len(args)})
}

// each calls fn with each command and its arguments, in order; the
// arguments are valid during the call.
func (r *writeRun) each(fn func(cmd *command, args [][]byte)) {
	start, at := 0, 0
	for _, rc := range r.cmds {
		r.args = r.args[:0]
		for _, end := range r.ends[at : at+rc.argc] {
			r.args = append(r.args, r.arena[start:end:end])
			start = end
		}
		at += rc.argc
		fn(rc.cmd, r.args)
	}
}

func (r *writeRun) reset() {
	if cap(r.arena) > 1<<20 { // do not keep a big run's arena
		r.arena = nil
	}
	r.arena, r.ends, r.cmds = r.arena[:0], r.ends[:0], r.cmds[:0]
	clear(r.args[:cap(r.args)])
}

// runnable returns the write command args names if it may join a run: the
// client is authenticated, in no MULTI and not subscribed, and the command
// is a write alone (not one that runs on the connection outside MULTI, as
// REVKV.ANNOTATE does) and passes every check dispatch makes before
// running one. Anything else is nil, and dispatch answers it.
func runnable(c *client, args [][]byte) *command {
	if !c.authed || c.inMulti || c.sub != nil && c.subscribed() {
		return nil
	}
	cmd := lookup(args[0])
	if cmd == nil || cmd.write == nil || cmd.conn != nil || cmd.sub != nil || !arityOK(cmd.arity, len(args)) || anyReserved(args[1:]) {
		return nil
	}
	return cmd
}

// full reports whether the run takes no further command.
func (r *writeRun) full() bool { return len(r.cmds) >= maxRun || len(r.arena) >= maxRunBytes }

// applyRun applies c's run of writes and answers each command. A run of
// one is dispatched as usual, and so is each command of a run while a
// client waits in a blocking command: it must be served after the write
// that unblocks it and before the writer's next command, as in Redis. A
// panic in a command writes nothing of the run's Update: the run is then
// dispatched a command at a time, so that the panic is its own command's
// error and the others commit.
func (s *server) applyRun(c *client) {
	r := &c.run
	defer r.reset()
	one := func(_ *command, args [][]byte) { s.dispatch(c, args) }
	switch {
	case len(r.cmds) == 0:
		return
	case len(r.cmds) == 1 || s.blocking.n.Load() > 0:
		r.each(one)
		return
	}
	mark := c.w.Len()
	if !s.tryRun(c, mark) {
		c.w.Truncate(mark)
		r.each(one)
		return
	}
	c.ran(r.cmds[len(r.cmds)-1].cmd.name)
	s.blocking.wake() // a client that blocked after the check above
}

// errRunPanicked aborts a run's Update when one of its commands panics.
var errRunPanicked = errors.New("a command of the run panicked")

// tryRun runs c's run in one Update; false if a command panicked, which
// aborts the Update: nothing is written. A panic after the commit (in the
// publication of sorted sets' trees) is not a command's: contain answers
// the run with errors, as dispatch does for a single command.
func (s *server) tryRun(c *client, mark int) bool {
	defer s.contain(c, mark, len(c.run.cmds))
	_, err := s.updateZ(c, func(tx *revkv.Txn[[]byte]) (err error) {
		defer func() {
			if recover() != nil {
				err = errRunPanicked
			}
		}()
		c.run.each(func(cmd *command, args [][]byte) { cmd.write(c, tx, args) })
		return nil
	})
	switch {
	case errors.Is(err, errRunPanicked):
		return false
	case err != nil: // the store cannot write: every command's answer
		c.w.Truncate(mark)
		for range c.run.cmds {
			c.w.Error(storeError(err))
		}
	}
	return true
}
