package main

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// Commands that panic, for the tests only: a write that panics after
// writing half of what it meant to, a read, and a command on the
// connection.
func init() {
	register(
		&command{name: "test.panicwrite", arity: 2, write: func(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
			tx.Put(string(a[1]), []byte("half"))
			c.w.Simple("OK")
			panic("test.panicwrite")
		}},
		&command{name: "test.panicread", arity: 1, read: func(c *client, r reader, a [][]byte) {
			c.w.Array(2)
			panic("test.panicread")
		}},
		&command{name: "test.panicconn", arity: 1, conn: func(s *server, c *client, a [][]byte) {
			panic("test.panicconn")
		}},
	)
}

// A panic in a command is that command's -ERR internal error, on its
// connection alone: the server goes on serving it and every other one, the
// store's write is whole or not at all, and INFO counts it.
func TestPanicContained(t *testing.T) {
	s, addr := startServer(t, config{})
	ctx := context.Background()
	other := newClient(t, addr)
	require.Equal(t, "OK", do(other, "set", "kept", "1"))
	c := newClient(t, addr).Conn()
	defer c.Close()

	require.Equal(t, "error: ERR internal error", do(c, "test.panicwrite", "half"))
	require.Nil(t, do(c, "get", "half"), "a panicking write wrote nothing")
	require.Equal(t, "error: ERR internal error", do(c, "test.panicread"))
	require.Equal(t, "error: ERR internal error", do(c, "test.panicconn"))
	require.Equal(t, "PONG", do(c, "ping"), "the connection goes on")
	require.Equal(t, "1", do(other, "get", "kept"), "the other connection is untouched")

	// Pipelined, among plain SETs: one reply each, in order.
	cmds, _ := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "set", "p1", "1")
		p.Do(ctx, "set", "p2", "2")
		p.Do(ctx, "test.panicconn")
		p.Do(ctx, "set", "p3", "3")
		p.Do(ctx, "get", "p1")
		return nil
	})
	require.Equal(t, []any{"OK", "OK", "error: ERR internal error", "OK", "1"}, replies(cmds))

	// Pipelined among writes, which run as one Update (pipeline.go): the
	// panic is its command's error alone, and the writes around it commit.
	cmds, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "set", "w1", "1")
		p.Do(ctx, "test.panicwrite", "w2")
		p.Do(ctx, "incr", "w3")
		p.Do(ctx, "get", "w1")
		return nil
	})
	require.Equal(t, []any{"OK", "error: ERR internal error", int64(1), "1"}, replies(cmds))
	require.Nil(t, do(c, "get", "w2"), "a panicking write wrote nothing")

	// In MULTI/EXEC: the EXEC's Update is whole or nothing, so a panic in
	// one of its commands writes none of them.
	require.Equal(t, "OK", do(c, "multi"))
	require.Equal(t, "QUEUED", do(c, "set", "m1", "1"))
	require.Equal(t, "QUEUED", do(c, "test.panicwrite", "m2"))
	require.Equal(t, "error: ERR internal error", do(c, "exec"))
	require.Equal(t, int64(0), do(c, "exists", "m1", "m2"))
	// A command on the connection, run after EXEC's Update: its own slot.
	require.Equal(t, "OK", do(c, "multi"))
	require.Equal(t, "QUEUED", do(c, "set", "m1", "1"))
	require.Equal(t, "QUEUED", do(c, "test.panicconn"))
	require.Equal(t, "QUEUED", do(c, "ping"))
	v, err := c.Do(ctx, "exec").Result()
	require.NoError(t, err)
	require.Len(t, v, 3)
	require.Equal(t, "OK", v.([]any)[0])
	require.ErrorContains(t, v.([]any)[1].(error), "ERR internal error")
	require.Equal(t, "PONG", v.([]any)[2])
	require.Equal(t, "1", do(c, "get", "m1"))

	require.Equal(t, int64(7), s.stats.panics.Load())
	require.Len(t, s.panicSites.seen, 3, "logged once per place in the code: %v", s.panicSites.seen)
	for site := range s.panicSites.seen {
		require.Contains(t, site, "panic_test.go:")
	}
	info := do(other, "info", "stats").(string)
	require.True(t, strings.Contains(info, "panics_recovered:7\r\n"), info)
	require.Equal(t, "PONG", do(other, "ping"))
}

// replies is a pipeline's replies, an error as its text.
func replies(cmds []redis.Cmder) []any {
	var got []any
	for _, cmd := range cmds {
		v, err := cmd.(*redis.Cmd).Result()
		if err != nil {
			got = append(got, "error: "+err.Error())
		} else {
			got = append(got, v)
		}
	}
	return got
}
