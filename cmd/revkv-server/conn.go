package main

import (
	"crypto/subtle"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

func init() {
	register(
		&command{name: "ping", arity: -1, conn: cmdPing},
		&command{name: "echo", arity: 2, conn: func(s *server, c *client, a [][]byte) { c.w.Bulk(a[1]) }},
		&command{name: "quit", arity: -1, conn: func(s *server, c *client, a [][]byte) { c.w.Simple("OK"); c.quit = true }},
		&command{name: "hello", arity: -1, conn: cmdHello},
		&command{name: "auth", arity: -2, conn: cmdAuth},
		&command{name: "select", arity: 2, conn: cmdSelect},
		&command{name: "time", arity: 1, conn: cmdTime},
		&command{name: "info", arity: -1, conn: cmdInfo},
		&command{name: "command", arity: -1, conn: cmdCommand, sub: map[string]int{"COUNT": 2, "DOCS": -2}},
		&command{name: "client", arity: -2, conn: cmdClient, sub: map[string]int{"SETNAME": 3, "GETNAME": 2, "ID": 2, "SETINFO": 4,
			"LIST": -2, "INFO": 2, "KILL": -3, "UNBLOCK": -3, "HELP": 2}},
	)
}

func cmdPing(s *server, c *client, a [][]byte) {
	switch len(a) {
	case 1:
		c.w.Simple("PONG")
	case 2:
		c.w.Bulk(a[1])
	default:
		c.w.Error("ERR wrong number of arguments for 'ping' command")
	}
}

// checkPass checks a user and password (user nil: the default user). With
// no password configured the default user has none: any password is its,
// as in Redis.
func (s *server) checkPass(user, pass []byte) bool {
	if s.cfg.requirepass == "" {
		return string(user) == "default"
	}
	return (user == nil || string(user) == "default") &&
		subtle.ConstantTimeCompare(pass, []byte(s.cfg.requirepass)) == 1
}

const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

func cmdAuth(s *server, c *client, a [][]byte) {
	if len(a) > 3 {
		c.w.Error(errSyntax)
		return
	}
	if s.cfg.requirepass == "" && len(a) == 2 {
		c.w.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	var user []byte
	if len(a) == 3 {
		user = a[1]
	}
	if !s.checkPass(user, a[len(a)-1]) {
		c.w.Error(errWrongPass)
		return
	}
	c.authed = true
	c.w.Simple("OK")
}

// cmdHello answers HELLO [2 [AUTH user pass] [SETNAME name]]. RESP3 is not
// spoken: HELLO 3 gets NOPROTO, and clients (go-redis among them) go on in
// RESP2.
func cmdHello(s *server, c *client, a [][]byte) {
	if len(a) >= 2 {
		v, ok := parseInt(a[1])
		if !ok {
			c.w.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.w.Error("NOPROTO unsupported protocol version")
			return
		}
	}
	name := c.getName()
	for i := 2; i < len(a); i++ {
		switch opt := strings.ToUpper(string(a[i])); {
		case opt == "AUTH" && i+2 < len(a):
			if !s.checkPass(a[i+1], a[i+2]) {
				c.w.Error(errWrongPass)
				return
			}
			c.authed = true
			i += 2
		case opt == "SETNAME" && i+1 < len(a):
			if !validName(a[i+1]) {
				c.w.Error(errClientName)
				return
			}
			name = string(a[i+1])
			i++
		default:
			c.w.Error("ERR Syntax error in HELLO option '" + string(a[i]) + "'")
			return
		}
	}
	if !c.authed {
		c.w.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	c.setName(name)
	if len(a) >= 2 {
		c.w.SetRESP3(a[1][0] == '3')
	}
	proto := int64(2)
	if c.w.RESP3() {
		proto = 3
	}
	c.w.Map(7)
	c.w.BulkString("server")
	c.w.BulkString("redis")
	c.w.BulkString("version")
	c.w.BulkString(redisVersion)
	c.w.BulkString("proto")
	c.w.Int(proto)
	c.w.BulkString("id")
	c.w.Int(c.id)
	c.w.BulkString("mode")
	c.w.BulkString("standalone")
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.w.Array(0)
}

// redisVersion is the Redis version whose commands and replies the server
// follows; clients read it to decide what they may send.
const redisVersion = "7.0.15"

func cmdSelect(s *server, c *client, a [][]byte) {
	if dbArg(c, a[1]) {
		c.w.Simple("OK")
	}
}

// dbArg checks a database number as Redis does: an int32, then one that
// exists (only 0 does). It replies the error.
func dbArg(c *client, b []byte) bool {
	db, ok := parseInt(b)
	switch {
	case !ok:
		c.w.Error(errNotInt)
	case db < math.MinInt32 || db > math.MaxInt32:
		c.w.Error("ERR value is out of range, value must between -2147483648 and 2147483647")
	case db != 0:
		c.w.Error(errDBIndex)
	}
	return ok && db == 0
}

func cmdTime(s *server, c *client, _ [][]byte) {
	now := time.Now()
	c.w.Array(2)
	c.w.BulkString(strconv.FormatInt(now.Unix(), 10))
	c.w.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

const errClientName = "ERR Client names cannot contain spaces, newlines or special characters."

func validName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClient(s *server, c *client, a [][]byte) {
	switch strings.ToUpper(string(a[1])) { // dispatch checked the subcommand and its arity
	case "SETNAME":
		if !validName(a[2]) {
			c.w.Error(errClientName)
			return
		}
		c.setName(string(a[2]))
		c.w.Simple("OK")
	case "GETNAME":
		if name := c.getName(); name == "" {
			c.w.Null()
		} else {
			c.w.BulkString(name)
		}
	case "ID":
		c.w.Int(c.id)
	case "SETINFO":
		c.w.Simple("OK")
	case "LIST":
		s.clientList(c, a)
	case "INFO":
		c.w.BulkString(c.line(s))
	case "KILL":
		s.clientKill(c, a)
	case "UNBLOCK":
		s.clientUnblock(c, a)
	case "HELP":
		c.w.Array(8)
		for _, l := range []string{"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GETNAME", "ID", "INFO", "KILL <ip:port> | <option> <value> [...]", "LIST [TYPE <type>] [ID <id> [<id> ...]]",
			"SETNAME <name>", "UNBLOCK <clientid> [TIMEOUT|ERROR]"} {
			c.w.Simple(l)
		}
	}
}

// subArity checks a subcommand of cmd, whose arity (as Redis counts it) is
// arity, 0 for one that does not exist. It replies Redis's error.
func subArity(c *client, cmd string, a [][]byte, arity int) bool {
	switch {
	case arity == 0:
		c.w.Error("ERR unknown subcommand '" + trunc(a[1], 128) + "'. Try " + strings.ToUpper(cmd) + " HELP.")
	case arity > 0 && len(a) != arity || arity < 0 && len(a) < -arity:
		c.w.Error("ERR wrong number of arguments for '" + cmd + "|" + strings.ToLower(string(a[1])) + "' command")
	default:
		return true
	}
	return false
}

// cmdCommand answers what redis-cli and client libraries ask at start:
// COMMAND COUNT, COMMAND DOCS (empty: no hints), and COMMAND (a name and
// arity per command, as Redis's first two fields).
func cmdCommand(s *server, c *client, a [][]byte) {
	sub := ""
	if len(a) > 1 {
		sub = strings.ToUpper(string(a[1])) // dispatch checked it and its arity
	}
	switch sub {
	case "":
		c.w.Array(len(commands))
		for _, cmd := range commands {
			c.w.Array(2)
			c.w.BulkString(cmd.name)
			c.w.Int(int64(cmd.arity))
		}
	case "COUNT":
		c.w.Int(int64(len(commands)))
	case "DOCS":
		c.w.Array(0)
	}
}

// cmdInfo writes the sections server, clients, memory, stats, keyspace and
// revkv.
func cmdInfo(s *server, c *client, a [][]byte) {
	want := map[string]bool{}
	for _, x := range a[1:] {
		want[strings.ToLower(string(x))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	var b strings.Builder
	section := func(name string, lines ...string) {
		if !all && !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		for _, l := range lines {
			b.WriteString(l + "\r\n")
		}
	}
	s.mu.Lock()
	nclients := len(s.clients)
	commands := s.stats.commands.Load()
	for c := range s.clients {
		commands += c.commands.Load()
	}
	s.mu.Unlock()
	up := time.Since(s.start)
	section("Server",
		"redis_version:"+redisVersion,
		"revkv_server_version:"+version,
		"redis_mode:standalone",
		"os:"+runtime.GOOS,
		"arch_bits:64",
		"go_version:"+runtime.Version(),
		fmt.Sprintf("process_id:%d", pid),
		"tcp_port:"+s.port(),
		fmt.Sprintf("uptime_in_seconds:%d", int64(up.Seconds())),
		fmt.Sprintf("uptime_in_days:%d", int64(up.Hours()/24)))
	section("Clients",
		fmt.Sprintf("connected_clients:%d", nclients),
		fmt.Sprintf("blocked_clients:%d", s.blocking.blocked.Load()),
		fmt.Sprintf("maxclients:%d", s.cfg.maxClients))
	used, total := memoryInUse()
	section("Memory",
		fmt.Sprintf("used_memory:%d", used),
		"used_memory_human:"+humanBytes(used),
		fmt.Sprintf("used_memory_rss:%d", total),
		"used_memory_rss_human:"+humanBytes(total),
		"maxmemory:0",
		"maxmemory_human:0B",
		"maxmemory_policy:noeviction",
		"mem_allocator:go")
	section("Stats",
		fmt.Sprintf("total_connections_received:%d", s.stats.connections.Load()),
		fmt.Sprintf("total_commands_processed:%d", commands),
		fmt.Sprintf("rejected_connections:%d", s.stats.rejected.Load()),
		fmt.Sprintf("panics_recovered:%d", s.stats.panics.Load()))
	r := &storeReader{store: s.store}
	keys := r.Len() // the user's keys: elements are not keys
	r.close()
	ks := []string{}
	if keys > 0 {
		ks = append(ks, fmt.Sprintf("db0:keys=%d,expires=0,avg_ttl=0", keys))
	}
	section("Keyspace", ks...)
	section("revkv",
		fmt.Sprintf("rev:%d", s.store.Rev()),
		fmt.Sprintf("floor:%d", s.store.Floor()),
		fmt.Sprintf("keys:%d", keys),
		"durable:"+strconv.FormatBool(s.dir != ""),
		"dir:"+s.dir)
	c.w.BulkString(b.String())
}

// memoryInUse returns the bytes of the heap's live and not yet swept
// objects (INFO's used_memory: what the store and the server hold, as
// Redis's counts what its allocator gave out) and all the memory the Go
// runtime has mapped (used_memory_rss's stand-in: the heap's free spans and
// the runtime's own included), read without stopping the world.
func memoryInUse() (used, total uint64) {
	ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(ms)
	for i, p := range []*uint64{&used, &total} {
		if ms[i].Value.Kind() == metrics.KindUint64 {
			*p = ms[i].Value.Uint64()
		}
	}
	return used, total
}

// humanBytes writes n as Redis's *_human fields do: 1.50M, 812.00K, 96B.
func humanBytes(n uint64) string {
	for _, u := range []struct {
		unit string
		size float64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if float64(n) >= u.size {
			return fmt.Sprintf("%.2f%s", float64(n)/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%dB", n)
}
