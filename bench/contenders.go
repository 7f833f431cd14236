// Package bench compares revkv with the stores a user would pick instead, on
// identical keys, values and random sequences. See README.md.
package bench

import (
	"container/heap"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/google/btree"
	"github.com/hashicorp/go-memdb"
	"go.etcd.io/etcd/pkg/v3/traceutil"
	"go.etcd.io/etcd/server/v3/lease"
	"go.etcd.io/etcd/server/v3/storage/backend"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.uber.org/zap"

	"github.com/revkv/revkv"
)

// KV is what every contender offers: latest writes and reads.
type KV interface {
	Put(key string, value []byte)
	Get(key string) ([]byte, bool)
	Close()
}

// Versioned stores also read at a past revision. Revisions count puts from 1,
// one per Put, in every contender.
type Versioned interface {
	KV
	GetAt(key string, rev int64) ([]byte, bool)
}

// Scanner stores yield the keys under a prefix in order, at rev (0: latest).
type Scanner interface {
	KV
	Scan(prefix string, rev int64, fn func(key string, value []byte)) int
}

// Batcher stores write several keys in one atomic transaction.
type Batcher interface {
	KV
	PutBatch(keys []string, values [][]byte)
}

// ---- revkv ----

type revkvStore struct{ s *revkv.Store[[]byte] }

func newRevkv(opts ...revkv.Option) *revkvStore { return &revkvStore{revkv.New[[]byte](opts...)} }

