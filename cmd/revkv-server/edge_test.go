package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Every integer a client sends, at its edges (MaxInt64, MinInt64, -1, 0,
// past Redis's limits, not a number), with Redis 7.0.15's exact replies.
// The table runs against revkv-server, and against a real redis-server when
// there is one, so that its replies are Redis's own and not a guess.
var edgeSteps = []struct {
	args []any
	want any
}{
	{[]any{"set", "s", "hello"}, "OK"},
	// SETRANGE: an offset past 512 MB, however large, is an error, not an
	// overflow; an empty value writes nothing and checks nothing but the sign.
	{[]any{"setrange", "s", "9223372036854775807", "A"}, "error: ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
	{[]any{"setrange", "s", "9223372036854775806", "AB"}, "error: ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
	{[]any{"setrange", "s", "536870912", "A"}, "error: ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
	{[]any{"setrange", "s", "536870911", "AB"}, "error: ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
	{[]any{"setrange", "s", "-1", "A"}, "error: ERR offset is out of range"},
	{[]any{"setrange", "s", "-9223372036854775808", "A"}, "error: ERR offset is out of range"},
	{[]any{"setrange", "s", "9223372036854775808", "A"}, "error: ERR value is not an integer or out of range"},
	{[]any{"setrange", "s", "x", "A"}, "error: ERR value is not an integer or out of range"},
	{[]any{"setrange", "s", "9223372036854775807", ""}, int64(5)},
	{[]any{"setrange", "none", "9223372036854775807", ""}, int64(0)},
	{[]any{"setrange", "none", "-1", ""}, "error: ERR offset is out of range"},
	{[]any{"setrange", "s", "0", "J"}, int64(5)},
	{[]any{"get", "s"}, "Jello"},
	{[]any{"exists", "none"}, int64(0)},
	// GETRANGE and SUBSTR clamp whatever they are given.
	{[]any{"getrange", "s", "9223372036854775807", "9223372036854775807"}, ""},
	{[]any{"getrange", "s", "-9223372036854775808", "9223372036854775807"}, "Jello"},
	{[]any{"getrange", "s", "-9223372036854775808", "-9223372036854775808"}, "J"},
	{[]any{"getrange", "s", "0", "-9223372036854775808"}, "J"},
	{[]any{"getrange", "s", "9223372036854775807", "-1"}, ""},
	{[]any{"getrange", "s", "-1", "-9223372036854775808"}, ""},
	{[]any{"getrange", "s", "0", "x"}, "error: ERR value is not an integer or out of range"},
	{[]any{"getrange", "s", "0", "9223372036854775808"}, "error: ERR value is not an integer or out of range"},
	{[]any{"substr", "s", "-9223372036854775808", "-1"}, "Jello"},
	{[]any{"getrange", "none", "0", "-1"}, ""},
	// INCR and its kin: overflow either way, and what is not an int64.
	{[]any{"set", "n", "10"}, "OK"},
	{[]any{"incrby", "n", "9223372036854775807"}, "error: ERR increment or decrement would overflow"},
	{[]any{"incrby", "n", "-9223372036854775808"}, int64(-9223372036854775798)},
	{[]any{"set", "n", "10"}, "OK"},
	{[]any{"decrby", "n", "-9223372036854775808"}, "error: ERR decrement would overflow"},
	{[]any{"decrby", "n", "9223372036854775807"}, int64(-9223372036854775797)},
	{[]any{"decrby", "n", "20"}, "error: ERR increment or decrement would overflow"},
	{[]any{"incrby", "n", "9223372036854775808"}, "error: ERR value is not an integer or out of range"},
	{[]any{"incrby", "n", "x"}, "error: ERR value is not an integer or out of range"},
	{[]any{"set", "n", "9223372036854775807"}, "OK"},
	{[]any{"incr", "n"}, "error: ERR increment or decrement would overflow"},
	{[]any{"set", "n", "-9223372036854775808"}, "OK"},
	{[]any{"decr", "n"}, "error: ERR increment or decrement would overflow"},
	{[]any{"incrby", "n", "-1"}, "error: ERR increment or decrement would overflow"},
	{[]any{"decrby", "n", "1"}, "error: ERR increment or decrement would overflow"},
	{[]any{"set", "n", "9223372036854775808"}, "OK"},
	{[]any{"incr", "n"}, "error: ERR value is not an integer or out of range"},
	{[]any{"set", "n", "007"}, "OK"},
	{[]any{"incr", "n"}, "error: ERR value is not an integer or out of range"},
	{[]any{"set", "n", "+1"}, "OK"},
	{[]any{"incr", "n"}, "error: ERR value is not an integer or out of range"},
	{[]any{"set", "n", " 1"}, "OK"},
	{[]any{"incr", "n"}, "error: ERR value is not an integer or out of range"},
	// INCRBYFLOAT reads what strtold reads: inf and infinity (whose sum is
	// no number), hex floats, nothing beyond a long double's range.
	{[]any{"set", "f", "0"}, "OK"},
	{[]any{"incrbyfloat", "f", "inf"}, "error: ERR increment would produce NaN or Infinity"},
	{[]any{"incrbyfloat", "f", "+inf"}, "error: ERR increment would produce NaN or Infinity"},
	{[]any{"incrbyfloat", "f", "-Infinity"}, "error: ERR increment would produce NaN or Infinity"},
	{[]any{"incrbyfloat", "f", "INF"}, "error: ERR increment would produce NaN or Infinity"},
	{[]any{"incrbyfloat", "f", "nan"}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", "1e5000"}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", "1e-5000"}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", "1p3"}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", "0x1_0"}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", "0b101"}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", "1 "}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", " 1"}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", "0x"}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", ""}, "error: ERR value is not a valid float"},
	{[]any{"incrbyfloat", "f", "0x1.8p1"}, "3"},
	{[]any{"incrbyfloat", "f", "-0x10"}, "-13"},
	{[]any{"incrbyfloat", "f", "+.5e1"}, "-8"},
	{[]any{"incrbyfloat", "f", "1.2e4932"}, "error: ERR value is not a valid float"}, // past a long double's largest
	{[]any{"set", "f", "1.1e4932"}, "OK"},
	{[]any{"incrbyfloat", "f", "1.1e4932"}, "error: ERR increment would produce NaN or Infinity"},
	{[]any{"set", "f", "inf"}, "OK"},
	{[]any{"incrbyfloat", "f", "1"}, "error: ERR increment would produce NaN or Infinity"},
	{[]any{"incrbyfloat", "f", "-inf"}, "error: ERR increment would produce NaN or Infinity"},
	{[]any{"incrbyfloat", "f", "x"}, "error: ERR value is not a valid float"},
	{[]any{"set", "f", "1e5000"}, "OK"},
	{[]any{"incrbyfloat", "f", "1"}, "error: ERR value is not a valid float"},
	{[]any{"del", "f"}, int64(1)},
	{[]any{"incrbyfloat", "f", "0.5"}, "0.5"},
	{[]any{"incrbyfloat", "f", "-0.5"}, "0"}, // never -0
	// Expiry arguments: Redis refuses n <= 0, seconds that overflow
	// milliseconds, and a relative expiry that overflows once now is added;
	// it takes everything else (revkv-server keeps what is past 2262 at
	// 2262, the end of the store's clock).
	{[]any{"set", "k", "1", "ex", "9223372036854"}, "OK"},
	{[]any{"ttl", "k"}, "ttl>0"},
	{[]any{"set", "k", "1", "ex", "9223372036854775"}, "error: ERR invalid expire time in 'set' command"},
	{[]any{"set", "k", "1", "ex", "9223372036854776"}, "error: ERR invalid expire time in 'set' command"},
	{[]any{"set", "k", "1", "ex", "9223372036854775807"}, "error: ERR invalid expire time in 'set' command"},
	{[]any{"set", "k", "1", "ex", "-9223372036854775808"}, "error: ERR invalid expire time in 'set' command"},
	{[]any{"set", "k", "1", "ex", "0"}, "error: ERR invalid expire time in 'set' command"},
	{[]any{"set", "k", "1", "ex", "x"}, "error: ERR value is not an integer or out of range"},
	{[]any{"set", "k", "1", "px", "9200000000000000000"}, "OK"},
	{[]any{"ttl", "k"}, "ttl>0"},
	{[]any{"set", "k", "1", "px", "9223372036854775807"}, "error: ERR invalid expire time in 'set' command"},
	{[]any{"set", "k", "1", "px", "-1"}, "error: ERR invalid expire time in 'set' command"},
	{[]any{"set", "k", "1", "exat", "9223372036854775"}, "OK"},
	{[]any{"ttl", "k"}, "ttl>0"},
	{[]any{"set", "k", "1", "exat", "9223372036854776"}, "error: ERR invalid expire time in 'set' command"},
	{[]any{"set", "k", "1", "pxat", "9223372036854775807"}, "OK"},
	{[]any{"ttl", "k"}, "ttl>0"},
	{[]any{"set", "k", "1", "pxat", "9223372036854775808"}, "error: ERR value is not an integer or out of range"},
	{[]any{"setex", "k", "9223372036854", "v"}, "OK"},
	{[]any{"ttl", "k"}, "ttl>0"},
	{[]any{"setex", "k", "9223372036854775", "v"}, "error: ERR invalid expire time in 'setex' command"},
	{[]any{"setex", "k", "-9223372036854775808", "v"}, "error: ERR invalid expire time in 'setex' command"},
	{[]any{"psetex", "k", "9200000000000000000", "v"}, "OK"},
	{[]any{"ttl", "k"}, "ttl>0"},
	{[]any{"psetex", "k", "9223372036854775807", "v"}, "error: ERR invalid expire time in 'psetex' command"},
	{[]any{"psetex", "k", "0", "v"}, "error: ERR invalid expire time in 'psetex' command"},
	{[]any{"set", "k", "v"}, "OK"},
	{[]any{"getex", "k", "ex", "9223372036854"}, "v"},
	{[]any{"ttl", "k"}, "ttl>0"},
	{[]any{"getex", "k", "px", "9223372036854775807"}, "error: ERR invalid expire time in 'getex' command"},
	{[]any{"getex", "k", "pxat", "9223372036854775807"}, "v"},
	{[]any{"getex", "k", "exat", "9223372036854776"}, "error: ERR invalid expire time in 'getex' command"},
	{[]any{"getex", "none", "exat", "9223372036854776"}, nil}, // no key: nil, whatever the expiry
	{[]any{"getex", "k", "ex", "0"}, "error: ERR invalid expire time in 'getex' command"},
	{[]any{"expire", "k", "9223372036854"}, int64(1)},
	{[]any{"ttl", "k"}, "ttl>0"},
	{[]any{"expire", "k", "9223372036854775"}, "error: ERR invalid expire time in 'expire' command"},
	{[]any{"expire", "k", "-9223372036854775808"}, "error: ERR invalid expire time in 'expire' command"},
	{[]any{"expire", "none", "9223372036854775807"}, "error: ERR invalid expire time in 'expire' command"},
	{[]any{"pexpire", "k", "9223372036854775807"}, "error: ERR invalid expire time in 'pexpire' command"},
	{[]any{"pexpireat", "k", "9223372036854775807"}, int64(1)},
	{[]any{"ttl", "k"}, "ttl>0"},
	{[]any{"expireat", "k", "9223372036854775807"}, "error: ERR invalid expire time in 'expireat' command"},
	{[]any{"expireat", "k", "-9223372036854775808"}, "error: ERR invalid expire time in 'expireat' command"},
	{[]any{"expire", "k", "1", "gt"}, int64(0)},
	{[]any{"pexpire", "k", "-9223372036854775808"}, int64(1)}, // past: deleted
	{[]any{"exists", "k"}, int64(0)},
	// Database indexes: an int32, then only the one there is (Redis has 16:
	// SELECT 1 is a difference, kept out of the table).
	{[]any{"select", "0"}, "OK"},
	{[]any{"select", "16"}, "error: ERR DB index is out of range"},
	{[]any{"select", "-1"}, "error: ERR DB index is out of range"},
	{[]any{"select", "2147483647"}, "error: ERR DB index is out of range"},
	{[]any{"select", "2147483648"}, "error: ERR value is out of range, value must between -2147483648 and 2147483647"},
	{[]any{"select", "-2147483649"}, "error: ERR value is out of range, value must between -2147483648 and 2147483647"},
	{[]any{"select", "9223372036854775808"}, "error: ERR value is not an integer or out of range"},
	{[]any{"select", "x"}, "error: ERR value is not an integer or out of range"},
	{[]any{"set", "s", "v"}, "OK"},
	{[]any{"copy", "s", "d", "db", "16"}, "error: ERR DB index is out of range"},
	{[]any{"copy", "s", "d", "db", "2147483648"}, "error: ERR value is out of range, value must between -2147483648 and 2147483647"},
	{[]any{"copy", "s", "d", "db", "x"}, "error: ERR value is not an integer or out of range"},
	// SCAN: the cursor is read as strtoul reads it; COUNT is at least 1.
	{[]any{"scan", "18446744073709551616"}, "error: ERR invalid cursor"},
	{[]any{"scan", " 0"}, "error: ERR invalid cursor"},
	{[]any{"scan", "0x"}, "error: ERR invalid cursor"},
	{[]any{"scan", "abc"}, "error: ERR invalid cursor"},
	{[]any{"scan", "0", "count", "0"}, "error: ERR syntax error"},
	{[]any{"scan", "0", "count", "-9223372036854775808"}, "error: ERR syntax error"},
	{[]any{"scan", "0", "count", "9223372036854775808"}, "error: ERR value is not an integer or out of range"},
	{[]any{"scan", "0", "count"}, "error: ERR syntax error"},
	{[]any{"scan", "0", "bogus", "1"}, "error: ERR syntax error"},
	{[]any{"flushall"}, "OK"},
	{[]any{"scan", "-1"}, []any{"0", []any{}}}, // Redis scans on from it
	{[]any{"scan", "18446744073709551615", "count", "1"}, []any{"0", []any{}}},
	{[]any{"set", "s", "v"}, "OK"},
	{[]any{"scan", "0", "count", "9223372036854775807"}, []any{"0", []any{"s"}}},
	{[]any{"scan", "", "count", "2147483648"}, []any{"0", []any{"s"}}},
	{[]any{"scan", "00"}, []any{"0", []any{"s"}}},
	{[]any{"scan", "+0"}, []any{"0", []any{"s"}}},
	{[]any{"scan", "-0"}, []any{"0", []any{"s"}}},
	// HELLO's protocol version.
	{[]any{"hello", "9223372036854775808"}, "error: ERR Protocol version is not an integer or out of range"},
	{[]any{"hello", "-1"}, "error: NOPROTO unsupported protocol version"},
	{[]any{"hello", "x"}, "error: ERR Protocol version is not an integer or out of range"},
	// AUTH and HELLO without a password configured: the default user has
	// none, so any password is its.
	{[]any{"auth", "x"}, "error: ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
	{[]any{"auth", "default", "x"}, "OK"},
	{[]any{"auth", "someone", "x"}, "error: WRONGPASS invalid username-password pair or user is disabled."},
	{[]any{"auth", "a", "b", "c"}, "error: ERR syntax error"},
	{[]any{"hello", "2", "auth", "someone", "x"}, "error: WRONGPASS invalid username-password pair or user is disabled."},
	{[]any{"hello", "2", "auth", "default"}, "error: ERR Syntax error in HELLO option 'auth'"},
	// Subcommands: unknown, and known with the wrong number of arguments.
	{[]any{"client", "bogus"}, "error: ERR unknown subcommand 'bogus'. Try CLIENT HELP."},
	{[]any{"client", "setname"}, "error: ERR wrong number of arguments for 'client|setname' command"},
	{[]any{"client", "GETNAME", "x"}, "error: ERR wrong number of arguments for 'client|getname' command"},
	{[]any{"client", "id", "x"}, "error: ERR wrong number of arguments for 'client|id' command"},
	{[]any{"client", "setname", "a b"}, "error: ERR Client names cannot contain spaces, newlines or special characters."},
	{[]any{"client", "setname", "n"}, "OK"},
	{[]any{"client", "getname"}, "n"},
	{[]any{"command", "count", "x"}, "error: ERR wrong number of arguments for 'command|count' command"},
	{[]any{"command", "bogus"}, "error: ERR unknown subcommand 'bogus'. Try COMMAND HELP."},
	// A subcommand is checked when MULTI queues it, as the command is.
	{[]any{"multi"}, "OK"},
	{[]any{"client", "bogus"}, "error: ERR unknown subcommand 'bogus'. Try CLIENT HELP."},
	{[]any{"exec"}, "error: EXECABORT Transaction discarded because of previous errors."},
	{[]any{"multi"}, "OK"},
	{[]any{"client", "getname", "x"}, "error: ERR wrong number of arguments for 'client|getname' command"},
	{[]any{"exec"}, "error: EXECABORT Transaction discarded because of previous errors."},
}

func TestEdgeArguments(t *testing.T) {
	run := func(t *testing.T, addr string) {
		c := newClient(t, addr)
		for i, s := range edgeSteps {
			got := do(c, s.args...)
			if s.want == "ttl>0" {
				n, ok := got.(int64)
				require.True(t, ok && n > 0, "step %d: %v: %v", i, s.args, got)
				continue
			}
			require.Equal(t, s.want, got, "step %d: %v", i, s.args)
		}
	}
	t.Run("revkv", func(t *testing.T) {
		_, addr := startServer(t, config{})
		run(t, addr)
	})
	t.Run("redis", func(t *testing.T) {
		if _, err := exec.LookPath("redis-server"); err != nil {
			t.Skip("redis-server is not installed: the table is checked against revkv-server only")
		}
		run(t, startRedis(t))
	})
}

// A random command's negative count asks for that many elements, repeats
// allowed, whatever the collection's size: revkv-server answers at most
// maxRandReply (Redis builds any reply asked for, which a hostile client
// turns into the server's memory). FuzzServer found SRANDMEMBER s
// -9223354775807 hanging the server.
func TestRandomCountIsBounded(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	do(c, "sadd", "s", "a")
	do(c, "hset", "h", "f", "v")
	do(c, "zadd", "z", "1", "m")
	for _, cmd := range [][]any{{"srandmember", "s"}, {"hrandfield", "h"}, {"zrandmember", "z"}} {
		got := do(c, append(cmd, "-9223354775807")...)
		require.Equal(t, fmt.Sprintf("error: ERR count is out of range: a reply holds at most %d elements", maxRandReply), got, "%v", cmd)
		got = do(c, append(cmd, fmt.Sprint(-maxRandReply-1))...)
		require.Contains(t, got, "out of range", "%v", cmd)
		got = do(c, append(cmd, "-5")...)
		require.Len(t, got, 5, "%v", cmd)
	}
}

// INFO memory answers used_memory (the heap's objects) as clients and
// benchmarks read it: a number that grows with what the store holds.
func TestInfoMemory(t *testing.T) {
	_, addr := startServer(t, config{})
	c := newClient(t, addr)
	used := func() uint64 {
		info := fmt.Sprint(do(c, "info", "memory"))
		require.True(t, strings.HasPrefix(info, "# Memory\r\n"), info)
		require.Contains(t, info, "used_memory_human:")
		require.Contains(t, info, "maxmemory_policy:noeviction")
		var n uint64
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
				var err error
				n, err = strconv.ParseUint(v, 10, 64)
				require.NoError(t, err)
			}
		}
		require.Positive(t, n)
		return n
	}
	before := used()
	big := strings.Repeat("x", 1<<20)
	for i := range 32 {
		do(c, "set", fmt.Sprint("k", i), big)
	}
	require.Greater(t, used(), before+16<<20, "32 MiB of values show")

	// MEMORY PURGE collects the heap (the server shares this process's).
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gcs := ms.NumGC
	require.Equal(t, "OK", do(c, "memory", "purge"))
	runtime.ReadMemStats(&ms)
	require.Greater(t, ms.NumGC, gcs, "MEMORY PURGE ran a collection")
	require.Contains(t, fmt.Sprint(do(c, "memory", "purge", "now")), "wrong number of arguments")
	require.Contains(t, fmt.Sprint(do(c, "memory", "help")), "PURGE")
}

// MEMORY PURGE in a transaction collects after its EXEC's Update, not
// under the store's write lock, where one client's queued purges would
// stall every writer: the purge here writes to the store from another
// goroutine, which cannot while the lock is held.
func TestPurgeInExec(t *testing.T) {
	srv, addr := startServer(t, config{})
	c := newClient(t, addr)
	purged := make(chan error, 4)
	purge = func() {
		done := make(chan error, 1)
		go func() { _, err := srv.store.Put("written-during-purge", []byte("x")); done <- err }()
		select {
		case err := <-done:
			purged <- err
		case <-time.After(5 * time.Second): // the Put goes through once the Update ends
			purged <- errors.New("the purge ran under the store's write lock")
		}
	}
	t.Cleanup(func() { purge = purgeMemory })
	cmds, err := c.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		p.Set(context.Background(), "k", "v", 0)
		p.Do(context.Background(), "memory", "purge")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "OK", cmds[1].(*redis.Cmd).Val())
	require.NoError(t, <-purged)
	require.Equal(t, "OK", do(c, "memory", "purge"), "outside a transaction too")
	require.NoError(t, <-purged)
	require.Empty(t, purged, "one purge each")
	require.Equal(t, "1.50M", humanBytes(3<<19))
	require.Equal(t, "96B", humanBytes(96))
}
