package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

var (
	diffSeed  = flag.Uint64("diff-seed", 0, "seed of TestDifferential (0: from the clock)")
	diffSteps = flag.Int("diff-steps", 1500, "commands per run of TestDifferential")
)

// startRedis starts a real redis-server on a free loopback port, in
// memory, or skips the test when there is none.
func startRedis(t *testing.T) string {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server): the differential test needs it")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(path, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprint("127.0.0.1:", port)
	c := newClient(t, addr)
	for i := 0; ; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return addr
		}
		require.Less(t, i, 100, "redis-server did not start")
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDifferential sends the same seeded random commands — every command
// of the server but the history ones, with random keys, values, TTLs and
// options, one at a time, pipelined, and in MULTI/EXEC — to revkv-server
// and to a real redis-server, and compares every reply (TTLs within a
// tolerance; KEYS and SCAN as sets; RANDOMKEY by whether there is one).
func TestDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	_, revkvAddr := startServer(t, config{})
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -diff-seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	wantClient, gotClient := newClient(t, redisAddr), newClient(t, revkvAddr)
	want, got := wantClient.Conn(), gotClient.Conn()
	defer func() { want.Close(); got.Close() }()
	g := &gen{rng: rng}
	var trace []string
	compare := func(args []any, w, o any, werr, oerr error) {
		trace = append(trace, fmt.Sprint(args))
		if len(trace) > 30 {
			trace = trace[1:]
		}
		ws, os := replyString(args, w, werr), replyString(args, o, oerr)
		if !same(args, ws, os) {
			t.Fatalf("seed %d: %v\nredis: %s\nrevkv: %s\nlast commands:\n  %s", seed, args, ws, os, strings.Join(trace, "\n  "))
		}
	}
	for n := 0; n < *diffSteps; {
		switch k := rng.IntN(20); {
		case k == 0: // a pipeline
			batch := make([][]any, 2+rng.IntN(10))
			if rng.IntN(10) == 0 { // longer than a run of writes (maxRun)
				batch = make([][]any, maxRun+rng.IntN(maxRun))
			}
			for i := range batch {
				batch[i] = g.command()
			}
			wc, _ := want.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, a := range batch {
					p.Do(ctx, a...)
				}
				return nil
			})
			oc, _ := got.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, a := range batch {
					p.Do(ctx, a...)
				}
				return nil
			})
			for i := range batch {
				wv, werr := wc[i].(*redis.Cmd).Result()
				ov, oerr := oc[i].(*redis.Cmd).Result()
				compare(batch[i], wv, ov, werr, oerr)
			}
			n += len(batch)
		case k == 1: // a transaction, sometimes with a WATCH
			script := [][]any{}
			if rng.IntN(2) == 0 {
				script = append(script, []any{"watch", g.key()})
				script = append(script, g.command())
			}
			script = append(script, []any{"multi"})
			for range 1 + rng.IntN(4) {
				a := g.command()
				for slices.Contains(notInArray, a[0]) {
					a = g.command()
				}
				script = append(script, a)
			}
			script = append(script, []any{"exec"})
			for _, a := range script {
				wv, werr := want.Do(ctx, a...).Result()
				ov, oerr := got.Do(ctx, a...).Result()
				compare(a, wv, ov, werr, oerr)
			}
			n += len(script)
		case k == 2 && rng.IntN(10) == 0: // QUIT, then new connections
			a := []any{"quit"}
			wv, werr := want.Do(ctx, a...).Result()
			ov, oerr := got.Do(ctx, a...).Result()
			compare(a, wv, ov, werr, oerr)
			want.Close()
			got.Close()
			// new clients: their pools would hand the closed connections back
			wantClient, gotClient = newClient(t, redisAddr), newClient(t, revkvAddr)
			want, got = wantClient.Conn(), gotClient.Conn()
			n++
		default:
			a := g.command()
			wv, werr := want.Do(ctx, a...).Result()
			ov, oerr := got.Do(ctx, a...).Result()
			compare(a, wv, ov, werr, oerr)
			n++
		}
	}
}

// gen draws commands.
type gen struct{ rng *rand.Rand }

func (g *gen) key() string { return fmt.Sprint("k", g.rng.IntN(8)) }

func (g *gen) value() string {
	switch g.rng.IntN(4) {
	case 0:
		return fmt.Sprint(g.rng.IntN(200) - 100)
	case 1:
		return fmt.Sprintf("%d.%d", g.rng.IntN(100), g.rng.IntN(10))
	case 2:
		return ""
	}
	return strings.Repeat(string(rune('a'+g.rng.IntN(26))), 1+g.rng.IntN(12))
}

