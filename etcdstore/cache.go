package etcdstore

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The snapshot cache: after each commit (and each snapshot read) a store
// knows the state its next write starts from, unless another store writes
// first: the head it wrote, and the first pending expiries. A write that
// needs no key's state (Put, PutTTL, PutExpiresAt) starts from it and sends
// its commit at once: one round trip. If another store did write first, the
// head guard fails and the commit's else branch returns the fresh snapshot,
// so a stale cache costs one round trip, never a wrong write.

// snapshotFor returns the snapshot a write starts from: the cache if the
// write reads no key and need not be fresh, else a fresh read.
func (s *Store[V]) snapshotFor(ctx context.Context, keys []string, fresh bool) (*snapshot, error) {
	if len(keys) == 0 && !fresh {
		s.cacheMu.Lock()
		c := s.cache
		s.cacheMu.Unlock()
		if c != nil {
			return c.clone(), nil
		}
	}
	return s.readSnapshot(ctx, keys)
}

// setCache keeps snap (without its keys) as the start of the next write.
func (s *Store[V]) setCache(snap *snapshot) {
	c := snap.clone()
	s.cacheMu.Lock()
	if s.cache == nil || s.cache.head.mod <= c.head.mod {
		s.cache = c
	}
	s.cacheMu.Unlock()
}

// clone returns snap's head and expiries, with no keys' entries.
func (snap *snapshot) clone() *snapshot {
	return &snapshot{head: snap.head, due: slices.Clone(snap.due), more: snap.more,
		latest: map[string]record{}, known: map[string]bool{}, etcdRev: snap.etcdRev}
}

// loadDue reads the latest entries of the keys of due expiries the snapshot
// does not hold yet, at the snapshot's etcd revision, so that expire can
// tell a due expiry from a stale index entry. It returns
// rpctypes.ErrCompacted if etcd has compacted that revision (read a new
// snapshot).
func (s *Store[V]) loadDue(ctx context.Context, snap *snapshot, due []pendingExpiry) error {
	var keys []string
	var ops []clientv3.Op
	for _, x := range due {
		if !snap.known[x.key] && !slices.Contains(keys, x.key) {
			keys = append(keys, x.key)
			ops = append(ops, clientv3.OpGet(s.l.latest(x.key), clientv3.WithRev(snap.etcdRev)))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return rpctypes.ErrCompacted
		}
		return etcdErr(ctx, err)
	}
	for i, k := range keys {
		snap.known[k] = true
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) == 1 {
			r, err := decodeRecord(kvs[0].Value)
			if err != nil {
				return err
			}
			snap.latest[k] = r
		}
	}
	return nil
}

// nextSnapshot is the snapshot after t committed at etcd revision etcdRev:
// its head, and the expiry index entries t's snapshot knew, less those t
// deleted, plus those it added that fall within what the snapshot knew.
func (t *Txn[V]) nextSnapshot(head headState, etcdRev int64) *snapshot {
	head.mod = etcdRev
	old := t.snap
	// What the commit did to an index entry is its last operation on it.
	op := func(x pendingExpiry) (clientv3.Op, bool) {
		o, ok := t.ops[t.s.l.expiry(x.at, x.key)]
		return o, ok
	}
	var w []pendingExpiry
	for _, x := range old.due {
		if o, ok := op(x); !ok || o.IsPut() {
			w = append(w, x)
		}
	}
	for _, x := range t.xAdded {
		o, _ := op(x)
		if o.IsPut() && (!old.more || len(old.due) == 0 || comparePending(x, old.due[len(old.due)-1]) <= 0) {
			w = append(w, x)
		}
	}
	slices.SortFunc(w, comparePending)
	w = slices.Compact(w)
	more := old.more
	if n := t.s.expiryBatch() + 1; len(w) > n {
		w, more = w[:n], true
	}
	return &snapshot{head: head, due: w, more: more, etcdRev: etcdRev}
}

func comparePending(a, b pendingExpiry) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.key, b.key))
}