func (r *revkvStore) Put(k string, v []byte) {
	if _, err := r.s.Put(k, v); err != nil {
		panic(err)
	}
}
func (r *revkvStore) PutBatch(ks []string, vs [][]byte) {
	_, err := r.s.Update(func(tx *revkv.Txn[[]byte]) error {
		for i, k := range ks {
			if err := tx.Put(k, vs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
}
func (r *revkvStore) Get(k string) ([]byte, bool) { return r.s.Get(k) }
func (r *revkvStore) GetAt(k string, rev int64) ([]byte, bool) {
	v, ok, err := r.s.GetAt(k, revkv.Revision(rev))
	if err != nil {
		panic(err)
	}
	return v, ok
}
func (r *revkvStore) Scan(prefix string, rev int64, fn func(string, []byte)) int {
	n := 0
	if rev == 0 {
		for k, v := range r.s.Scan(prefix) {
			fn(k, v)
			n++
		}
		return n
	}
	view, err := r.s.At(revkv.Revision(rev))
	if err != nil {
		panic(err)
	}
	defer view.Close()
	for k, v := range view.Scan(prefix) {
		fn(k, v)
		n++
	}
	return n
}
func (r *revkvStore) Close() { r.s.Close() }

// ---- the limits: a bare map, and a versioned map ----

type bareMap struct {
	mu sync.RWMutex // guards m
	m  map[string][]byte
}

func newBareMap() *bareMap { return &bareMap{m: map[string][]byte{}} }

func (b *bareMap) Put(k string, v []byte) {
	b.mu.Lock()
	b.m[k] = v
	b.mu.Unlock()
}
func (b *bareMap) Get(k string) ([]byte, bool) {
	b.mu.RLock()
	v, ok := b.m[k]
	b.mu.RUnlock()
	return v, ok
}
func (b *bareMap) Close() {}

type vEntry struct {
	rev   int64
	value []byte
}

// versionedMap is the simplest history store: every key's versions in a
// slice, a global revision counter, sort.Search for reads in the past.
type versionedMap struct {
	mu  sync.RWMutex // guards m and rev
	m   map[string][]vEntry
	rev int64
}

func newVersionedMap() *versionedMap { return &versionedMap{m: map[string][]vEntry{}} }

func (m *versionedMap) Put(k string, v []byte) {
	m.mu.Lock()
	m.rev++
	m.m[k] = append(m.m[k], vEntry{m.rev, v})
	m.mu.Unlock()
}
func (m *versionedMap) PutBatch(ks []string, vs [][]byte) {
	m.mu.Lock()
	for i, k := range ks {
		m.rev++
		m.m[k] = append(m.m[k], vEntry{m.rev, vs[i]})
	}
	m.mu.Unlock()
}
func (m *versionedMap) Get(k string) ([]byte, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	es := m.m[k]
	if len(es) == 0 {
		return nil, false
	}
	return es[len(es)-1].value, true
}
func (m *versionedMap) GetAt(k string, rev int64) ([]byte, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	es := m.m[k]
	i := sort.Search(len(es), func(i int) bool { return es[i].rev > rev }) - 1
	if i < 0 {
		return nil, false
	}
	return es[i].value, true
}
func (m *versionedMap) Close() {}

// versionedTimed is the versioned map made to keep what docs/contract.md asks of every
// revision besides its value: its time, read from the clock and never before
// the previous revision's, room for an expiry time, and every revision's time
// in one list, for reads by time. It is not a contender: it shows what the
// history limit itself costs with those guarantees (Put, UpdateHot, Memory).
// It keeps times as Unix nanoseconds and drops their locations, which revkv
// keeps, so it is a lower bound. Its reads are the versioned map's, written
// out again for its own entry type: shared through a type parameter, the
// versioned map's would reach the revision through a generic dictionary and
// the baseline would be slower than a hand-made map.
type versionedTimed struct {
	mu    sync.RWMutex // guards m, rev and times
	m     map[string][]tEntry
	rev   int64
	times []int64 // times[i] is revision i+1's, in Unix nanoseconds
}

type tEntry struct {
	rev, time, expires int64 // expires is 0: no TTL
	value              []byte
}

func newVersionedTimed() *versionedTimed { return &versionedTimed{m: map[string][]tEntry{}} }

func (m *versionedTimed) Put(k string, v []byte) {
	m.mu.Lock()
	m.putLocked(k, v)
	m.mu.Unlock()
}

func (m *versionedTimed) putLocked(k string, v []byte) {
	now := time.Now().UnixNano()
	if n := len(m.times); n > 0 && now < m.times[n-1] {
		now = m.times[n-1] // times never decrease
	}
	m.rev++
	m.times = append(m.times, now)
	m.m[k] = append(m.m[k], tEntry{rev: m.rev, time: now, value: v})
}
func (m *versionedTimed) Get(k string) ([]byte, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	es := m.m[k]
	if len(es) == 0 {
		return nil, false
	}
	return es[len(es)-1].value, true
}
func (m *versionedTimed) GetAt(k string, rev int64) ([]byte, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	es := m.m[k]
	i := sort.Search(len(es), func(i int) bool { return es[i].rev > rev }) - 1
	if i < 0 {
		return nil, false
	}
	return es[i].value, true
}
func (m *versionedTimed) Close() {}

// ordered is the least any store with revkv's reads must do per write: the
// timed versioned map (a key's versions, each with its time from one
// time.Now per write, and every revision's time for reads by time) and a
// google/btree of the keys, for scans in key order, into which a new key
// goes at its first write. It is the baseline of revkv's Put: revkv does
// all of that and more (expiry, locations, publication to readers without
// a lock); nothing that answers revkv's questions can do less.
type ordered struct {
	versionedTimed
	keys *btree.BTreeG[string] // guarded by versionedTimed.mu
}

func newOrdered() *ordered {
	return &ordered{versionedTimed: *newVersionedTimed(), keys: btree.NewOrderedG[string](32)}
}

func (o *ordered) Put(k string, v []byte) {
	o.mu.Lock()
	if _, ok := o.m[k]; !ok {
		o.keys.ReplaceOrInsert(k)
	}
	o.putLocked(k, v)
	o.mu.Unlock()
}

// Scan yields the keys under prefix in order with their values at rev (0:
// the latest).
func (o *ordered) Scan(prefix string, rev int64, fn func(string, []byte)) int {
	o.mu.RLock()
	defer o.mu.RUnlock()
	n := 0
	o.keys.AscendGreaterOrEqual(prefix, func(k string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		es := o.m[k]
		i := len(es) - 1
		if rev > 0 {
			i = sort.Search(len(es), func(i int) bool { return es[i].rev > rev }) - 1
		}
		if i >= 0 {
			fn(k, es[i].value)
			n++
		}
		return true
	})
	return n
}

// ---- etcd mvcc on bbolt, in a temp dir on /dev/shm ----

type etcdStore struct {
	kv  mvcc.KV
	be  backend.Backend
	dir string
}

func newEtcd() *etcdStore {
	e, _ := newEtcdStore(false)
	return e
}

// newEtcdWatchable is etcd's store with its watchers (mvcc.New, as the etcd
// server runs it), and the store itself as an etcdStore.
func newEtcdWatchable() (*etcdStore, mvcc.WatchableKV) { return newEtcdStore(true) }

func newEtcdStore(watchable bool) (*etcdStore, mvcc.WatchableKV) {
	base := "/dev/shm"
	if _, err := os.Stat(base); err != nil {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "revkv-bench-etcd-")
	if err != nil {
		panic(err)
	}
	// As etcd's own tests do (betesting.NewDefaultTmpBackend), with the
	// default backend config.
	cfg := backend.DefaultBackendConfig(zap.NewNop())
	cfg.Path = filepath.Join(dir, "database")
	be := backend.New(cfg)
	if watchable {
		w := mvcc.New(zap.NewNop(), be, &lease.FakeLessor{}, mvcc.StoreConfig{})
		return &etcdStore{kv: w, be: be, dir: dir}, w
	}
	return &etcdStore{kv: mvcc.NewStore(zap.NewNop(), be, &lease.FakeLessor{}, mvcc.StoreConfig{}), be: be, dir: dir}, nil
}

func (e *etcdStore) Put(k string, v []byte) {
	txn := e.kv.Write(traceutil.TODO())
	txn.Put([]byte(k), v, lease.NoLease)
	txn.End()
}

// PutBatch is one write txn of several puts, as etcd's Txn with several put
// operations applies them.
func (e *etcdStore) PutBatch(ks []string, vs [][]byte) {
	txn := e.kv.Write(traceutil.TODO())
	for i, k := range ks {
		txn.Put([]byte(k), vs[i], lease.NoLease)
	}
	txn.End()
}
func (e *etcdStore) Get(k string) ([]byte, bool) { return e.GetAt(k, 0) }
func (e *etcdStore) GetAt(k string, rev int64) ([]byte, bool) {
	txn := e.kv.Read(mvcc.ConcurrentReadTxMode, traceutil.TODO())
	defer txn.End()
	r, err := txn.Range(context.Background(), []byte(k), nil, mvcc.RangeOptions{Rev: rev})
	if err != nil {
		panic(err)
	}
	if len(r.KVs) == 0 {
		return nil, false
	}
	return r.KVs[0].Value, true
}
func (e *etcdStore) Scan(prefix string, rev int64, fn func(string, []byte)) int {
	txn := e.kv.Read(mvcc.ConcurrentReadTxMode, traceutil.TODO())
	defer txn.End()
	end := []byte(prefix)
	end[len(end)-1]++ // prefix's successor (the prefixes used end below 0xff)
	r, err := txn.Range(context.Background(), []byte(prefix), end, mvcc.RangeOptions{Rev: rev})
	if err != nil {
		panic(err)
	}
	for _, kv := range r.KVs {
		fn(string(kv.Key), kv.Value)
	}
	return len(r.KVs)
}
func (e *etcdStore) Close() {
	e.kv.Close()
	e.be.Close()
	os.RemoveAll(e.dir)
}

// ---- Badger, in memory, managed mode: one CommitAt per write ----

type badgerStore struct {
	db  *badger.DB
	rev uint64
}

func newBadger() *badgerStore {
	db, err := badger.OpenManaged(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil))
	if err != nil {
		panic(err)
	}
	return &badgerStore{db: db}
}

func (b *badgerStore) Put(k string, v []byte) {
	b.rev++
	txn := b.db.NewTransactionAt(b.rev, true)
	if err := txn.Set([]byte(k), v); err != nil {
		panic(err)
	}
	if err := txn.CommitAt(b.rev, nil); err != nil {
		panic(err)
	}
}
func (b *badgerStore) PutBatch(ks []string, vs [][]byte) {
	b.rev++
	txn := b.db.NewTransactionAt(b.rev, true)
	for i, k := range ks {
		if err := txn.Set([]byte(k), vs[i]); err != nil {
			panic(err)
		}
	}
	if err := txn.CommitAt(b.rev, nil); err != nil {
		panic(err)
	}
}
func (b *badgerStore) Get(k string) ([]byte, bool) { return b.GetAt(k, int64(b.rev)) }
func (b *badgerStore) GetAt(k string, rev int64) ([]byte, bool) {
	txn := b.db.NewTransactionAt(uint64(rev), false)
	defer txn.Discard()
	item, err := txn.Get([]byte(k))
	if err != nil {
		return nil, false
	}
	v, err := item.ValueCopy(nil)
	return v, err == nil
}
func (b *badgerStore) Scan(prefix string, rev int64, fn func(string, []byte)) int {
	if rev == 0 {
		rev = int64(b.rev)
	}
	txn := b.db.NewTransactionAt(uint64(rev), false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 100, Prefix: []byte(prefix)})
	defer it.Close()
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		v, err := item.ValueCopy(nil)
		if err != nil {
			panic(err)
		}
		fn(string(item.Key()), v)
		n++
	}
	return n
}
func (b *badgerStore) Close() { b.db.Close() }

// ---- go-memdb (latest only) ----

type memRow struct {
	Key   string
	Value []byte
}

type memdbStore struct{ db *memdb.MemDB }

func newMemdb() *memdbStore {
	db, err := memdb.NewMemDB(&memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		"kv": {Name: "kv", Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
		}},
	}})
	if err != nil {
		panic(err)
	}
	return &memdbStore{db}
}