func (g *gen) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

// notInArray are the commands kept out of MULTI/EXEC: their replies are
// unordered, inexact or not Redis's, which replyString and same allow for
// alone, not inside an array; and AUTH, whose WRONGPASS inside EXEC's
// array go-redis reads as the whole reply's error, losing its place.
var notInArray = []any{"keys", "scan", "ttl", "pttl", "expiretime", "pexpiretime",
	"randomkey", "time", "info", "hello", "client", "command", "auth", "dbsize",
	"hkeys", "hvals", "hgetall", "smembers", "sinter", "sunion", "sdiff",
	"srandmember", "hrandfield", "zrandmember", "hscan", "sscan", "zscan"}

// Integer arguments at their edges: int64's ends, past them, -1, 0, and
// what is no integer.
var edgeInts = []string{"9223372036854775807", "-9223372036854775808", "9223372036854775808",
	"18446744073709551616", "-1", "0", "x", "", "1.5", " 1", "+1", "007"}

func (g *gen) edge() string { return edgeInts[g.rng.IntN(len(edgeInts))] }

// seconds draws an expiry in seconds far enough away that no key expires
// while the test runs (expiry itself is checked by the in-process tests),
// or an invalid one, or one at the edges of what Redis takes (past 2262,
// where revkv-server keeps it at the end of the store's clock).
func (g *gen) seconds() any {
	switch g.rng.IntN(14) {
	case 0:
		return 0
	case 1:
		return -3
	case 2:
		return "x"
	case 3:
		return "9223372036854775807"
	case 4:
		return g.pick("9223372036854", "9223372036854775", "-9223372036854775808", "9223372036854775808")
	}
	return 10 + g.rng.IntN(1000)
}

// millis is seconds for the options in milliseconds.
func (g *gen) millis() any {
	if g.rng.IntN(10) == 0 {
		return g.pick("9200000000000000000", "9223372036854775807", "-9223372036854775808")
	}
	if n, ok := g.seconds().(int); ok && n >= 10 {
		return n * 1000
	}
	return g.seconds()
}

// at draws an EXAT (ms false) or PXAT argument: ahead, far ahead, past
// the store's clock, or past what Redis takes.
func (g *gen) at(ms bool) any {
	now := time.Now()
	if ms {
		switch g.rng.IntN(6) {
		case 0:
			return g.pick("9223372036854775807", "0", "-1", "x")
		case 1:
			return now.UnixMilli() - 1_000_000 // past: set and gone at once
		}
		return now.UnixMilli() + int64(50_000+g.rng.IntN(1_000_000))
	}
	if g.rng.IntN(6) == 0 {
		return g.pick("9223372036854775", "9223372036854776", "0", "x")
	}
	return now.Unix() + int64(100+g.rng.IntN(1000))
}

