package etcdstore

import (
	"context"
	"errors"
	"time"

	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Expiry is lazy, as in the root package: from its ExpiresAt on a key is
// invisible to every read of the latest state, with nothing running. The
// OpExpire entry (Time == ExpiresAt exactly) is written by the first write,
// PurgeExpired or expirer tick after that instant, from whichever store
// gets there first: the expiry index root+"x/" orders pending expiries by
// (time, key), so one range read finds the due ones, and the commit that
// writes them is guarded by the head like every write, so two stores never
// write one expiry twice.

// PurgeExpired writes every expiry due by now and returns how many it
// wrote. After Close it returns 0.
func (s *Store[V]) PurgeExpired(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, nil
	}
	n := 0
	for {
		snap, err := s.readSnapshot(ctx, nil)
		if err != nil {
			return n, fmt.Errorf("revkv: purge expired: %w", err)
		}
		wrote, done, err := s.purgeFrom(ctx, snap)
		n += wrote
		if err != nil {
			return n, fmt.Errorf("revkv: purge expired: %w", err)
		}
		if done {
			return n, nil
		}
	}
}

// purgeFrom writes the first batch of expiries due on snap's state (and
// deletes the stale index entries among them), trying again on the new
// state while the head guard fails. It returns how many expiries it wrote,
// and done when none was due.
func (s *Store[V]) purgeFrom(ctx context.Context, snap *snapshot) (int, bool, error) {
	for {
		now := s.now(snap.head)
		due, _ := snap.dueAt(now, s.expiryBatch())
		if len(due) == 0 {
			return 0, true, nil
		}
		if err := s.loadDue(ctx, snap, due); err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				err = nil // etcd compacted the snapshot's revision: the caller reads a new one
			}
			return 0, false, err
		}
		t := newTxn(s, snap, now, nil)
		t.expire(due)
		ok, next, err := s.commitTxn(ctx, t)
		if err != nil || ok {
			return t.expired, false, err
		}
		snap = next
	}
}

// every calls f every interval until Close, each time with a context that
// ends after a few intervals (tickContext). f's error is retried at the
// next tick: the expirer's and the trimmer's.
func (s *Store[V]) every(interval time.Duration, f func(ctx context.Context) (int, error)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			ctx, cancel := s.tickContext(interval)
			_, _ = f(ctx)
			cancel()
		}
	}
}

// tickContext is the context of one tick of a goroutine: done at Close, or
// after a few intervals (a tick must not hang on a lost cluster).
func (s *Store[V]) tickContext(interval time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.life, max(5*time.Second, 4*interval))
}

// start starts the goroutines the options ask for.
func (s *Store[V]) start() {
	if d := s.opts.expiryInterval; d > 0 {
		s.spawn(func() { s.every(d, s.PurgeExpired) }) // the expirer
	}
	if d := s.opts.trimInterval; d > 0 {
		s.spawn(func() { s.every(d, s.Trim) }) // the trimmer
	}
}
