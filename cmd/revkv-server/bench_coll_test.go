package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"testing"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/resp"
)

// The cost of an element's write does not grow with its collection's
// size: BenchmarkElementWrite writes one new element (HSET, LPUSH, SADD,
// ZADD) into a collection of 10 and of 1,000,000 elements, each command
// one Update as the server runs it (no network: the cost measured is the
// store's and the command's). BenchmarkZRangeByScore reads 10 members
// from the middle of 10 and 1,000,000. BenchmarkZRankInMiddle asks
// ZRANK of the middle member, ZCOUNT of the middle half and ZRANGE of 10
// ranks in the middle of 10 and 1,000,000 members (by the rank cache's
// trees, zcache.go, built before the timer starts).
// BenchmarkMemoryPerElement reports the heap one element costs.
//
//	go test ./cmd/revkv-server -run='^$' -bench='Element|ZRange|ZRank' -benchtime=20000x

// benchSizes are the collections' sizes compared (-bench-big sets the
// second).
var benchSizes = []int{10, 1_000_000}

// benchServer is a server with a client whose replies are dropped.
func benchServer() (*server, *client) {
	s := newServer(revkv.New[[]byte](), config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return s, &client{srv: s, w: resp.NewWriter(io.Discard), info: clientInfo{multi: -1}}
}

// run runs one write command as dispatch does.
func (s *server) run(c *client, args ...string) {
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	cmd := lookup(a[0])
	if cmd.write != nil {
		s.update(c, func(tx *revkv.Txn[[]byte]) { cmd.write(c, tx, a) })
	} else {
		r := &storeReader{store: s.store}
		cmd.read(c, r, a)
		r.close()
	}
	c.w.Truncate(0)
}

// fill adds n elements to key with the type's write command, 1,000 an
// Update.
func fill(s *server, c *client, typ, key string, n int) {
	for i := 0; i < n; i += 1000 {
		args := []string{map[string]string{"hash": "hset", "list": "rpush", "set": "sadd", "zset": "zadd"}[typ], key}
		for j := i; j < min(i+1000, n); j++ {
			switch typ {
			case "hash":
				args = append(args, "field"+strconv.Itoa(j), "value")
			case "zset":
				args = append(args, strconv.Itoa(j), "member"+strconv.Itoa(j))
			default:
				args = append(args, "member"+strconv.Itoa(j))
			}
		}
		s.run(c, args...)
	}
}

func BenchmarkElementWrite(b *testing.B) {
	for _, typ := range []string{"hash", "list", "set", "zset", "zset-ranked"} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", typ, size), func(b *testing.B) {
				s, c := benchServer()
				defer s.store.Close()
				typ := typ
				if typ == "zset-ranked" { // a ZADD that keeps the set's rank tree up to date too
					typ = "zset"
					fill(s, c, typ, "k", size)
					s.run(c, "zrank", "k", "member0")
				} else {
					fill(s, c, typ, "k", size)
				}
				args := make([][]string, b.N)
				for i := range args {
					m := "new" + strconv.Itoa(i)
					args[i] = map[string][]string{"hash": {"hset", "k", m, "v"}, "list": {"lpush", "k", m},
						"set": {"sadd", "k", m}, "zset": {"zadd", "k", strconv.Itoa(i % size), m}}[typ]
				}
				runtime.GC()
				b.ResetTimer()
				for i := range b.N {
					s.run(c, args[i]...)
				}
			})
		}
	}
}

func BenchmarkZRangeByScore(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			s, c := benchServer()
			defer s.store.Close()
			fill(s, c, "zset", "k", size)
			from := strconv.Itoa(size / 2)
			b.ResetTimer()
			for range b.N {
				s.run(c, "zrangebyscore", "k", from, "+inf", "limit", "0", "10")
			}
		})
	}
}

func BenchmarkZRankInMiddle(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			s, c := benchServer()
			defer s.store.Close()
			fill(s, c, "zset", "k", size) // member i has score i
			mid := size / 2
			for _, q := range [][]string{
				{"zrank", "k", "member" + strconv.Itoa(mid)},
				{"zcount", "k", strconv.Itoa(size / 4), strconv.Itoa(size * 3 / 4)}, // half the members
				{"zrange", "k", strconv.Itoa(mid - 5), strconv.Itoa(mid + 4)},       // 10 members
			} {
				b.Run(q[0], func(b *testing.B) {
					s.run(c, q...) // builds the tree, if none
					b.ResetTimer()
					for range b.N {
						s.run(c, q...)
					}
				})
			}
		})
	}
}

// BenchmarkMemoryPerElement reports the heap an element costs, with its
// history (one entry), in a collection of 100,000: measured once, whatever
// b.N.
func BenchmarkMemoryPerElement(b *testing.B) {
	const n = 100_000
	for _, typ := range []string{"hash", "list", "set", "zset"} {
		b.Run(typ, func(b *testing.B) {
			for range 1 {
				s, c := benchServer()
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				fill(s, c, typ, "k", n)
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/element")
				runtime.KeepAlive(s)
				s.store.Close()
			}
			for range b.N {
			}
		})
	}
}
