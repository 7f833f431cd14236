package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/revkv/revkv"
)

// startServer runs a server on an in-memory store on 127.0.0.1:0 and
// returns its address; it shuts down when the test ends.
func startServer(t testing.TB, cfg config, opts ...revkv.Option) (*server, string) {
	return startServerOn(t, cfg, revkv.New[[]byte](opts...))
}

// startServerOn is startServer on a store of the test's.
func startServerOn(t testing.TB, cfg config, store *revkv.Store[[]byte]) (*server, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := newServer(store, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.addr = ln.Addr()
	done := make(chan error, 1)
	go func() { done <- s.serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, s.shutdown(ln, 2*time.Second))
		require.NoError(t, <-done)
	})
	return s, ln.Addr().String()
}

func newClient(t testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// do sends one command and returns its reply or its error text.
func do(c interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}, args ...any) any {
	v, err := c.Do(context.Background(), args...).Result()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return v
}

// quietRedis drops go-redis's log: redialling a server a test killed is
// expected.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{})
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial")) // its redial loop after a killed server
}

// The edge cases of Redis's own expire tests, and the places where Redis's
// semantics differ from the library's (the server follows Redis).
func TestRedisSemantics(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	steps := []struct {
		args []any
		want any
	}{
		{[]any{"set", "k", "v", "ex", 100}, "OK"},
		{[]any{"ttl", "k"}, int64(100)},
		{[]any{"expire", "k", 50}, int64(1)},
		{[]any{"expire", "k", 60}, int64(1)}, // EXPIRE twice: the second wins
		{[]any{"ttl", "k"}, int64(60)},
		{[]any{"persist", "k"}, int64(1)}, // PERSIST undoes EXPIRE
		{[]any{"ttl", "k"}, int64(-1)},
		{[]any{"persist", "k"}, int64(0)},
		{[]any{"ttl", "missing"}, int64(-2)},
		{[]any{"pttl", "missing"}, int64(-2)},
		{[]any{"expire", "k", -1}, int64(1)}, // an expiry in the past deletes
		{[]any{"exists", "k"}, int64(0)},
		{[]any{"set", "k", "v"}, "OK"},
		{[]any{"expireat", "k", 1}, int64(1)},
		{[]any{"get", "k"}, nil},
		{[]any{"set", "k", "v"}, "OK"},
		{[]any{"expire", "k", "9223372036854775807"}, "error: ERR invalid expire time in 'expire' command"}, // overflow
		{[]any{"pexpire", "k", "9223372036854775807"}, "error: ERR invalid expire time in 'pexpire' command"},
		{[]any{"expire", "k", "x"}, "error: ERR value is not an integer or out of range"},
		{[]any{"set", "k", "v", "ex", 0}, "error: ERR invalid expire time in 'set' command"},
		{[]any{"set", "k", "v", "ex", -5}, "error: ERR invalid expire time in 'set' command"},
		{[]any{"setex", "k", 0, "v"}, "error: ERR invalid expire time in 'setex' command"},
		{[]any{"set", "k", "v", "nx", "xx"}, "error: ERR syntax error"},
		{[]any{"set", "k", "v", "ex", 10, "keepttl"}, "error: ERR syntax error"},
		{[]any{"set", "k", "v2", "px", 100000}, "OK"},
		{[]any{"set", "k", "v3", "keepttl"}, "OK"}, // KEEPTTL keeps it
		{[]any{"expiretime", "k"}, "ttl>0"},
		{[]any{"set", "k", "v4"}, "OK"}, // a plain SET drops it
		{[]any{"ttl", "k"}, int64(-1)},
		{[]any{"expire", "k", 10, "gt"}, int64(0)}, // no TTL counts as forever
		{[]any{"expire", "k", 10, "lt"}, int64(1)},
		{[]any{"expire", "k", 20, "lt"}, int64(0)},
		{[]any{"expire", "k", 20, "nx"}, int64(0)},
		{[]any{"expire", "k", 20, "xx"}, int64(1)},
		{[]any{"expire", "k", 20, "nx", "xx"}, "error: ERR NX and XX, GT or LT options at the same time are not compatible"},
		{[]any{"set", "n", "10"}, "OK"},
		{[]any{"incrby", "n", 5}, int64(15)},
		{[]any{"decr", "n"}, int64(14)},
		{[]any{"incr", "k"}, "error: ERR value is not an integer or out of range"},
		{[]any{"set", "big", "9223372036854775807"}, "OK"},
		{[]any{"incr", "big"}, "error: ERR increment or decrement would overflow"},
		{[]any{"incrbyfloat", "f", "10.1"}, "10.1"},
		{[]any{"incrbyfloat", "f", "0.2"}, "10.3"},
		{[]any{"append", "s", "ab"}, int64(2)},
		{[]any{"append", "s", "cd"}, int64(4)},
		{[]any{"getrange", "s", 1, -2}, "bc"},
		{[]any{"setrange", "s", 6, "x"}, int64(7)},
		{[]any{"get", "s"}, "abcd\x00\x00x"},
		{[]any{"strlen", "s"}, int64(7)},
		{[]any{"getset", "s", "new"}, "abcd\x00\x00x"},
		{[]any{"getdel", "s"}, "new"},
		{[]any{"getdel", "s"}, nil},
		{[]any{"mset", "a", "1", "b", "2"}, "OK"},
		{[]any{"mset", "a", "1", "b"}, "error: ERR wrong number of arguments for 'mset' command"},
		{[]any{"msetnx", "a", "9", "c", "3"}, int64(0)},
		{[]any{"mget", "a", "b", "c"}, []any{"1", "2", nil}},
		{[]any{"rename", "a", "c"}, "OK"},
		{[]any{"rename", "zz", "c"}, "error: ERR no such key"},
		{[]any{"renamenx", "b", "c"}, int64(0)},
		{[]any{"copy", "c", "d"}, int64(1)},
		{[]any{"copy", "c", "d"}, int64(0)},
		{[]any{"copy", "c", "d", "replace"}, int64(1)},
		{[]any{"del", "c", "d", "nope"}, int64(2)},
		{[]any{"type", "b"}, "string"},
		{[]any{"type", "c"}, "none"},
		{[]any{"select", 0}, "OK"},
		{[]any{"select", 1}, "error: ERR DB index is out of range"},
		{[]any{"client", "setname", "me"}, "OK"},
		{[]any{"client", "getname"}, "me"},
		{[]any{"echo", "hi"}, "hi"},
		{[]any{"ping"}, "PONG"},
		{[]any{"nosuch", "a"}, "error: ERR unknown command 'nosuch', with args beginning with: 'a' "},
		{[]any{"get"}, "error: ERR wrong number of arguments for 'get' command"},
		{[]any{"hello", "4"}, "error: NOPROTO unsupported protocol version"},
	}
	for i, st := range steps {
		got := do(c, st.args...)
		if st.want == "ttl>0" {
			require.Greater(t, got, int64(time.Now().Unix()), "step %d %v", i, st.args)
			continue
		}
		require.Equal(t, st.want, got, "step %d %v", i, st.args)
	}
}

