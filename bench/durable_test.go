package bench

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/dgraph-io/badger/v4"
	bolt "go.etcd.io/bbolt"

	"github.com/revkv/revkv"
)

// durableValue is the value every durable Put writes: 100 bytes.
var durableValue = make([]byte, 100)

// durablePutter is a store that makes each Put durable before it returns.
type durablePutter interface {
	put(key string) error
	close() error
}

type revkvDurable struct{ s *revkv.Store[[]byte] }

func (r revkvDurable) put(k string) error { _, err := r.s.Put(k, durableValue); return err }
func (r revkvDurable) close() error       { return r.s.Close() }

var boltBucket = []byte("kv")

// boltDurable is bbolt with one read-write transaction (one fsync) per
// Put, or with db.Batch, which merges concurrent callers' functions into
// one transaction.
type boltDurable struct {
	db    *bolt.DB
	batch bool
}

func (d boltDurable) put(k string) error {
	fn := func(tx *bolt.Tx) error { return tx.Bucket(boltBucket).Put([]byte(k), durableValue) }
	if d.batch {
		return d.db.Batch(fn)
	}
	return d.db.Update(fn)
}
func (d boltDurable) close() error { return d.db.Close() }

type badgerDurable struct{ db *badger.DB }

func (d badgerDurable) put(k string) error {
	return d.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(k), durableValue) })
}
func (d badgerDurable) close() error { return d.db.Close() }

type pebbleDurable struct{ db *pebble.DB }

func (d pebbleDurable) put(k string) error { return d.db.Set([]byte(k), durableValue, pebble.Sync) }
func (d pebbleDurable) close() error       { return d.db.Close() }

// rawFsync appends each value to one file and fsyncs it: the physical limit
// of one writer on this disk. Writers take turns (a mutex), as they must on
// one file without group commit.
type rawFsync struct {
	mu sync.Mutex
	f  *os.File
}

func (r *rawFsync) put(string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(durableValue); err != nil {
		return err
	}
	return r.f.Sync()
}
func (r *rawFsync) close() error { return r.f.Close() }

// openDurable opens store name in dir for writers goroutines at once.
func openDurable(b *testing.B, name, dir string, writers int) durablePutter {
	switch name {
	case "raw-fsync":
		f, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		must(b, err)
		return &rawFsync{f: f}
	case "revkv":
		s, err := revkv.Open(dir, revkv.BytesCodec())
		must(b, err)
		return revkvDurable{s}
	case "bbolt", "bbolt-batch":
		db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o644, nil)
		must(b, err)
		must(b, db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(boltBucket); return err }))
		if name == "bbolt-batch" {
			// Tuned as bbolt's docs advise for Batch: a batch commits as
			// soon as every writer has joined it (MaxBatchSize), and waits
			// at most 1 ms for stragglers instead of 10 ms (MaxBatchDelay).
			db.MaxBatchSize, db.MaxBatchDelay = writers, time.Millisecond
		}
		return boltDurable{db: db, batch: name == "bbolt-batch"}
	case "badger":
		db, err := badger.Open(badger.DefaultOptions(dir).WithSyncWrites(true).WithLogger(nil))
		must(b, err)
		return badgerDurable{db}
	case "pebble":
		db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
		must(b, err)
		return pebbleDurable{db}
	}
	panic(name)
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

