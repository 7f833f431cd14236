package bench

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jellydator/ttlcache/v3"
	"github.com/maypok86/otter/v2"

	"github.com/revkv/revkv"
)

const (
	nKeys   = 1 << 20 // keys k0 … k1048575
	hotKeys = 1000
	mask    = 1<<16 - 1 // random sequences have 65,536 entries
)

var (
	keys   = make([]string, nKeys)
	values = make([][]byte, 1024) // 64-byte values, shared by every contender
	seqKey = make([]int, mask+1)  // random key indices, drawn once
	seqRev = make([]int64, mask+1)
)

func init() {
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	for i := range values {
		values[i] = make([]byte, 64)
		values[i][0] = byte(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range seqKey {
		seqKey[i] = rng.IntN(nKeys)
		seqRev[i] = 1 + rng.Int64N(hotKeys*hotKeys)
	}
}

type contender struct {
	name string
	new  func() KV
}

var kvs = []contender{
	{"revkv", func() KV { return newRevkv() }},
	{"map", func() KV { return newBareMap() }},
	{"versioned", func() KV { return newVersionedMap() }},
	{"ordered", func() KV { return newOrdered() }},
	{"etcd", func() KV { return newEtcd() }},
	{"badger", func() KV { return newBadger() }},
	{"memdb", func() KV { return newMemdb() }},
}

// withTimed is kvs and versionedTimed, for the benchmarks that show what
// keeping a time with every revision costs the history limit.
var withTimed = append(kvs[:len(kvs):len(kvs)], contender{"versioned+time", func() KV { return newVersionedTimed() }})

// fixtures are loaded once per process and shared by every count, one kind
// at a time: loading another kind, or a benchmark that needs none
// (dropFixtures), closes them. A benchmark that allocates would otherwise pay
// for the garbage collector marking gigabytes of other stores' fixtures, and
// pay in proportion to what it allocates, which is not what it measures.
var (
	fixMu    sync.Mutex // guards fixtures and fixKind
	fixtures = map[string]KV{}
	fixKind  string
)

func fixture(b *testing.B, kind string, c contender, load func(KV)) KV {
	fixMu.Lock()
	defer fixMu.Unlock()
	if s, ok := fixtures[c.name]; ok && fixKind == kind {
		return s
	}
	b.StopTimer()
	defer b.StartTimer()
	if fixKind != kind {
		dropFixturesLocked()
		fixKind = kind
	}
	s := c.new()
	load(s)
	fixtures[c.name] = s
	// Collect the load's garbage and give its pages back to the OS now, so
	// that neither the collector nor the background scavenger works on them
	// during the timing (the first benchmark after a load measured 26% slower
	// without this: 314 ns against 250 for the same lookup).
	debug.FreeOSMemory()
	return s
}

// dropFixtures closes every fixture and collects them.
func dropFixtures() {
	fixMu.Lock()
	defer fixMu.Unlock()
	dropFixturesLocked()
}

func dropFixturesLocked() {
	if len(fixtures) == 0 {
		return
	}
	for name, s := range fixtures {
		s.Close()
		delete(fixtures, name)
	}
	fixKind = ""
	runtime.GC()
}

// loadAll writes every key twice: revision nKeys ends the first round.
func loadAll(s KV) {
	for round := range 2 {
		for i, k := range keys {
			s.Put(k, values[(i+round)%len(values)])
		}
	}
}

// loadHistory writes hotKeys keys hotKeys times: revision r is round
// (r-1)/hotKeys of key (r-1)%hotKeys.
func loadHistory(s KV) {
	for round := range hotKeys {
		for i := range hotKeys {
			s.Put(keys[i], values[(i+round)%len(values)])
		}
	}
}

func BenchmarkGet(b *testing.B) {
	for _, c := range kvs {
		b.Run("store="+c.name, func(b *testing.B) {
			s := fixture(b, "all", c, loadAll)
			for i := 0; b.Loop(); i++ {
				if _, ok := s.Get(keys[seqKey[i&mask]]); !ok {
					b.Fatal("missing")
				}
			}
		})
	}
}

func BenchmarkGetParallel(b *testing.B) {
	for _, c := range kvs {
		b.Run("store="+c.name, func(b *testing.B) {
			s := fixture(b, "all", c, loadAll)
			var worker atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(worker.Add(1)) * 7919
				for pb.Next() {
					if _, ok := s.Get(keys[seqKey[i&mask]]); !ok {
						b.Error("missing")
						return
					}
					i++
				}
			})
		})
	}
}