func (g *gen) command() []any {
	if g.rng.IntN(2) == 0 {
		return g.collCommand()
	}
	k := g.key()
	switch g.rng.IntN(52) {
	case 0, 1, 2:
		return []any{"get", k}
	case 3, 4, 5:
		a := []any{"set", k, g.value()}
		for range g.rng.IntN(3) {
			switch g.rng.IntN(8) {
			case 0:
				a = append(a, "nx")
			case 1:
				a = append(a, "xx")
			case 2:
				a = append(a, "get")
			case 3:
				a = append(a, "keepttl")
			case 4:
				a = append(a, "ex", g.seconds())
			case 5:
				a = append(a, "px", g.millis())
			case 6:
				a = append(a, "exat", g.at(false))
			case 7:
				a = append(a, "pxat", g.at(true))
			}
		}
		return a
	case 6:
		return []any{"setnx", k, g.value()}
	case 7:
		if g.rng.IntN(2) == 0 {
			return []any{"setex", k, g.seconds(), g.value()}
		}
		return []any{"psetex", k, g.millis(), g.value()}
	case 8:
		return []any{"getdel", k}
	case 9:
		switch g.rng.IntN(7) {
		case 0:
			return []any{"getex", k}
		case 1:
			return []any{"getex", k, "persist"}
		case 2:
			return []any{"getex", k, "ex", g.seconds()}
		case 3:
			return []any{"getex", k, "px", g.millis()}
		case 4:
			return []any{"getex", k, "exat", g.at(false)}
		case 5:
			return []any{"getex", k, "pxat", g.at(true)}
		}
		return []any{"getex", k, "bogus"}
	case 10:
		return []any{"mget", k, g.key(), g.key()}
	case 11:
		return []any{g.pick("mset", "msetnx"), k, g.value(), g.key(), g.value()}
	case 12, 13:
		return []any{g.pick("incr", "decr"), k}
	case 14:
		return []any{g.pick("incrby", "decrby"), k, g.pick("5", "-7", g.edge())}
	case 15:
		return []any{"incrbyfloat", k, g.pick("1.5", "-0.5", "3", "abc", "inf", "-Infinity", "nan", "0x1p3",
			"1e5000", "1e-5000", "1p3", "", " 1", "+.5e1", "1e308", "-1e308")}
	case 16:
		return []any{"append", k, g.value()}
	case 17:
		return []any{"strlen", k}
	case 18:
		start, end := any(g.rng.IntN(10)-5), any(g.rng.IntN(10)-5)
		if g.rng.IntN(4) == 0 {
			start, end = g.edge(), g.edge()
		}
		return []any{g.pick("getrange", "substr"), k, start, end}
	case 19:
		if g.rng.IntN(4) == 0 { // only offsets that fail: one that succeeds near 512 MB would allocate it
			return []any{"setrange", k, g.pick("9223372036854775807", "536870912", "-1", "-9223372036854775808", "x", "9223372036854775808"), g.pick("A", "")}
		}
		return []any{"setrange", k, g.rng.IntN(20) - 2, g.value()}
	case 20:
		return []any{"getset", k, g.value()}
	case 21, 22:
		return []any{g.pick("del", "unlink"), k, g.key()}
	case 23:
		return []any{"exists", k, g.key(), k}
	case 24:
		return []any{"type", k}
	case 25:
		return []any{g.pick("rename", "renamenx"), k, g.key()}
	case 26:
		a := []any{"copy", k, g.key()}
		switch g.rng.IntN(4) {
		case 0:
			a = append(a, "replace")
		case 1:
			a = append(a, "db", g.pick("0", "16", "-1", "x", "2147483648", "9223372036854775808")) // not 1..15: one database
		}
		return a
	case 27, 28:
		a := []any{"expire", k, g.seconds()}
		if g.rng.IntN(2) == 0 {
			a = []any{"pexpire", k, g.millis()}
		}
		if g.rng.IntN(2) == 0 {
			opt := g.pick("nx", "xx", "gt", "lt", "bogus")
			if (opt == "gt" || opt == "lt") && fmt.Sprint(a[2]) > "9" { // two expiries past 2262 are both at its end here: a documented difference
				a[2] = 100
			}
			a = append(a, opt)
		}
		return a
	case 29:
		if g.rng.IntN(2) == 0 {
			return []any{"expireat", k, g.pick("1", fmt.Sprint(time.Now().Unix()+500), "9223372036854775", "9223372036854775807", "-9223372036854775808")}
		}
		return []any{"pexpireat", k, g.pick("1", fmt.Sprint(time.Now().UnixMilli()+500_000), "9223372036854775807", "-9223372036854775808")}
	case 30:
		return []any{g.pick("ttl", "pttl", "expiretime", "pexpiretime"), k}
	case 31:
		return []any{"persist", k}
	case 32:
		return []any{"keys", g.pick("*", "k?", "k[1-3]", "k[^1]", "x*")}
	case 33:
		cursor := g.pick("0", "", "+0", "-0", "00", "abc", " 0", "18446744073709551616", "0x")
		a := []any{"scan", cursor}
		switch g.rng.IntN(4) {
		case 0:
			a = append(a, "count", g.pick("0", "-1", "x", "9223372036854775808", "-9223372036854775808"))
		case 1:
			a = append(a, "bogus", "1")
		case 2:
			a = append(a, "type", g.pick("string", "list"))
		}
		// a whole scan in one call: Redis's cursors and revkv-server's differ
		return append(a, "count", g.pick("1000", "9223372036854775807", "2147483648"), "match", g.pick("*", "k[0-4]"))
	case 34:
		return []any{"exists", k}
	case 35:
		return []any{g.pick("ping", "echo"), "hi"}
	case 36:
		return []any{"select", g.pick("0", "x", "16", "-1", "2147483647", "2147483648", "-2147483649", "9223372036854775808")} // not 1..15: one database
	case 37:
		if g.rng.IntN(10) == 0 {
			return []any{g.pick("flushall", "flushdb"), g.pick("async", "sync", "bogus")}[:1+g.rng.IntN(2)]
		}
		return []any{"exists", k}
	case 38:
		return []any{"nosuchcommand", k}
	case 39:
		return []any{"randomkey"}
	case 40:
		return []any{"dbsize"}
	case 41:
		return []any{g.pick("discard", "exec", "unwatch")} // outside MULTI
	case 42:
		return []any{"watch", k, g.key()}
	case 43:
		return []any{"hello", g.pick("2", "x", "-1", "9223372036854775808", "1")}
	case 44:
		switch g.rng.IntN(3) {
		case 0:
			return []any{"auth", "default", "x"}
		case 1:
			return []any{"auth", "x"}
		}
		return []any{"auth", "someone", "x"}
	case 45:
		switch g.rng.IntN(5) {
		case 0:
			return []any{"client", "setname", g.pick("n", "a b", "")}
		case 1:
			return []any{"client", "getname"}
		case 2:
			return []any{"client", "id"}
		case 3:
			return []any{"client", "bogus"}
		}
		return []any{"client", g.pick("setname", "getname", "id"), "x", "y"}[:2+g.rng.IntN(3)]
	case 46:
		return []any{"command", g.pick("count", "bogus")}
	case 47:
		return []any{"time"}
	case 48:
		return []any{"info", g.pick("server", "keyspace", "stats")}
	case 49:
		return []any{g.pick("ping", "echo")}
	case 50:
		return []any{g.pick("randomkey", "dbsize", "time"), "x"} // wrong arity
	}
	return []any{"get"} // wrong arity
}