// MULTI/EXEC is one Update; WATCH makes EXEC fail once a watched key moved.
func TestMultiExec(t *testing.T) {
	s, addr := startServer(t, config{})
	ctx := context.Background()
	rdb := newClient(t, addr)
	c := rdb.Conn()
	defer c.Close()
	require.Equal(t, "OK", do(c, "multi"))
	require.Equal(t, "QUEUED", do(c, "set", "a", "1"))
	require.Equal(t, "QUEUED", do(c, "incr", "a"))
	require.Equal(t, "error: ERR wrong number of arguments for 'incr' command", do(c, "incr", "x", "y")) // refused: EXEC aborts
	require.Equal(t, "error: EXECABORT Transaction discarded because of previous errors.", do(c, "exec"))
	require.Nil(t, do(c, "get", "a"))

	rev := s.store.Rev()
	require.Equal(t, "OK", do(c, "multi"))
	do(c, "set", "a", "1")
	do(c, "incr", "a")
	do(c, "set", "b", "x")
	do(c, "incr", "b") // a runtime error: its reply, the rest goes on
	do(c, "dbsize")
	require.Equal(t, []any{"OK", int64(2), "OK", "error", int64(2)}, execReplies(t, c))
	require.Equal(t, rev+3, s.store.Rev(), "three writes, in one Update")
	es := s.store.History("a")
	require.Equal(t, es[len(es)-1].Time, s.store.History("b")[0].Time, "one commit time")

	// WATCH: another client's write makes EXEC return nil.
	require.Equal(t, "OK", do(c, "watch", "a"))
	require.Equal(t, "OK", do(rdb, "set", "a", "changed"))
	do(c, "multi")
	do(c, "set", "a", "mine")
	require.Nil(t, do(c, "exec"))
	require.Equal(t, "changed", do(rdb, "get", "a"))
	// Unchanged: it goes through.
	do(c, "watch", "a", "nokey")
	do(c, "multi")
	do(c, "set", "a", "mine")
	require.Equal(t, []any{"OK"}, do(c, "exec"))
	// An expiry of a watched key counts as a change.
	do(c, "set", "t", "v", "px", 30)
	do(c, "watch", "t")
	time.Sleep(60 * time.Millisecond)
	do(c, "multi")
	do(c, "set", "t", "again")
	require.Nil(t, do(c, "exec"))
	do(c, "set", "t", "v", "px", 30) // and to a transaction of reads alone
	do(c, "watch", "t")
	time.Sleep(60 * time.Millisecond)
	do(c, "multi")
	do(c, "get", "t")
	require.Nil(t, do(c, "exec"))
	require.Equal(t, "error: ERR EXEC without MULTI", do(c, "exec"))
	require.Equal(t, "error: ERR DISCARD without MULTI", do(c, "discard"))
	do(c, "multi")
	require.Equal(t, "error: ERR MULTI calls can not be nested", do(c, "multi"))
	require.Equal(t, "error: ERR WATCH inside MULTI is not allowed", do(c, "watch", "a"))
	require.Equal(t, "OK", do(c, "discard"))
	_ = ctx
}