func (m *memdbStore) Put(k string, v []byte) {
	txn := m.db.Txn(true)
	if err := txn.Insert("kv", &memRow{k, v}); err != nil {
		panic(err)
	}
	txn.Commit()
}
func (m *memdbStore) PutBatch(ks []string, vs [][]byte) {
	txn := m.db.Txn(true)
	for i, k := range ks {
		if err := txn.Insert("kv", &memRow{k, vs[i]}); err != nil {
			panic(err)
		}
	}
	txn.Commit()
}
func (m *memdbStore) Get(k string) ([]byte, bool) {
	txn := m.db.Txn(false)
	row, err := txn.First("kv", "id", k)
	if err != nil || row == nil {
		return nil, false
	}
	return row.(*memRow).Value, true
}
func (m *memdbStore) Scan(prefix string, rev int64, fn func(string, []byte)) int {
	if rev != 0 {
		panic("memdb keeps no history")
	}
	txn := m.db.Txn(false)
	it, err := txn.Get("kv", "id_prefix", prefix)
	if err != nil {
		panic(err)
	}
	n := 0
	for row := it.Next(); row != nil; row = it.Next() {
		r := row.(*memRow)
		if !strings.HasPrefix(r.Key, prefix) {
			break
		}
		fn(r.Key, r.Value)
		n++
	}
	return n
}
func (m *memdbStore) Close() {}