// BenchmarkScan reads the 1,111 keys under "k1000" (k1000, k10000…k10009,
// …, k1000000…k1000999) out of 2^20, latest and at revision 2^20 (the end of
// the first load round). ns/key is per key yielded (ns/op per scan).
func BenchmarkScan(b *testing.B) {
	for _, at := range []int64{0, nKeys} {
		for _, c := range kvs {
			sc, ok := c.new().(Scanner)
			if !ok {
				continue
			}
			if _, hist := sc.(Versioned); at != 0 && !hist {
				continue
			}
			name := "latest"
			if at != 0 {
				name = "past"
			}
			b.Run(fmt.Sprintf("at=%s/store=%s", name, c.name), func(b *testing.B) {
				s := fixture(b, "all", c, loadAll).(Scanner)
				yielded := 0
				for b.Loop() {
					n := s.Scan("k1000", at, func(string, []byte) {})
					if n != 1111 {
						b.Fatalf("scan yielded %d keys", n)
					}
					yielded += n
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(yielded), "ns/key")
			})
		}
	}
}

func benchPut(b *testing.B, n int) {
	dropFixtures()
	for _, c := range withTimed {
		b.Run("store="+c.name, func(b *testing.B) {
			s := c.new()
			defer s.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Put(keys[i%n], values[i&1023])
			}
		})
	}
}