// A transaction of reads alone answers as of the moment its EXEC was read:
// a write another client makes after that, before the EXEC runs, neither
// shows in it nor aborts it, as in Redis, which runs the EXEC first. A
// transaction that writes runs at its commit, and that write aborts it.
func TestReadOnlyExecAnswersAsOfItsArrival(t *testing.T) {
	s, addr := startServer(t, config{})
	rdb := newClient(t, addr)
	c := rdb.Conn()
	defer c.Close()
	other := newClient(t, addr)
	do(rdb, "set", "k", "before")
	var writes atomic.Int64
	hook := func() { // after the EXEC was read: another client writes k
		require.Equal(t, "OK", do(other, "set", "k", fmt.Sprint("after", writes.Add(1))))
	}
	s.execHook.Store(&hook)
	defer s.execHook.Store(nil)

	do(c, "watch", "k")
	do(c, "multi")
	do(c, "get", "k")
	do(c, "ping")
	require.Equal(t, []any{"before", "PONG"}, execReplies(t, c))
	require.Equal(t, "after1", do(rdb, "get", "k"))

	do(c, "watch", "k")
	do(c, "multi")
	do(c, "get", "k")
	do(c, "set", "j", "1")
	require.Nil(t, do(c, "exec"), "a transaction that writes sees the write after it")
	require.Nil(t, do(rdb, "get", "j"))
}

func execReplies(t *testing.T, c *redis.Conn) []any {
	v, err := c.Do(context.Background(), "exec").Result()
	require.NoError(t, err)
	out := []any{}
	for _, r := range v.([]any) {
		if _, ok := r.(redis.Error); ok {
			out = append(out, "error")
		} else {
			out = append(out, r)
		}
	}
	return out
}