func must(b testing.TB, err error) {
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDurablePut: Puts that are on stable storage when they return,
// from 1, 8 and 64 goroutines at once, over 100,000 keys, each store in a
// fresh directory on the same disk: revkv (SyncAlways, group commit), bbolt
// (a transaction per Put, and db.Batch), Badger with SyncWrites, pebble
// with Sync, and a raw write+fsync loop as the limit of one writer. ns/op
// is per Put of all writers together (wall time / Puts).
func BenchmarkDurablePut(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		for _, name := range []string{"raw-fsync", "revkv", "bbolt", "bbolt-batch", "badger", "pebble"} {
			if name == "raw-fsync" && writers > 1 || name == "bbolt-batch" && writers == 1 {
				continue // bbolt's docs: Batch is only useful with several goroutines calling it
			}
			b.Run(fmt.Sprintf("writers=%d/store=%s", writers, name), func(b *testing.B) {
				d := openDurable(b, name, b.TempDir(), writers)
				defer func() { must(b, d.close()) }()
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							if err := d.put(fmt.Sprint("key", i%100_000)); err != nil {
								panic(err)
							}
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}

// dirSize is the bytes of the files under dir.
func dirSize(b *testing.B, dir string) int64 {
	var n int64
	must(b, filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	}))
	return n
}

var (
	diskRevs = flag.Int("disk-revs", 1_000_000, "revisions BenchmarkDiskOpen writes (a multiple of 1,000)")
	coldOpen = flag.Bool("cold", false, "BenchmarkDiskOpen drops the page cache before each Open (Linux, as root)")
)

// dropCaches writes the dirty pages back and drops the page cache, so that
// an Open reads its files from the disk, as after a reboot.
func dropCaches(b *testing.B) {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o200); err != nil {
		b.Fatalf("-cold needs to drop the page cache: %v", err)
	}
}

// BenchmarkDiskOpen writes 1,000,000 revisions (-disk-revs) (64-byte values over
// 100,000 keys, in batches of 1,000, without a sync per batch) to each
// store, closes it, and measures the bytes it left on disk per revision and
// how fast it opens again: revisions per second of Open (revkv replays its
// log into memory; bbolt, Badger and pebble open their files and read one
// key). Every store keeps only the newest value of a key but revkv, which
// keeps every revision: its bytes hold the whole history. Run with
// -benchtime=1x. With -cold, each Open starts with an empty page cache.
func BenchmarkDiskOpen(b *testing.B) {
	const keys, batch = 100_000, 1000
	revs := *diskRevs
	val := make([]byte, 64)
	key := func(i int) []byte { return fmt.Appendf(nil, "key%06d", i%keys) }
	for _, name := range []string{"revkv", "bbolt", "badger", "pebble"} {
		b.Run("store="+name, func(b *testing.B) {
			dir := b.TempDir()
			var open func() func()
			switch name {
			case "revkv":
				s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithSync(revkv.SyncNever))
				must(b, err)
				for i := 0; i < revs; i += batch {
					_, err := s.Update(func(tx *revkv.Txn[[]byte]) error {
						for j := i; j < i+batch; j++ {
							tx.Put(string(key(j)), val)
						}
						return nil
					})
					must(b, err)
				}
				must(b, s.Close())
				open = func() func() {
					s, err := revkv.Open(dir, revkv.BytesCodec())
					must(b, err)
					return func() { s.Close() }
				}
			case "bbolt":
				db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o644, &bolt.Options{NoSync: true})
				must(b, err)
				must(b, db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(boltBucket); return err }))
				for i := 0; i < revs; i += batch {
					must(b, db.Update(func(tx *bolt.Tx) error {
						for j := i; j < i+batch; j++ {
							if err := tx.Bucket(boltBucket).Put(key(j), val); err != nil {
								return err
							}
						}
						return nil
					}))
				}
				must(b, db.Close())
				open = func() func() {
					db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o644, nil)
					must(b, err)
					must(b, db.View(func(tx *bolt.Tx) error { tx.Bucket(boltBucket).Get(key(1)); return nil }))
					return func() { db.Close() }
				}
			case "badger":
				db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
				must(b, err)
				for i := 0; i < revs; i += batch {
					wb := db.NewWriteBatch()
					for j := i; j < i+batch; j++ {
						must(b, wb.Set(key(j), val))
					}
					must(b, wb.Flush())
				}
				must(b, db.Close())
				open = func() func() {
					db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
					must(b, err)
					must(b, db.View(func(txn *badger.Txn) error { _, err := txn.Get(key(1)); return err }))
					return func() { db.Close() }
				}
			case "pebble":
				db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
				must(b, err)
				for i := 0; i < revs; i += batch {
					wb := db.NewBatch()
					for j := i; j < i+batch; j++ {
						must(b, wb.Set(key(j), val, nil))
					}
					must(b, wb.Commit(pebble.NoSync))
				}
				must(b, db.Close())
				open = func() func() {
					db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
					must(b, err)
					_, closer, err := db.Get(key(1))
					must(b, err)
					closer.Close()
					return func() { db.Close() }
				}
			}
			size := dirSize(b, dir)
			b.ResetTimer()
			for range b.N {
				if *coldOpen {
					b.StopTimer()
					dropCaches(b)
					b.StartTimer()
				}
				closeIt := open()
				b.StopTimer()
				closeIt()
				b.StartTimer()
			}
			b.ReportMetric(float64(size)/float64(revs), "B/rev")
			b.ReportMetric(float64(revs)*float64(b.N)/b.Elapsed().Seconds(), "revs/s")
		})
	}
}