// BenchmarkTxn8 writes batches of 8 keys, cycling over 1,000 keys into a
// fresh store, each batch one atomic transaction: revkv's Update, etcd's
// write txn with 8 puts, one Badger transaction, one go-memdb transaction,
// the versioned map under one lock. ns/key is per key written.
func BenchmarkTxn8(b *testing.B) {
	dropFixtures()
	for _, c := range kvs {
		probe := c.new()
		_, ok := probe.(Batcher)
		probe.Close()
		if !ok {
			continue
		}
		b.Run("store="+c.name, func(b *testing.B) {
			s := c.new().(Batcher)
			defer s.Close()
			var batch [8]string
			var vals [8][]byte
			n := 0
			for b.Loop() {
				for j := range batch {
					batch[j], vals[j] = keys[n%hotKeys], values[n&1023]
					n++
				}
				s.PutBatch(batch[:], vals[:])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/key")
		})
	}
}

// BenchmarkPut writes cycling over 2^20 keys into a fresh store.
func BenchmarkPut(b *testing.B) { benchPut(b, nKeys) }

// BenchmarkUpdateHot writes cycling over 1,000 keys into a fresh store.
func BenchmarkUpdateHot(b *testing.B) { benchPut(b, hotKeys) }

func BenchmarkGetAt(b *testing.B) {
	for _, c := range kvs {
		if _, ok := c.new().(Versioned); !ok {
			continue
		}
		b.Run("store="+c.name, func(b *testing.B) {
			s := fixture(b, "history", c, loadHistory).(Versioned)
			for i := 0; b.Loop(); i++ {
				if _, ok := s.GetAt(keys[seqKey[i&mask]%hotKeys], seqRev[i&mask]); !ok && seqRev[i&mask] > hotKeys {
					b.Fatal("missing")
				}
			}
		})
	}
}

// BenchmarkGetAsOf is GetAt by time: revkv alone answers it. Revision r was
// written at start + r µs.
func BenchmarkGetAsOf(b *testing.B) {
	var tick atomic.Int64
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newRevkv(revkv.WithClock(func() time.Time { return start.Add(time.Duration(tick.Load()) * time.Microsecond) }))
	for round := range hotKeys {
		for i := range hotKeys {
			tick.Add(1)
			s.Put(keys[i], values[(i+round)%len(values)])
		}
	}
	b.Run("store=revkv", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			at := start.Add(time.Duration(seqRev[i&mask]) * time.Microsecond)
			if _, _, err := s.s.GetAsOf(keys[seqKey[i&mask]%hotKeys], at); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// ---- TTL workloads ----

type ttlContender struct {
	name  string
	put   func(key string, v []byte, ttl time.Duration)
	purge func() int
}

// manual is a clock the benchmarks move by hand.
type manual struct{ ns atomic.Int64 }

func (m *manual) now() time.Time { return time.Unix(0, m.ns.Load()) }

// ttlNames are the TTL contenders; newTTL builds one, with its clock.
var ttlNames = []string{"revkv", "heapmap", "ttlcache", "otter"}

func newTTL(name string, clock *manual) ttlContender {
	switch name {
	case "revkv":
		r := revkv.New[[]byte](revkv.WithClock(clock.now))
		return ttlContender{name, func(k string, v []byte, d time.Duration) { r.PutTTL(k, v, d) }, r.PurgeExpired}
	case "heapmap":
		h := newHeapMap(clock.now)
		return ttlContender{name, h.PutTTL, h.PurgeExpired}
	case "ttlcache":
		tc := ttlcache.New[string, []byte](ttlcache.WithDisableTouchOnHit[string, []byte]())
		return ttlContender{name, func(k string, v []byte, d time.Duration) { tc.Set(k, v, d) }, func() int {
			n := tc.Metrics().Evictions
			tc.DeleteExpired()
			return int(tc.Metrics().Evictions - n)
		}}
	case "otter":
		oc := otter.Must(&otter.Options[string, []byte]{ExpiryCalculator: otter.ExpiryWriting[string, []byte](time.Hour)})
		return ttlContender{name, func(k string, v []byte, d time.Duration) { oc.Set(k, v); oc.SetExpiresAfter(k, d) }, nil}
	}
	panic("no TTL contender " + name)
}

func BenchmarkPutTTL(b *testing.B) {
	dropFixtures()
	for _, name := range ttlNames {
		b.Run("store="+name, func(b *testing.B) {
			clock := &manual{}
			clock.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
			c := newTTL(name, clock)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.put(keys[i&(nKeys-1)], values[i&1023], time.Hour)
			}
		})
	}
}

// coldBuf is written over before each timed purge, to push every store's data
// out of the processor's caches (64 MiB; the L3 is 32 MiB).
var coldBuf = make([]byte, 64<<20)

func evictCaches() {
	for i := 0; i < len(coldBuf); i += 64 {
		coldBuf[i]++
	}
}

var purgeNames = flag.Bool("purge-names", false, "also run the purge benchmarks with the keys loaded in name order (order=names; about 3 minutes more at -count=6)")

// benchPurge times PurgeExpired on 2^20 keys with a TTL of which every
// frac-th has run out (frac 1: all of them; frac 100: 1%), and reports ns and
// bytes allocated per expired key (ns/expired, B/expired).
//
// Every key a purge expires is expired for the first time, in the same state
// in both cases: an hour-long put and then a short one. A store is loaded,
// untimed, with every key's hour-long put and serves frac iterations;
// iteration j gives every frac-th key from offset j its short put, moves the
// clock a second on and times the purge. Then a fresh store is loaded. (A
// key's second purge costs less or more than its first, depending on whether
// its log has room; reusing one store made the all-expired case, which purges
// every key every iteration, swing from 260 to 1,100 ns/expired between
// counts.)
//
// The expiries all fall due at one instant, so a purge takes them in key
// order. The keys are loaded (and the 1% chosen) in a fixed random order
// (order=random), so a purge finds its keys scattered over the heap in both
// cases: the comparison of the two is of the work per expired key alone,
// which is what O(expired) is about. With -purge-names the benchmarks also
// run with the keys loaded in name order (order=names, k0, k1, …): a store's
// memory for k100000 … k100009 then lies side by side and the all-expired
// purge walks it nearly in the order it was allocated, which the 1% purge,
// every 100th key, cannot.
//
// The garbage collector is off while it runs (it runs, untimed, after each
// load), so that no timed purge pays for a collection its own or earlier
// allocations set off; B/expired is what a purge leaves the collector. The
// caches are emptied before each timed purge: a real purge finds keys written
// long ago, not the 1% just given their short put.
func benchPurge(b *testing.B, frac int) {
	dropFixtures()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	type order struct {
		name string
		keys []int // indices into keys, in the order loaded
	}
	orders := []order{{"random", rand.New(rand.NewPCG(3, 4)).Perm(nKeys)}}
	if *purgeNames {
		names := make([]int, nKeys)
		for i := range names {
			names[i] = i
		}
		orders = append(orders, order{"names", names})
	}
	for _, order := range orders {
		for _, name := range []string{"revkv", "heapmap", "ttlcache"} {
			clock := &manual{}
			clock.ns.Store(time.Now().UnixNano())
			short := time.Nanosecond
			if name == "ttlcache" {
				short = time.Microsecond // judged by the real clock: run out by the purge below
			}
			var c ttlContender
			round := 0 // iterations so far, over every b.Run of this store
			b.Run("order="+order.name+"/store="+name, func(b *testing.B) {
				var elapsed time.Duration
				var alloc uint64
				expired := 0
				for range b.N {
					b.StopTimer()
					off := round % frac
					round++
					if off == 0 {
						c = ttlContender{}
						runtime.GC()
						c = newTTL(name, clock)
						for _, i := range order.keys {
							c.put(keys[i], values[i&1023], time.Hour)
						}
						runtime.GC()
					}
					for j := off; j < nKeys; j += frac {
						i := order.keys[j]
						c.put(keys[i], values[i&1023], short)
					}
					clock.ns.Add(int64(time.Second))
					time.Sleep(time.Millisecond)
					evictCaches()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					b.StartTimer()
					t0 := time.Now()
					n := c.purge()
					elapsed += time.Since(t0)
					b.StopTimer()
					runtime.ReadMemStats(&after)
					alloc += after.TotalAlloc - before.TotalAlloc
					expired += n
					if want := (nKeys - off + frac - 1) / frac; n != want {
						b.Fatalf("purged %d, want %d", n, want)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(expired), "ns/expired")
				b.ReportMetric(float64(alloc)/float64(expired), "B/expired")
			})
			c = ttlContender{} // let the store go before the next one loads
			runtime.GC()
		}
	}
}

func BenchmarkPurgeExpiredAll(b *testing.B)        { benchPurge(b, 1) }
func BenchmarkPurgeExpiredOnePercent(b *testing.B) { benchPurge(b, 100) }

// ---- memory ----

func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMemory reports the live heap per stored revision (B/rev) after
// loading 1M distinct keys once each, and 1,000 keys 1,000 times each. The
// values are shared, so it is the store's own cost.
func BenchmarkMemory(b *testing.B) {
	dropFixtures()
	loads := []struct {
		name string
		load func(KV)
	}{
		{"distinct", func(s KV) {
			for i := range 1_000_000 {
				s.Put(keys[i], values[i&1023])
			}
		}},
		{"history", loadHistory},
	}
	for _, l := range loads {
		for _, c := range withTimed {
			if c.name == "etcd" || c.name == "badger" {
				continue // their data lives off the Go heap
			}
			if _, hist := c.new().(Versioned); l.name == "history" && !hist {
				continue
			}
			b.Run(fmt.Sprintf("load=%s/store=%s", l.name, c.name), func(b *testing.B) {
				var per float64
				for range b.N {
					before := heapBytes()
					s := c.new()
					l.load(s)
					per = float64(heapBytes()-before) / 1e6
					runtime.KeepAlive(s)
				}
				b.ReportMetric(per, "B/rev")
			})
		}
	}
}

// ---- what Get's gap to the bare map is made of ----

// slot48 and slot56 are map values of 32 and 40 bytes: map slots of 48 and
// 56 bytes with the key's 16, against the bare map's 40 (key and a slice).
// revkv's index slot is 56: the value, its deadline and the key's log.
type (
	slot48 struct {
		v []byte
		d int64
	}
	slot56 struct {
		v []byte
		d int64
		p *int
	}
)

// BenchmarkMapSlot is the bare map's Get (a map[string]T under an RWMutex,
// 2^20 keys, the same random keys) with map slots of 40, 48 and 56 bytes: the
// part of revkv's gap to the bare map that the size of its slot alone makes.
func BenchmarkMapSlot(b *testing.B) {
	dropFixtures()
	slotBench(b, "slot40", false, func(v []byte) []byte { return v })
	slotBench(b, "slot48", false, func(v []byte) slot48 { return slot48{v: v} })
	slotBench(b, "slot56", false, func(v []byte) slot56 { return slot56{v: v} })
}

// BenchmarkMapSlotParallel is the same under b.RunParallel, as GetParallel,
// with the bare map's slot and revkv's.
func BenchmarkMapSlotParallel(b *testing.B) {
	dropFixtures()
	slotBench(b, "slot40", true, func(v []byte) []byte { return v })
	slotBench(b, "slot56", true, func(v []byte) slot56 { return slot56{v: v} })
}

// slotSink receives a value read, so that the lookups copy them out of the
// map as a Get does.
var (
	sinkMu   sync.Mutex // guards slotSink
	slotSink any
)

func slotBench[T any](b *testing.B, name string, parallel bool, of func([]byte) T) {
	var mu sync.RWMutex // guards m, as in the contenders
	m := make(map[string]T)
	for i, k := range keys {
		m[k] = of(values[i&1023])
	}
	debug.FreeOSMemory()
	// lookups looks up the keys of the random sequence from its i-th on, for
	// as long as next says.
	lookups := func(b *testing.B, i int, next func() bool) {
		var v T
		for ; next(); i++ {
			mu.RLock()
			x, ok := m[keys[seqKey[i&mask]]]
			mu.RUnlock()
			if !ok {
				b.Error("missing")
				return
			}
			v = x
		}
		sinkMu.Lock()
		slotSink = v
		sinkMu.Unlock()
	}
	b.Run("store="+name, func(b *testing.B) {
		if !parallel {
			lookups(b, 0, b.Loop)
			return
		}
		var worker atomic.Int64
		b.RunParallel(func(pb *testing.PB) { lookups(b, int(worker.Add(1))*7919, pb.Next) })
	})
	runtime.KeepAlive(m)
}