// The history commands.
func TestHistoryCommands(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "set", "cfg/a", "1")
	do(c, "set", "cfg/a", "2")
	do(c, "set", "cfg/b", "x", "px", 100000)
	do(c, "del", "cfg/b")
	require.Equal(t, int64(4), do(c, "revkv.rev"))
	require.Equal(t, "1", do(c, "revkv.getat", "cfg/a", 1))
	require.Equal(t, nil, do(c, "revkv.getat", "cfg/b", 4))
	require.Equal(t, "error: FUTUREREV revkv: get \"cfg/a\" at 9: required revision is a future revision (latest is 4)", do(c, "revkv.getat", "cfg/a", 9))
	h := do(c, "revkv.history", "cfg/b").([]any)
	require.Len(t, h, 2)
	for _, e := range h {
		require.Len(t, e, 7, "key, op, rev, time, expires-at, value, annotations")
	}
	require.Equal(t, "cfg/b", h[0].([]any)[0])
	require.Equal(t, "put", h[0].([]any)[1])
	require.Equal(t, int64(3), h[0].([]any)[2])
	require.NotNil(t, h[0].([]any)[4], "expires-at")
	require.Equal(t, "x", h[0].([]any)[5])
	require.Equal(t, []any{}, h[0].([]any)[6])
	require.Equal(t, "delete", h[1].([]any)[1])
	require.Len(t, do(c, "revkv.history", "cfg/a", "count", 1), 1)
	ch := do(c, "revkv.changes", 2, 4, "cfg/").([]any)
	require.Len(t, ch, 3)
	require.Equal(t, []any{"cfg/b", "delete", int64(4)}, ch[2].([]any)[:3])
	require.Len(t, ch[2], 7, "CHANGES's entries are HISTORY's")
	require.Len(t, do(c, "revkv.changes", 1, 4), 4, "every key without a prefix")
	require.Equal(t, "error: ERR syntax error", do(c, "revkv.changes", 1, 2, "a", "b"))
	require.Equal(t, "error: ERR revision is not a whole number, 0 or more", do(c, "revkv.changes", "cfg/", 2, 4), "from, to, then the prefix, as DIFF")
	require.Equal(t, "error: ERR revision is not a whole number, 0 or more", do(c, "revkv.getat", "cfg/a", "1.5"), "not a whole number")
	require.Equal(t, "error: ERR revision is not a whole number, 0 or more", do(c, "revkv.getat", "cfg/a", -1))
	require.Equal(t, "error: ERR revision is not a whole number, 0 or more", do(c, "revkv.diff", -1, 2))
	time.Sleep(5 * time.Millisecond) // a millisecond after the writes, before now
	now := time.Now().UnixMilli() - 1
	require.Equal(t, "2", do(c, "revkv.getasof", "cfg/a", now))
	d := do(c, "revkv.diff", 1, 4, "cfg/").([]any)
	require.Len(t, d, 1, "cfg/b came and went: absent at both")
	require.Equal(t, "cfg/a", d[0].([]any)[0])
	require.Len(t, d[0].([]any)[1], 7, "DIFF's entries are HISTORY's")
	require.Equal(t, "1", d[0].([]any)[1].([]any)[5])
	require.Equal(t, "2", d[0].([]any)[2].([]any)[5])
	d = do(c, "revkv.diff", 2, 3).([]any)
	require.Len(t, d, 1)
	require.Nil(t, d[0].([]any)[1], "cfg/b absent at 2")
	require.Equal(t, "error: FUTUREREV revkv: diff \"\" from 4 to 3: required revision is a future revision (from is after to 3)", do(c, "revkv.diff", 4, 3))
	require.Equal(t, "error: ERR syntax error", do(c, "revkv.diff", 1, 2, "a", "b"))
	require.Equal(t, "OK", do(c, "revkv.compact", 3))
	require.Equal(t, int64(3), do(c, "revkv.floor"))
	got := do(c, "revkv.getat", "cfg/a", 1).(string)
	require.Equal(t, `error: COMPACTED revkv: get "cfg/a" at 1: required revision has been compacted (oldest readable is 3)`, got, "it names the oldest to ask for")
	require.Equal(t, "2", do(c, "revkv.getat", "cfg/a", 3))
	got = do(c, "revkv.changes", 1, 4, "cfg/").(string)
	require.True(t, strings.HasPrefix(got, "error: COMPACTED "), got)
}