// ---- a map plus container/heap: the baseline for expiry ----

type heapItem struct {
	at  int64
	key string
}

type expiryHeap []heapItem

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(heapItem)) }
func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// heapMap is what a hand-made TTL cache does: values with their expiry in a
// map, a min-heap of expiries, purge pops what is due (stale heap items of
// overwritten keys are skipped).
type heapMap struct {
	mu  sync.Mutex // guards m and h
	m   map[string]heapItem
	val map[string][]byte
	h   expiryHeap
	now func() time.Time
}

func newHeapMap(now func() time.Time) *heapMap {
	return &heapMap{m: map[string]heapItem{}, val: map[string][]byte{}, now: now}
}

func (h *heapMap) PutTTL(k string, v []byte, ttl time.Duration) {
	h.mu.Lock()
	it := heapItem{h.now().Add(ttl).UnixNano(), k}
	h.m[k], h.val[k] = it, v
	heap.Push(&h.h, it)
	h.mu.Unlock()
}

func (h *heapMap) PurgeExpired() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	now, n := h.now().UnixNano(), 0
	for len(h.h) > 0 && h.h[0].at <= now {
		it := heap.Pop(&h.h).(heapItem)
		if cur, ok := h.m[it.key]; ok && cur == it {
			delete(h.m, it.key)
			delete(h.val, it.key)
			n++
		}
	}
	return n
}
