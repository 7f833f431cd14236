package etcdstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/revkv/revkv"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Store is a revkv store whose state lives in an etcd cluster under a
// prefix. Every method is safe for concurrent use, and any number of Store
// values, in any number of processes, may open the same cluster and prefix:
// they share one history.
type Store[V any] struct {
	cli   *clientv3.Client
	kv    clientv3.KV // cli's, or a wrapper that counts round trips (tests)
	l     layout
	codec revkv.Codec[V]
	opts  options
	id    string // this Store's name among the pins: random

	seen      atomic.Int64 // the highest revision this store has seen: none above it is future
	closed    atomic.Bool
	goMu      sync.Mutex         // guards starting a goroutine (wg.Add) against Close's wg.Wait
	stop      chan struct{}      // closed by Close: the goroutines end
	life      context.Context    // done at Close: the goroutines' requests end
	endLife   context.CancelFunc // ends life
	wg        sync.WaitGroup
	closeOnce sync.Once

	batchMu sync.Mutex     // guards queue and leading
	queue   []*writeReq[V] // write calls waiting for a commit, in arrival order
	leading bool           // a caller is committing batches from queue

	cacheMu sync.Mutex // guards cache
	cache   *snapshot  // where the next write starts from, if no other store writes first; nil: read it

	pinMu   sync.Mutex       // guards lease
	lease   clientv3.LeaseID // the lease the View pins live on: 0 until the first View
	pinNext atomic.Int64     // numbers this store's pins
}

// Open returns the store under prefix on the cluster cli talks to. It writes
// nothing, and checks that the cluster answers (one read, within ctx). It
// starts a goroutine only for WithExpiryInterval, WithTrimInterval, and (at
// the first View or Scan) to keep its pins' lease alive; Close ends them.
// The store does not own cli: Close leaves it open.
//
// A nil client or codec, a prefix holding a zero byte and a negative option
// are errors, not panics.
func Open[V any](ctx context.Context, cli *clientv3.Client, prefix string, codec revkv.Codec[V], opts ...Option) (*Store[V], error) {
	switch {
	case cli == nil:
		return nil, errors.New("etcdstore: open: nil etcd client")
	case codec == nil:
		return nil, errors.New("etcdstore: open: nil codec")
	case strings.Contains(prefix, "\x00"):
		return nil, fmt.Errorf("etcdstore: open %q: %w", prefix, ErrInvalidPrefix)
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	s := &Store[V]{
		cli:   cli,
		kv:    cli.KV,
		l:     layout{root: prefix + "\x00"},
		codec: codec,
		opts:  o,
		id:    hex.EncodeToString(idb[:]),
		stop:  make(chan struct{}),
	}
	s.life, s.endLife = context.WithCancel(context.Background())
	if o.wrapKV != nil {
		s.kv = o.wrapKV(s.kv)
	}
	if _, err := s.kv.Get(ctx, s.l.head()); err != nil {
		s.endLife()
		return nil, fmt.Errorf("etcdstore: open %q: %w", prefix, etcdErr(ctx, err))
	}
	s.start()
	return s, nil
}

// Close stops the store's goroutines and waits for them; later writes,
// Compact and Trim return revkv.ErrClosed, PurgeExpired 0. Reads still
// answer. It does not close the client. A second call returns nil.
func (s *Store[V]) Close() error {
	s.closeOnce.Do(func() {
		s.goMu.Lock()
		s.closed.Store(true)
		s.goMu.Unlock()
		close(s.stop)
		s.endLife()
		s.wg.Wait()
		s.pinMu.Lock()
		lease := s.lease
		s.pinMu.Unlock()
		if lease != 0 {
			// Views still open lose their pins here; a View is not to be
			// used after its store's Close for pinning, only for reads.
			ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
			_, _ = s.cli.Revoke(ctx, lease)
			cancel()
		}
	})
	return nil
}

// spawn runs f in a goroutine that Close waits for, unless the store is
// closed (then it returns false and runs nothing).
func (s *Store[V]) spawn(f func()) bool {
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// Rev returns the store's latest revision (0: nothing written yet).
func (s *Store[V]) Rev(ctx context.Context) (revkv.Revision, error) {
	h, _, err := s.readHead(ctx)
	if err != nil {
		return 0, fmt.Errorf("revkv: rev: %w", err)
	}
	return revkv.Revision(h.seq), nil
}

// Floor returns the lowest revision at which a View can open: the highest of
// the last compaction's revision and every trimmed key's oldest remaining
// revision.
func (s *Store[V]) Floor(ctx context.Context) (revkv.Revision, error) {
	resp, err := s.kv.Get(ctx, s.l.floor())
	if err != nil {
		return 0, fmt.Errorf("revkv: floor: %w", etcdErr(ctx, err))
	}
	f, err := floorOf(resp.Kvs)
	if err != nil {
		return 0, fmt.Errorf("revkv: floor: %w", err)
	}
	return revkv.Revision(max(f.rev, f.trim)), nil
}

// readHead reads the head key: the last revision and its time.
func (s *Store[V]) readHead(ctx context.Context) (headState, int64, error) {
	resp, err := s.kv.Get(ctx, s.l.head())
	if err != nil {
		return headState{}, 0, etcdErr(ctx, err)
	}
	h, err := headOf(resp.Kvs)
	s.saw(h.seq)
	return h, resp.Header.Revision, err
}

// saw records that revision rev exists.
func (s *Store[V]) saw(rev int64) {
	for {
		old := s.seen.Load()
		if rev <= old || s.seen.CompareAndSwap(old, rev) {
			return
		}
	}
}

// now is the time of a read or write: the later of the clock and the last
// revision's time.
func (s *Store[V]) now(h headState) int64 {
	return max(unixNano(s.opts.clock()), h.time)
}

// unixNano is t in Unix nanoseconds, clamped to what int64 holds (before
// 1678: the lowest; after 2262: the highest), where time.Time's UnixNano is
// undefined. The zero time.Time is so "before everything".
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}
