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
	want := newClient(t, redisAddr).Conn()
	got := newClient(t, revkvAddr).Conn()
	defer want.Close()
	defer got.Close()
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
				for slices.Contains([]any{"keys", "scan", "ttl", "pttl", "expiretime", "pexpiretime"}, a[0]) { // unordered, or inexact, inside an array
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

// seconds draws an expiry in seconds far enough away that no key expires
// while the test runs (expiry itself is checked by the in-process tests),
// or an invalid one.
func (g *gen) seconds() any {
	switch g.rng.IntN(12) {
	case 0:
		return 0
	case 1:
		return -3
	case 2:
		return "x"
	case 3:
		return "9223372036854775807"
	}
	return 10 + g.rng.IntN(1000)
}

// millis is seconds for the options in milliseconds.
func (g *gen) millis() any {
	if n, ok := g.seconds().(int); ok && n >= 10 {
		return n * 1000
	}
	return g.seconds()
}

func (g *gen) command() []any {
	k := g.key()
	now := time.Now()
	switch g.rng.IntN(40) {
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
				a = append(a, "exat", now.Unix()+int64(100+g.rng.IntN(1000)))
			case 7:
				a = append(a, "pxat", now.UnixMilli()-int64(g.rng.IntN(2))*1_000_000+50_000)
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
		switch g.rng.IntN(4) {
		case 0:
			return []any{"getex", k}
		case 1:
			return []any{"getex", k, "persist"}
		case 2:
			return []any{"getex", k, "ex", g.seconds()}
		}
		return []any{"getex", k, "bogus"}
	case 10:
		return []any{"mget", k, g.key(), g.key()}
	case 11:
		return []any{g.pick("mset", "msetnx"), k, g.value(), g.key(), g.value()}
	case 12, 13:
		return []any{g.pick("incr", "decr"), k}
	case 14:
		return []any{g.pick("incrby", "decrby"), k, g.pick("5", "-7", "x", "9223372036854775807")}
	case 15:
		return []any{"incrbyfloat", k, g.pick("1.5", "-0.5", "3", "abc")}
	case 16:
		return []any{"append", k, g.value()}
	case 17:
		return []any{"strlen", k}
	case 18:
		return []any{"getrange", k, g.rng.IntN(10) - 5, g.rng.IntN(10) - 5}
	case 19:
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
		if g.rng.IntN(2) == 0 {
			a = append(a, "replace")
		}
		return a
	case 27, 28:
		a := []any{"expire", k, g.seconds()}
		if g.rng.IntN(2) == 0 {
			a = []any{"pexpire", k, g.millis()}
		}
		if g.rng.IntN(2) == 0 {
			a = append(a, g.pick("nx", "xx", "gt", "lt", "bogus"))
		}
		return a
	case 29:
		if g.rng.IntN(2) == 0 {
			return []any{"expireat", k, g.pick("1", fmt.Sprint(now.Unix()+500))}
		}
		return []any{"pexpireat", k, g.pick("1", fmt.Sprint(now.UnixMilli()+500_000))}
	case 30:
		return []any{g.pick("ttl", "pttl", "expiretime", "pexpiretime"), k}
	case 31:
		return []any{"persist", k}
	case 32:
		return []any{"keys", g.pick("*", "k?", "k[1-3]", "k[^1]", "x*")}
	case 33:
		return []any{"scan", 0, "count", 1000, "match", g.pick("*", "k[0-4]")}
	case 34:
		return []any{"exists", k}
	case 35:
		return []any{g.pick("ping", "echo"), "hi"}
	case 36:
		return []any{"select", g.pick("0", "x")} // one database: SELECT 1 is an error, a difference
	case 37:
		if g.rng.IntN(10) == 0 {
			return []any{"flushall"}
		}
		return []any{"exists", k}
	case 38:
		return []any{"nosuchcommand", k}
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
	return x-y <= tol && y-x <= tol && (x < 0) == (y < 0)
}