// REVKV.WATCH streams entries, history first, on its connection.
func TestWatchCommand(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "set", "w/a", "1")
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "REVKV.WATCH w/ 1\r\n")
	r := bufio.NewReader(conn)
	line, _ := r.ReadString('\n')
	require.Equal(t, "+OK\r\n", line)
	do(c, "set", "w/b", "2")
	do(c, "set", "other", "3")
	do(c, "del", "w/a")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []string
	for len(got) < 3 {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if op := strings.TrimSpace(line); op == "put" || op == "delete" {
			got = append(got, op)
		}
	}
	require.Equal(t, []string{"put", "put", "delete"}, got)
}

// Bad clients get a protocol error and a closed connection; nobody else
// notices.
// sendRaw writes raw bytes on a new connection and returns everything the
// server answers until it closes the connection (or QUIT does).
func sendRaw(t *testing.T, addr, raw string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, raw)
	out, _ := io.ReadAll(conn)
	return string(out)
}

func TestHostileClients(t *testing.T) {
	s, addr := startServer(t, config{maxValue: 1 << 20, maxClients: 3000})
	c := newClient(t, addr)
	send := func(raw string) string { return sendRaw(t, addr, raw) }
	require.Equal(t, "-ERR Protocol error: invalid multibulk length\r\n", send("*x\r\n"))
	require.Equal(t, "-ERR Protocol error: invalid bulk length\r\n", send("*1\r\n$99999999999\r\n"))
	require.Equal(t, "-ERR Protocol error: invalid bulk length\r\n", send("*1\r\n$2000000\r\n"), "over --max-value")
	require.Equal(t, "-ERR Protocol error: expected '$', got 'x'\r\n", send("*1\r\nx\r\n"))
	require.Equal(t, "-ERR Protocol error: unbalanced quotes in request\r\n", send("set \"a b\r\n"))
	require.Equal(t, "-ERR Protocol error: too big inline request\r\n", send(strings.Repeat("a", 70<<10)))
	require.Equal(t, "+PONG\r\n+OK\r\n$1\r\nv\r\n+OK\r\n", send("PING\r\n*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\nget k\r\nQUIT\r\n"), "inline and multibulk mixed, then QUIT")
	// A client dropped in the middle of a pipeline and of a bulk string.
	conn, _ := net.Dial("tcp", addr)
	io.WriteString(conn, "*3\r\n$3\r\nset\r\n$1\r\nq\r\n$100\r\nabc")
	conn.Close()
	// A client that never reads its replies fills its socket and waits;
	// others are served meanwhile.
	do(c, "set", "big", strings.Repeat("x", 64<<10))
	stuck, _ := net.Dial("tcp", addr)
	defer stuck.Close()
	go func() {
		for range 2000 {
			if _, err := io.WriteString(stuck, "GET big\r\n"); err != nil {
				return
			}
		}
	}()
	// Thousands of idle connections.
	var idle []net.Conn
	for range 1000 {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		idle = append(idle, conn)
	}
	start := time.Now()
	require.Equal(t, "PONG", do(c, "ping"))
	require.Equal(t, "OK", do(c, "set", "still", "here"))
	t.Logf("served beside a stuck client and 1,000 idle ones in %v", time.Since(start))
	for _, conn := range idle {
		conn.Close()
	}
	_ = s
}

