package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// The collection types' behaviour that TestDifferential cannot check
// against Redis: the reserved prefix, one exact expiry per collection, no
// old element after a key is written again, history, REVKV.AT.

func TestReservedPrefixIsRefused(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	require.Equal(t, "error: "+errReserved, do(c, "set", internal+"k", "v"))
	require.Equal(t, "error: "+errReserved, do(c, "hset", "h", internal+"f", "v"))
	require.Equal(t, "OK", do(c, "set", "s", internal[:3]))
	require.Equal(t, "error: "+errReserved, do(c, "append", "s", "kM"), "APPEND must not make a value that reads as metadata")
	require.Equal(t, "OK", do(c, "set", "s", "\xffXrk"))
	require.Equal(t, "error: "+errReserved, do(c, "setrange", "s", "1", "\x00"))
	require.Equal(t, "OK", do(c, "set", "\xff\x00z", "a user's key, past the internal ones"))
	require.Equal(t, int64(2), do(c, "dbsize"), "s and the key past the internal ones")
	// Pipelined plain SETs go through their own path: refused there too.
	p := c.Pipeline()
	p.Set(context.Background(), internal+"x", "v", 0)
	p.Set(context.Background(), "ok", "v", 0)
	cmds, _ := p.Exec(context.Background())
	require.Error(t, cmds[0].Err())
	require.NoError(t, cmds[1].Err())
}

func TestCollectionsHideTheirElements(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "hset", "h", "a", "1", "b", "2")
	do(c, "rpush", "l", "x", "y")
	do(c, "sadd", "s", "m")
	do(c, "zadd", "z", "1", "m")
	do(c, "set", "str", "v")
	require.Equal(t, int64(5), do(c, "dbsize"))
	keys := toStrings(do(c, "keys", "*"))
	slices.Sort(keys)
	require.Equal(t, []string{"h", "l", "s", "str", "z"}, keys)
	for k, typ := range map[string]string{"h": "hash", "l": "list", "s": "set", "z": "zset", "str": "string", "none": "none"} {
		require.Equal(t, typ, do(c, "type", k), k)
	}
	require.Equal(t, []any{"0", []any{"z"}}, do(c, "scan", "0", "type", "zset"))
	require.Equal(t, "error: "+errWrongType, do(c, "get", "h"))
	require.Equal(t, "error: "+errWrongType, do(c, "hget", "str", "a"))
	require.Equal(t, []any{"v", nil}, do(c, "mget", "str", "h"))
	// RENAME moves the whole collection; COPY copies it apart.
	require.Equal(t, "OK", do(c, "rename", "h", "h2"))
	require.Equal(t, int64(1), do(c, "copy", "h2", "h3"))
	do(c, "hset", "h3", "c", "3")
	require.Equal(t, int64(2), do(c, "hlen", "h2"))
	require.Equal(t, int64(3), do(c, "hlen", "h3"))
	// SET over a collection replaces it; DEL deletes its elements.
	require.Equal(t, "OK", do(c, "set", "l", "now a string"))
	require.Equal(t, int64(1), do(c, "del", "h3"))
	require.Equal(t, int64(0), do(c, "exists", "h3"))
	require.Equal(t, "listpack", do(c, "object", "encoding", "z"))
}

func TestCollectionExpiresWholeAndAlone(t *testing.T) {
	s, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "hset", "h", "old", "1")
	require.Equal(t, int64(1), do(c, "pexpire", "h", "100"))
	do(c, "hset", "h", "old2", "2") // keeps the TTL, as Redis
	ttl := do(c, "pttl", "h").(int64)
	require.Greater(t, ttl, int64(0))
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, int64(0), do(c, "exists", "h"))
	require.Equal(t, int64(0), do(c, "hlen", "h"))
	require.Equal(t, int64(1), do(c, "hset", "h", "new", "3"))
	require.Equal(t, []any{"new", "3"}, do(c, "hgetall", "h"), "an element of the expired hash came back")
	// The sweeper deletes the expired hash's elements, and only those.
	require.Equal(t, 2, s.sweep())
	require.Equal(t, 0, s.sweep())
	require.Equal(t, []any{"new", "3"}, do(c, "hgetall", "h"))
	require.Equal(t, "OK", do(c, "rename", "h", "h2"))
	require.Equal(t, 0, s.sweep(), "a renamed hash is its new key's")
	require.Equal(t, "OK", do(c, "set", "h2", "a string now"))
	require.Equal(t, 0, s.sweep(), "SET over a hash deletes its elements in its own write")
	// The expiry is one entry of the key's history.
	expiries := 0
	for _, e := range s.store.History("h") {
		if e.Op == revkv.OpExpire {
			expiries++
		}
	}
	require.Equal(t, 1, expiries)
}

