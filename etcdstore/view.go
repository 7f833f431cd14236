package etcdstore

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/revkv/revkv"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// View is a consistent, read-only state of every key at one revision. Its
// reads go to etcd (each takes ctx) and read revkv's history keys, never
// etcd's old revisions, so etcd's compaction does not touch them. A View
// pins its revision: a pin key on the store's lease, which Compact, Trim
// and the history cap of every store respect, until Close (or until the
// pinning process dies and its lease runs out).
type View[V any] struct {
	s      *Store[V]
	rev    int64
	hide   int64 // if hiding, values with ExpiresAt <= hide are hidden: AsOf's t, a store Scan's now
	hiding bool
	pin    string
	closed atomic.Bool
}

// leaseTTL is the lifetime of a store's pins after its process dies.
const leaseTTL = 30 * time.Second

// At opens a View at revision rev: below Floor, revkv.ErrCompacted; above
// the latest revision, revkv.ErrFutureRevision; rev <= 0, an empty View.
func (s *Store[V]) At(ctx context.Context, rev revkv.Revision) (*View[V], error) {
	v, err := s.openView(ctx, int64(rev), 0, false)
	if err != nil {
		return nil, &revkv.OpError{Op: "at", Rev: rev, Err: err}
	}
	return v, nil
}

// AsOf opens a View at the last revision whose time is <= t, hiding every
// value whose ExpiresAt <= t. t after now: revkv.ErrFutureRevision.
func (s *Store[V]) AsOf(ctx context.Context, t time.Time) (*View[V], error) {
	rev, err := s.revAsOf(ctx, t)
	if err == nil {
		var v *View[V]
		if v, err = s.openView(ctx, rev, unixNano(t), true); err == nil {
			return v, nil
		}
	}
	return nil, &revkv.OpError{Op: "as of", Err: err}
}

// openView pins rev and checks, in the same request, that it is still at or
// above the floor and not above the head. One round trip (two the first
// time: the lease).
func (s *Store[V]) openView(ctx context.Context, rev, hide int64, hiding bool) (*View[V], error) {
	v := &View[V]{s: s, rev: rev, hide: hide, hiding: hiding}
	if rev <= 0 {
		v.rev = 0
		return v, nil
	}
	lease, err := s.ensureLease(ctx)
	if err != nil {
		return nil, err
	}
	ops := []clientv3.Op{clientv3.OpGet(s.l.head()), clientv3.OpGet(s.l.floor())}
	if lease != 0 { // 0: the store is closed, and its Views pin nothing
		v.pin = s.l.pin(s.id + "." + strconv.FormatInt(s.pinNext.Add(1), 10))
		ops = append(ops, clientv3.OpPut(v.pin, strconv.FormatInt(rev, 10), clientv3.WithLease(lease)))
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, etcdErr(ctx, err)
	}
	h, err := headOf(resp.Responses[0].GetResponseRange().Kvs)
	if err == nil {
		var f floorState
		if f, err = floorOf(resp.Responses[1].GetResponseRange().Kvs); err == nil {
			switch {
			case rev > h.seq:
				err = detail(revkv.ErrFutureRevision, "latest is %d", h.seq)
			case rev < max(f.rev, f.trim):
				err = detail(revkv.ErrCompacted, "floor is %d", max(f.rev, f.trim))
			}
		}
	}
	if err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// ensureLease returns the store's lease for pins, granting it (and keeping
// it alive until Close) the first time; 0 once the store is closed.
func (s *Store[V]) ensureLease(ctx context.Context) (clientv3.LeaseID, error) {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if s.closed.Load() {
		return 0, nil
	}
	if s.lease != 0 {
		return s.lease, nil
	}
	g, err := s.cli.Grant(ctx, int64(leaseTTL/time.Second))
	if err != nil {
		return 0, etcdErr(ctx, err)
	}
	keep, cancel := context.WithCancel(s.life)
	ch, err := s.cli.KeepAlive(keep, g.ID)
	if err != nil {
		cancel()
		return 0, etcdErr(ctx, err)
	}
	drain := func() { // drains the keep-alive answers until Close
		defer cancel()
		for {
			select {
			case <-s.stop:
				return
			case _, ok := <-ch:
				if !ok {
					return
				}
			}
		}
	}
	if !s.spawn(drain) { // closed meanwhile
		cancel()
		_, _ = s.cli.Revoke(ctx, g.ID)
		return 0, nil
	}
	s.lease = g.ID
	return g.ID, nil
}

// minPin returns the lowest revision an open View of any store pins, or 0.
func (s *Store[V]) minPin(ctx context.Context) (int64, error) {
	resp, err := s.kv.Get(ctx, s.l.pinPrefix(), clientv3.WithPrefix())
	if err != nil {
		return 0, etcdErr(ctx, err)
	}
	var low int64
	for _, kv := range resp.Kvs {
		if r, err := strconv.ParseInt(string(kv.Value), 10, 64); err == nil && (low == 0 || r < low) {
			low = r
		}
	}
	return low, nil
}

// Rev returns the View's revision.
func (v *View[V]) Rev() revkv.Revision { return revkv.Revision(v.rev) }

// Close releases the View's pin. Its reads then return nothing.
func (v *View[V]) Close() {
	if v.closed.Swap(true) || v.pin == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = v.s.kv.Delete(ctx, v.pin) // lost, it goes with the lease
}

// Get returns key's value in the View. One round trip.
func (v *View[V]) Get(ctx context.Context, key string) (V, bool, error) {
	e, ok, err := v.Entry(ctx, key)
	return e.Value, ok, err
}

// Entry returns key's live entry in the View. One round trip.
func (v *View[V]) Entry(ctx context.Context, key string) (revkv.Entry[V], bool, error) {
	if v.closed.Load() || v.rev == 0 {
		return revkv.Entry[V]{}, false, nil
	}
	resp, err := v.s.kv.Get(ctx, v.s.l.histKey(key, v.rev), clientv3.WithRange(v.s.histEnd(key)), clientv3.WithLimit(1))
	if err != nil {
		return revkv.Entry[V]{}, false, revErr("view get", key, v.rev, etcdErr(ctx, err))
	}
	r, ok, err := found(resp.Kvs)
	if err != nil || !ok || !v.visible(r) {
		return revkv.Entry[V]{}, false, keyErrOrNilRev("view get", key, v.rev, err)
	}
	e, err := entry(v.s.codec, key, r)
	if err != nil {
		return revkv.Entry[V]{}, false, revErr("view get", key, v.rev, err)
	}
	return e, true, nil
}

func (v *View[V]) visible(r record) bool {
	return r.op == revkv.OpPut && (!v.hiding || !r.hasTTL || r.expires > v.hide)
}