// --requirepass: AUTH with Redis's texts.
func TestAuth(t *testing.T) {
	_, addr := startServer(t, config{requirepass: "sesame"})
	c := newClient(t, addr)
	require.Equal(t, "error: NOAUTH Authentication required.", do(c, "get", "a"))
	require.Equal(t, "error: WRONGPASS invalid username-password pair or user is disabled.", do(c, "auth", "nope"))
	ok := newClient(t, addr, func(o *redis.Options) { o.Password = "sesame" })
	require.Equal(t, "PONG", do(ok, "ping"))
	_, addr2 := startServer(t, config{})
	require.Equal(t, "error: ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", do(newClient(t, addr2), "auth", "x"))
}

// go-redis's defaults: HELLO 3 first, and RESP2 after the error; pipelines.
func TestGoRedisDefaults(t *testing.T) {
	_, addr := startServer(t, config{})
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "a", "1", time.Minute).Err())
	require.Equal(t, "1", c.Get(ctx, "a").Val())
	require.InDelta(t, time.Minute, c.TTL(ctx, "a").Val(), float64(time.Second))
	pipe := c.Pipeline()
	for i := range 100 {
		pipe.Set(ctx, fmt.Sprint("p", i), i, 0)
		pipe.Get(ctx, fmt.Sprint("p", i))
	}
	cmds, err := pipe.Exec(ctx)
	require.NoError(t, err)
	require.Equal(t, "99", cmds[199].(*redis.StringCmd).Val())
	keys, cursor, err := c.Scan(ctx, 0, "p*", 30).Result()
	require.NoError(t, err)
	seen := map[string]bool{}
	for {
		for _, k := range keys {
			seen[k] = true
		}
		if cursor == 0 {
			break
		}
		c.Set(ctx, "p-new", 1, 0) // writes between calls do not break the cursor
		keys, cursor, err = c.Scan(ctx, cursor, "p*", 30).Result()
		require.NoError(t, err)
	}
	for i := range 100 {
		require.True(t, seen[fmt.Sprint("p", i)], "p%d", i)
	}
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "n")
		p.Incr(ctx, "n")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "2", c.Get(ctx, "n").Val())
}

// Before AUTH, with --requirepass, a client may send what AUTH needs and
// no more, as in Redis: 10 arguments, 16 KiB each. It cannot make the
// server hold 512 MB for it without the password.
func TestUnauthenticatedLimits(t *testing.T) {
	_, addr := startServer(t, config{requirepass: "sesame"})
	send := func(raw string) string { return sendRaw(t, addr, raw) }
	require.Equal(t, "-ERR Protocol error: unauthenticated multibulk length\r\n", send("*11\r\n"))
	require.Equal(t, "-ERR Protocol error: unauthenticated bulk length\r\n", send("*2\r\n$4\r\nauth\r\n$16385\r\n"))
	require.Equal(t, "-NOAUTH Authentication required.\r\n+OK\r\n", send("*10\r\n"+strings.Repeat("$3\r\nget\r\n", 10)+"QUIT\r\n"))
	big := strings.Repeat("x", 20000)
	require.Equal(t, "+OK\r\n+OK\r\n+OK\r\n", send("AUTH sesame\r\n*3\r\n$3\r\nset\r\n$1\r\nk\r\n$20000\r\n"+big+"\r\nQUIT\r\n"), "no limit once authenticated")
}