// The sweeper stops when the store cannot write (closed, or a failed
// disk), rather than trying the same Update for ever.
func TestSweepStopsOnAClosedStore(t *testing.T) {
	s, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "hset", "h", "a", "1")
	require.Equal(t, int64(1), do(c, "pexpire", "h", "1"))
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, int64(0), do(c, "exists", "h"))
	require.NoError(t, s.store.Close())
	done := make(chan int, 1)
	go func() { done <- s.sweep() }()
	select {
	case n := <-done:
		require.Equal(t, 0, n)
	case <-time.After(5 * time.Second):
		t.Fatal("the sweep of a closed store did not end")
	}
}

func TestCollectionHistory(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "hset", "h", "a", "1")
	do(c, "hset", "h", "a", "2")
	do(c, "hdel", "h", "a")
	h := do(c, "revkv.history", "h").([]any)
	var got []string
	for _, x := range h {
		e := x.([]any)
		got = append(got, fmt.Sprint(e[0], " ", e[1], " ", e[5]))
	}
	require.Equal(t, []string{"h put [a 1]", "h put hash", "h put [a 2]", "h delete [a <nil>]", "h delete <nil>"}, got)
}

// TestAtMatchesThePast runs random collection writes, records every read
// command's reply after each, and then asks REVKV.AT REV for each of those
// revisions: every answer must be the one recorded then.
func TestAtMatchesThePast(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	t.Logf("seed of the run: see the failure's commands")
	reads := [][]any{{"hgetall", "h"}, {"lrange", "l", "0", "-1"}, {"smembers", "s"},
		{"zrange", "z", "0", "-1", "withscores"}, {"zrangebyscore", "z", "1", "3"}, {"type", "h"},
		{"hlen", "h"}, {"llen", "l"}, {"scard", "s"}, {"zcard", "z"}, {"get", "h"}, {"dbsize"}}
	type snap struct {
		rev     int64
		replies []string
	}
	var snaps []snap
	el := func() string { return fmt.Sprint(rng.IntN(6)) }
	for range 300 {
		var w []any
		switch rng.IntN(9) {
		case 0:
			w = []any{"hset", "h", el(), el()}
		case 1:
			w = []any{"hdel", "h", el()}
		case 2:
			w = []any{"lpush", "l", el()}
		case 3:
			w = []any{"rpop", "l"}
		case 4:
			w = []any{"sadd", "s", el()}
		case 5:
			w = []any{"srem", "s", el()}
		case 6:
			w = []any{"zadd", "z", el(), el()}
		case 7:
			w = []any{"zpopmin", "z"}
		case 8:
			w = []any{"del", []string{"h", "l", "s", "z"}[rng.IntN(4)]}
		}
		do(c, w...)
		sn := snap{rev: do(c, "revkv.rev").(int64)}
		for _, r := range reads {
			sn.replies = append(sn.replies, fmt.Sprint(do(c, r...)))
		}
		snaps = append(snaps, sn)
	}
	for _, i := range rng.Perm(len(snaps))[:100] {
		sn := snaps[i]
		for j, r := range reads {
			got := fmt.Sprint(do(c, append([]any{"revkv.at", "rev", sn.rev}, r...)...))
			require.Equal(t, sn.replies[j], got, "REVKV.AT REV %d %v", sn.rev, r)
		}
	}
	require.Contains(t, do(c, "revkv.at", "rev", "1", "hset", "h", "a", "b"), "read commands only")
	require.Contains(t, do(c, "revkv.at", "rev", "999999", "hgetall", "h"), "FUTUREREV")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	require.Equal(t, fmt.Sprint(do(c, "hgetall", "h")), fmt.Sprint(do(c, "revkv.at", "time", now, "hgetall", "h")))
}

func TestCollectionHistorySurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() (*server, *redis.Client) {
		store, err := revkv.Open(dir, revkv.BytesCodec())
		require.NoError(t, err)
		s, addr := startServerOn(t, config{}, store)
		return s, newClient(t, addr)
	}
	s, c := open()
	do(c, "zadd", "board", "10", "alice", "20", "bob")
	rev := do(c, "revkv.rev").(int64)
	do(c, "zadd", "board", "30", "alice")
	before := fmt.Sprint(do(c, "revkv.history", "board"))
	require.NoError(t, s.store.Close())
	_, c = open()
	require.Equal(t, before, fmt.Sprint(do(c, "revkv.history", "board")))
	require.Equal(t, []any{"alice", "10", "bob", "20"}, do(c, "revkv.at", "rev", rev, "zrange", "board", "0", "-1", "withscores"))
	require.Equal(t, []any{"bob", "20", "alice", "30"}, do(c, "zrange", "board", "0", "-1", "withscores"))
}

func TestBlockedClientsAreServedInOrder(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	var results []chan any
	for i := range 3 {
		ch := make(chan any, 1)
		results = append(results, ch)
		b := newClient(t, addr)
		go func() { ch <- do(b, "blpop", "q", "5") }()
		require.Eventually(t, func() bool {
			return strings.Contains(fmt.Sprint(do(c, "info", "clients")), fmt.Sprint("blocked_clients:", i+1))
		},
			2*time.Second, 5*time.Millisecond)
	}
	require.Equal(t, int64(3), do(c, "rpush", "q", "a", "b", "c"))
	for i, want := range []string{"a", "b", "c"} {
		require.Equal(t, []any{"q", want}, <-results[i])
	}
	require.Equal(t, int64(0), do(c, "exists", "q"))
}

func TestSlowSubscriberIsCutOff(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	require.Equal(t, "OK", do(c, "config", "set", "client-output-buffer-limit", "pubsub 65536 0 0"))
	sub := newClient(t, addr).Subscribe(context.Background(), "news")
	_, err := sub.Receive(context.Background())
	require.NoError(t, err)
	// The subscriber reads nothing; the publisher must never wait on it.
	big := strings.Repeat("x", 1<<20)
	start := time.Now()
	for range 20 {
		do(c, "publish", "news", big)
	}
	require.Less(t, time.Since(start), 5*time.Second)
	require.Eventually(t, func() bool { return do(c, "publish", "news", "x") == int64(0) }, 2*time.Second, 10*time.Millisecond)
	sub.Close()
}

func TestPubSub(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	sub := newClient(t, addr).PSubscribe(context.Background(), "n*")
	_, err := sub.Receive(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(1), do(c, "publish", "news", "hello"))
	m, err := sub.ReceiveMessage(context.Background())
	require.NoError(t, err)
	require.Equal(t, "news", m.Channel)
	require.Equal(t, "n*", m.Pattern)
	require.Equal(t, "hello", m.Payload)
	require.Equal(t, int64(1), do(c, "pubsub", "numpat"))
	require.Equal(t, int64(0), do(c, "publish", "other", "x"))
	sub.Close()
}

func TestWatchSeesElementWrites(t *testing.T) {
	_, addr := startServer(t, config{})
	c, other := newClient(t, addr).Conn(), newClient(t, addr)
	defer c.Close()
	do(c, "hset", "h", "a", "1")
	require.Equal(t, "OK", do(c, "watch", "h"))
	do(other, "hset", "h", "a", "2") // an element only: the metadata's count is unchanged
	require.Equal(t, "OK", do(c, "multi"))
	require.Equal(t, "QUEUED", do(c, "hset", "h", "a", "3"))
	require.Nil(t, do(c, "exec"))
	require.Equal(t, "2", do(c, "hget", "h", "a"))
}

func TestDiffShowsElements(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "sadd", "tags", "red", "blue")
	from := do(c, "revkv.rev").(int64)
	do(c, "srem", "tags", "red")
	do(c, "sadd", "tags", "green")
	to := do(c, "revkv.rev").(int64)
	var rows []string
	for _, x := range do(c, "revkv.diff", from, to).([]any) {
		r := x.([]any)
		side := func(e any) string {
			if e == nil {
				return "nil"
			}
			return fmt.Sprint(e.([]any)[1], " ", e.([]any)[5])
		}
		rows = append(rows, fmt.Sprint(r[0], ": ", side(r[1]), " -> ", side(r[2])))
	}
	require.Equal(t, []string{"tags: put set -> put set", "tags: nil -> put [green]", "tags: put [red] -> nil"}, rows)
	// A key deleted and written again: the old elements go, the new come.
	do(c, "del", "tags")
	do(c, "sadd", "tags", "new")
	rows = rows[:0]
	for _, x := range do(c, "revkv.diff", to, do(c, "revkv.rev")).([]any) {
		r := x.([]any)
		rows = append(rows, fmt.Sprint(r[1] != nil, r[2] != nil))
	}
	require.Equal(t, []string{"true true", "true false", "true false", "false true"}, rows)
}

