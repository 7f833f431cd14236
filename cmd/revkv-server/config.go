package main

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// CONFIG GET answers the parameters clients, GUIs and Redis's own test
// units read at connect, with Redis 7.0's defaults where revkv has no
// such setting (the listpack and intset sizes: revkv keeps every
// collection one way, see collection.go), and revkv's own values where it
// has (databases is 1: only database 0 exists; save and appendonly say
// what --dir means, which CONFIG SET does not change). CONFIG SET accepts
// every parameter CONFIG GET knows, and applies the few that mean
// something here: maxclients, client-output-buffer-limit's pubsub
// class (see pubsub.go) and revkv's own zset-rank-cache-members (the
// members the sorted sets' rank cache holds, zcache.go; 0: none). The rest are remembered and answered back.

// configs is the server's parameters.
type configs struct {
	mu     sync.Mutex // guards values
	values map[string]string
}

// configDefaults are the parameters and their values before any CONFIG
// SET; aliases (Redis 7.0 keeps the ziplist names) share a value.
var configDefaults = [][2]string{
	{"maxmemory", "0"},
	{"maxmemory-policy", "noeviction"},
	{"maxmemory-samples", "5"},
	{"databases", "1"},
	{"save", ""},
	{"appendonly", "no"},
	{"appendfsync", "everysec"},
	{"timeout", "0"},
	{"tcp-keepalive", "300"},
	{"loglevel", "notice"},
	{"notify-keyspace-events", ""},
	{"list-max-listpack-size", "-2"},
	{"list-compress-depth", "0"},
	{"hash-max-listpack-entries", "128"},
	{"hash-max-listpack-value", "64"},
	{"set-max-intset-entries", "512"},
	{"zset-max-listpack-entries", "128"},
	{"zset-max-listpack-value", "64"},
	{"zset-rank-cache-members", ""},
	{"revkv-max-reply-entries", "1000000"},
	{"stream-node-max-bytes", "4096"},
	{"stream-node-max-entries", "100"},
	{"busy-reply-threshold", "5000"},
	{"slowlog-log-slower-than", "10000"},
	{"slowlog-max-len", "128"},
	{"latency-tracking", "yes"},
	{"lazyfree-lazy-user-del", "no"},
	{"lazyfree-lazy-user-flush", "no"},
	{"active-expire-enabled", "yes"},
	{"replica-read-only", "yes"},
	{"cluster-enabled", "no"},
	{"client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
	{"maxclients", ""},
	{"proto-max-bulk-len", ""},
	{"requirepass", ""},
	{"port", ""},
	{"bind", ""},
	{"dir", ""},
	{"dbfilename", "dump.rdb"},
	{"appendfilename", "appendonly.aof"},
}

// configAliases maps Redis's older names to the ones above.
var configAliases = map[string]string{
	"list-max-ziplist-size":    "list-max-listpack-size",
	"hash-max-ziplist-entries": "hash-max-listpack-entries",
	"hash-max-ziplist-value":   "hash-max-listpack-value",
	"zset-max-ziplist-entries": "zset-max-listpack-entries",
	"zset-max-ziplist-value":   "zset-max-listpack-value",
	"lua-time-limit":           "busy-reply-threshold",
	"slave-read-only":          "replica-read-only",
}

func (s *server) initConfig() {
	s.configs.values = map[string]string{}
	for _, kv := range configDefaults {
		s.configs.values[kv[0]] = kv[1]
	}
	v := s.configs.values
	v["maxclients"] = strconv.Itoa(s.cfg.maxClients)
	v["proto-max-bulk-len"] = strconv.FormatInt(s.cfg.maxValue, 10)
	v["requirepass"] = s.cfg.requirepass
	s.maxClients.Store(int64(s.cfg.maxClients))
	s.limits.init()
	s.zsets.init(s.cfg.zsetCacheSize())
	v["zset-rank-cache-members"] = strconv.FormatInt(s.cfg.zsetCacheSize(), 10)
	s.pubsubLimit.Store(32 << 20)
}

func configName(name string) string {
	name = strings.ToLower(name)
	if a := configAliases[name]; a != "" {
		return a
	}
	return name
}

func init() {
	register(&command{name: "config", arity: -2, conn: cmdConfig,
		sub: map[string]int{"GET": -3, "SET": -4, "RESETSTAT": 2, "REWRITE": 2, "HELP": 2}})
}

func cmdConfig(s *server, c *client, a [][]byte) {
	switch strings.ToUpper(string(a[1])) {
	case "GET":
		s.configGet(c, a[2:])
	case "SET":
		s.configSet(c, a[2:])
	case "RESETSTAT":
		c.w.Simple("OK")
	case "REWRITE":
		c.w.Error("ERR The server is running without a config file")
	case "HELP":
		c.w.Array(3)
		c.w.Simple("CONFIG GET <pattern>")
		c.w.Simple("CONFIG SET <directive> <value> [<directive> <value> ...]")
		c.w.Simple("CONFIG RESETSTAT")
	}
}

func (s *server) configGet(c *client, patterns [][]byte) {
	s.configs.mu.Lock()
	// What is known only once the server listens (main sets dir after
	// newServer).
	s.configs.values["port"] = s.port()
	s.configs.values["dir"] = s.dir
	if s.dir != "" {
		s.configs.values["appendonly"] = "yes"
	}
	names := map[string]string{}
	all := slices.Collect(func(yield func(string) bool) {
		for k := range s.configs.values {
			if !yield(k) {
				return
			}
		}
		for k, to := range configAliases {
			if to != "" && !yield(k) {
				return
			}
		}
	})
	for _, p := range patterns {
		for _, name := range all {
			if match(p, name) || match([]byte(strings.ToLower(string(p))), name) {
				names[name] = s.configs.values[configName(name)]
			}
		}
	}
	s.configs.mu.Unlock()
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	c.w.Map(len(keys))
	for _, k := range keys {
		c.w.BulkString(k)
		c.w.BulkString(names[k])
	}
}

func (s *server) configSet(c *client, a [][]byte) {
	if len(a)%2 != 0 {
		c.w.Error("ERR wrong number of arguments for 'config|set' command")
		return
	}
	s.configs.mu.Lock()
	defer s.configs.mu.Unlock()
	for i := 0; i < len(a); i += 2 {
		name := configName(string(a[i]))
		if _, ok := s.configs.values[name]; !ok {
			c.w.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + string(a[i]) + "'")
			return
		}
	}
	for i := 0; i < len(a); i += 2 {
		name, v := configName(string(a[i])), string(a[i+1])
		switch name {
		case "maxclients":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				c.w.Error("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer")
				return
			}
			s.maxClients.Store(n)
		case "zset-rank-cache-members":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				c.w.Error("ERR CONFIG SET failed (possibly related to argument 'zset-rank-cache-members') - argument couldn't be parsed into an integer")
				return
			}
			s.zsets.setMax(n)
		case "client-output-buffer-limit":
			n, ok := pubsubHardLimit(v)
			if ok && n >= 0 {
				s.pubsubLimit.Store(n)
			} else if !ok {
				c.w.Error("ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration.")
				return
			}
		}
		if l := s.limits.limitOf(name); l != nil {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil && n < 0 && name == "revkv-max-reply-entries" {
				err = strconv.ErrRange // 0 is no bound; below it means nothing
			}
			if err != nil {
				c.w.Error("ERR CONFIG SET failed (possibly related to argument '" + string(a[i]) + "') - argument couldn't be parsed into an integer")
				return
			}
			l.Store(n)
		}
		s.configs.values[name] = v
	}
	c.w.Simple("OK")
}

// pubsubHardLimit reads the pubsub class's hard limit (bytes; 0: none) of
// a client-output-buffer-limit value: classes of four words each.
func pubsubHardLimit(v string) (int64, bool) {
	f := strings.Fields(v)
	if len(f)%4 != 0 {
		return 0, false
	}
	limit := int64(-1)
	for i := 0; i < len(f); i += 4 {
		n, ok := memBytes(f[i+1])
		if !ok {
			return 0, false
		}
		if strings.EqualFold(f[i], "pubsub") {
			limit = n
		}
	}
	return limit, true // -1: no pubsub class, its limit unchanged
}

// memBytes parses a memory amount as Redis's config does: 10, 1k, 1kb,
// 1m, 1mb, 1g, 1gb.
func memBytes(s string) (int64, bool) {
	s = strings.ToLower(s)
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"kb", 1024}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000000}, {"g", 1000000000}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.n
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mul, err == nil && n >= 0
}