// TestAbsoluteExpiryIsExact: EXAT, PXAT, EXPIREAT, PEXPIREAT and GETEX's
// EXAT/PXAT hand the store the instant itself, so the key expires at that
// millisecond, not one before it (as it did when they were turned into a
// TTL against the server's clock); KEEPTTL keeps the instant exactly; an
// instant already past deletes the key, as in Redis.
func TestAbsoluteExpiryIsExact(t *testing.T) {
	s, addr := startServer(t, config{})
	c := newClient(t, addr)
	sec := time.Now().Add(time.Hour).Unix()
	ms := time.Now().Add(2*time.Hour).UnixMilli() + 7
	expiresAt := func(key string) time.Time {
		t.Helper()
		e, ok := s.store.GetEntry(key)
		require.True(t, ok, key)
		return e.ExpiresAt
	}
	for _, tc := range []struct {
		args []any
		want time.Time
	}{
		{[]any{"SET", "a", "v", "EXAT", sec}, time.Unix(sec, 0)},
		{[]any{"SET", "a", "v", "PXAT", ms}, time.UnixMilli(ms)},
		{[]any{"SET", "a", "w", "KEEPTTL"}, time.UnixMilli(ms)},
		{[]any{"EXPIREAT", "a", sec}, time.Unix(sec, 0)},
		{[]any{"PEXPIREAT", "a", ms + 1}, time.UnixMilli(ms + 1)},
		{[]any{"GETEX", "a", "EXAT", sec + 1}, time.Unix(sec+1, 0)},
		{[]any{"GETEX", "a", "PXAT", ms + 2}, time.UnixMilli(ms + 2)},
		{[]any{"SET", "a", "v", "PXAT", int64(math.MaxInt64)}, time.Unix(0, math.MaxInt64)},
	} {
		require.NotContains(t, fmt.Sprint(do(c, tc.args...)), "error", "%v", tc.args)
		require.True(t, expiresAt("a").Equal(tc.want), "%v: expires at %v, want %v", tc.args, expiresAt("a"), tc.want)
	}
	do(c, "PEXPIREAT", "a", ms+2) // PEXPIRETIME answers the millisecond given
	require.Equal(t, ms+2, do(c, "PEXPIRETIME", "a"))
	do(c, "EXPIREAT", "a", sec)
	require.Equal(t, sec, do(c, "EXPIRETIME", "a"))

	past := time.Now().Add(-time.Second).UnixMilli()
	require.Equal(t, "OK", do(c, "SET", "b", "v", "PXAT", past))
	require.Nil(t, do(c, "GET", "b"), "an instant past sets and deletes")
	do(c, "SET", "b", "v")
	require.Equal(t, int64(1), do(c, "PEXPIREAT", "b", past))
	require.Nil(t, do(c, "GET", "b"))
	do(c, "SET", "b", "v")
	require.Equal(t, "v", do(c, "GETEX", "b", "PXAT", past))
	require.Nil(t, do(c, "GET", "b"))
}

// TestMaxValueBoundsStrings: --max-value is Redis's proto-max-bulk-len
// for the strings APPEND and SETRANGE make too, not only for what a client
// sends: a client cannot grow a value past it a few bytes at a time.
func TestMaxValueBoundsStrings(t *testing.T) {
	_, addr := startServer(t, config{maxValue: 1 << 16})
	c := newClient(t, addr)
	tooBig := "error: ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	require.Equal(t, tooBig, do(c, "SETRANGE", "k", 1<<16, "x"))
	require.Equal(t, int64(1<<16), do(c, "SETRANGE", "k", 1<<16-1, "x"))
	require.Equal(t, tooBig, do(c, "APPEND", "k", "y"))
	require.Equal(t, int64(1<<16), do(c, "STRLEN", "k"))
}

// TestScanForgottenCursor: a cursor the server handed out and has since
// forgotten (it keeps the newest) is not refused: the scan starts again
// from the first key, so every key is still returned.
func TestScanForgottenCursor(t *testing.T) {
	s, addr := startServer(t, config{})
	s.cursors.mu.Lock()
	s.cursors.max = 1
	s.cursors.mu.Unlock()
	c := newClient(t, addr)
	ctx := context.Background()
	for i := range 5 {
		require.NoError(t, c.Set(ctx, fmt.Sprint("k", i), i, 0).Err())
	}
	_, first, err := c.Scan(ctx, 0, "", 2).Result()
	require.NoError(t, err)
	_, _, err = c.Scan(ctx, 0, "", 2).Result() // forgets the first cursor
	require.NoError(t, err)
	seen := map[string]bool{}
	for cursor := first; ; {
		keys, next, err := c.Scan(ctx, cursor, "", 2).Result()
		require.NoError(t, err, "cursor %d", cursor)
		for _, k := range keys {
			seen[k] = true
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	require.Len(t, seen, 5)
}
