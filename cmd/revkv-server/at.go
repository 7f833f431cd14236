package main

import (
	"strings"
	"time"

	"github.com/revkv/revkv"
)

// REVKV.AT REV <n> <command> [args...] and REVKV.AT TIME <RFC 3339 | Unix
// ms> <command> [args...] run a read command, any of them, as of a
// revision or a time: on a View of the store there, which reads every
// type (a collection's metadata and elements are read at the same
// revision). A command that writes, or acts on the connection, is refused.

func init() {
	register(&command{name: "revkv.at", arity: -4, conn: cmdAt})
}

func cmdAt(s *server, c *client, a [][]byte) {
	var v *revkv.View[[]byte]
	var err error
	switch strings.ToUpper(string(a[1])) {
	case "REV":
		rev, ok := revArg(c, a[2])
		if !ok {
			return
		}
		v, err = s.store.At(rev)
	case "TIME":
		t, ok := timeArg(a[2])
		if !ok {
			c.w.Error("ERR time is neither RFC 3339 nor Unix milliseconds")
			return
		}
		v, err = s.store.AsOf(t)
	default:
		c.w.Error(errSyntax)
		return
	}
	if err != nil {
		c.w.Error(historyError(err))
		return
	}
	defer v.Close()
	args := a[3:]
	cmd := lookup(args[0])
	switch {
	case cmd == nil:
		c.w.Error(unknownCommand(args))
		return
	case cmd.read == nil:
		c.w.Error("ERR REVKV.AT runs read commands only: '" + cmd.name + "' is not one")
		return
	case cmd.arity > 0 && len(args) != cmd.arity || cmd.arity < 0 && len(args) < -cmd.arity:
		c.w.Error("ERR wrong number of arguments for '" + cmd.name + "' command")
		return
	case cmd.sub != nil && len(args) > 1 && !subArity(c, cmd.name, args, cmd.sub[strings.ToUpper(string(args[1]))]):
		return
	}
	cmd.read(c, viewReader{v}, args)
}

// timeArg parses an RFC 3339 time or Unix milliseconds.
func timeArg(b []byte) (time.Time, bool) {
	if ms, ok := parseInt(b); ok {
		return time.UnixMilli(ms), true
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	return t, err == nil
}