// TestCollectionsInHistoryReplies: every REVKV reply shows a collection
// by its type, never its internal record: CHANGES and WATCH show its own
// entries as its type, GETAT and GETASOF answer WRONGTYPE as GET does,
// and DIFF over it works after a compaction (the empty state its new
// elements are compared with is known whatever the floor).
func TestCollectionsInHistoryReplies(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "set", "s", "x")
	do(c, "hset", "h", "f", "1")
	do(c, "hset", "h", "g", "2")
	rev := do(c, "revkv.rev").(int64)
	var vals []any
	for _, e := range do(c, "revkv.changes", 1, rev).([]any) {
		vals = append(vals, e.([]any)[0], e.([]any)[5])
	}
	require.Equal(t, []any{"s", "x", "h", "hash", "h", "hash"}, vals, "the hash's own entries, as its type")
	require.Equal(t, "error: "+errWrongType, do(c, "revkv.getat", "h", rev))
	time.Sleep(2 * time.Millisecond) // a millisecond after the writes, before now
	require.Equal(t, "error: "+errWrongType, do(c, "revkv.getasof", "h", time.Now().UnixMilli()))
	require.Equal(t, "x", do(c, "revkv.getat", "s", rev))

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "REVKV.WATCH h 1\r\n")
	r := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var lines []string
	for len(lines) == 0 || lines[len(lines)-1] != "hash" {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		require.NotContains(t, line, internal, "no internal bytes")
		lines = append(lines, strings.TrimSpace(line))
	}

	require.Equal(t, "OK", do(c, "revkv.compact", 2))
	rows := do(c, "revkv.diff", 2, rev).([]any)
	require.Len(t, rows, 3, "h, then its elements f and g")
	do(c, "del", "h")
	rows = do(c, "revkv.diff", rev, do(c, "revkv.rev")).([]any)
	require.Len(t, rows, 3, "h, and both elements gone")
}

// TestRESP3 checks RESP3's shapes, byte for byte, after HELLO 3: maps,
// sets, doubles, pairs, nulls, pushes; and RESP2's back after HELLO 2.
func TestRESP3(t *testing.T) {
	_, addr := startServer(t, config{})
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	send := func(in, want string) {
		t.Helper()
		_, err := conn.Write([]byte(in))
		require.NoError(t, err)
		got := make([]byte, len(want))
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadFull(r, got)
		require.NoError(t, err)
		require.Equal(t, want, string(got), "reply to %q", in)
	}
	send("HELLO 3\r\n", "%7\r\n$6\r\nserver\r\n")
	for { // the rest of HELLO's map, which ends with modules' empty array (its id varies)
		l, err := r.ReadString('\n')
		require.NoError(t, err)
		if l == "*0\r\n" {
			break
		}
	}
	send("ZADD z 1 a 2.5 b\r\nZRANGE z 0 -1 WITHSCORES\r\n", ":2\r\n*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2.5\r\n")
	send("ZPOPMIN z\r\nZSCORE z b\r\n", "*2\r\n$1\r\na\r\n,1\r\n,2.5\r\n")
	send("HSET h f v\r\nHGETALL h\r\nSMEMBERS none\r\nGET none\r\n", ":1\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n~0\r\n_\r\n")
	send("SUBSCRIBE c\r\nGET none\r\n", ">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n_\r\n") // RESP3 allows any command once subscribed
	send("UNSUBSCRIBE\r\nHELLO 2\r\n", ">3\r\n$11\r\nunsubscribe\r\n$1\r\nc\r\n:0\r\n*14\r\n")
}

// ZRANK, by the rank cache's tree (zcache.go): every member's rank, near
// either end or in the middle, from the bottom and from the top.
func TestZRankFromBothEnds(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	const n = 101
	for i := range n {
		do(c, "zadd", "z", i%7, fmt.Sprintf("m%03d", i)) // ties: ordered by member
	}
	all := do(c, "zrange", "z", "0", "-1").([]any)
	require.Len(t, all, n)
	for rank, m := range all {
		require.Equal(t, int64(rank), do(c, "zrank", "z", m), "%v", m)
		require.Equal(t, int64(n-1-rank), do(c, "zrevrank", "z", m), "%v", m)
	}
	require.Nil(t, do(c, "zrank", "z", "none"))
}