// replyString prints a reply, sorting what has no order.
func replyString(args []any, v any, err error) string {
	if err == redis.Nil {
		return "nil"
	}
	if err != nil {
		return "error: " + err.Error()
	}
	name := strings.ToLower(fmt.Sprint(args[0]))
	sub := ""
	if len(args) > 1 {
		sub = strings.ToLower(fmt.Sprint(args[1]))
	}
	switch { // replies whose content differs by nature: their kind only
	case name == "time":
		if r, ok := v.([]any); ok && len(r) == 2 {
			return "a time"
		}
	case name == "info":
		if _, ok := v.(string); ok {
			return "a string"
		}
	case name == "randomkey":
		if _, ok := v.(string); ok {
			return "a key"
		}
	case name == "client" && sub == "id", name == "command" && sub == "count":
		if _, ok := v.(int64); ok {
			return "an integer"
		}
	case name == "hello":
		if r, ok := v.([]any); ok {
			for i := 0; i+1 < len(r); i += 2 {
				if r[i] == "id" {
					r[i+1] = "an id"
				}
			}
		}
	}
	if n := unordered[name]; n > 0 {
		return sortedReply(v, n)
	}
	switch name {
	case "srandmember", "hrandfield", "zrandmember":
		return randomShape(v)
	case "hscan", "sscan", "zscan":
		return scanReply(name, v)
	}
	switch name {
	case "keys":
		ks := toStrings(v)
		slices.Sort(ks)
		return fmt.Sprint(ks)
	case "scan":
		r, ok := v.([]any)
		if !ok {
			return fmt.Sprint(v)
		}
		ks := toStrings(r[1])
		slices.Sort(ks)
		return fmt.Sprint(r[0], ks)
	}
	return fmt.Sprintf("%#v", v)
}

func toStrings(v any) []string {
	xs, ok := v.([]any)
	if !ok {
		return []string{fmt.Sprint(v)} // QUEUED
	}
	var out []string
	for _, x := range xs {
		out = append(out, x.(string))
	}
	return out
}

// same compares two printed replies, TTLs within a tolerance.
func same(args []any, a, b string) bool {
	if a == b {
		return true
	}
	var tol int64
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "dbsize": // Redis counts keys expired (SET ... PXAT in the past) until it reclaims them
		var x, y int64
		_, errx := fmt.Sscanf(a, "%d", &x)
		_, erry := fmt.Sscanf(b, "%d", &y)
		return errx == nil && erry == nil && y <= x
	case "ttl", "expiretime":
		tol = 1
	case "pttl", "pexpiretime":
		tol = 100
	default:
		return false
	}
	var x, y int64
	if _, err := fmt.Sscanf(a, "%d", &x); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(b, "%d", &y); err != nil {
		return false
	}
	if y > 0 && x > y && pastClock(args, y) { // kept at the end of the store's clock: a documented difference
		return true
	}
	return x-y <= tol && y-x <= tol && (x < 0) == (y < 0)
}

// pastClock tells whether v, revkv-server's reply to a TTL command, is an
// expiry at the end of the store's clock (2262), where it keeps the later
// ones Redis takes.
func pastClock(args []any, v int64) bool {
	end := lastExpiry().Add(-time.Hour)
	now := time.Now()
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "ttl":
		return now.Unix()+v >= end.Unix()
	case "pttl":
		return now.UnixMilli()+v >= end.UnixMilli()
	case "expiretime":
		return v >= end.Unix()
	case "pexpiretime":
		return v >= end.UnixMilli()
	}
	return false
}
