package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/revkv/revkv"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Reads are linearizable (etcd's default): a read that starts after a write
// returned sees it, from any store. "Now" for a read is the later of the
// store's clock and the last revision's time, read with it.

// latest reads the head and key's latest entry in one round trip.
func (s *Store[V]) latest(ctx context.Context, key string) (headState, keyState, error) {
	resp, err := s.kv.Txn(ctx).Then(clientv3.OpGet(s.l.head()), clientv3.OpGet(s.l.latest(key))).Commit()
	if err != nil {
		return headState{}, keyState{}, etcdErr(ctx, err)
	}
	h, err := headOf(resp.Responses[0].GetResponseRange().Kvs)
	if err != nil {
		return h, keyState{}, err
	}
	var st keyState
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		st.rec, err = decodeRecord(kvs[0].Value)
		st.ok = err == nil
	}
	return h, st, err
}

// Get returns key's live value. One round trip.
func (s *Store[V]) Get(ctx context.Context, key string) (V, bool, error) {
	e, ok, err := s.GetEntry(ctx, key)
	return e.Value, ok, err
}

// GetEntry returns key's live entry (its latest, unless that is a tombstone
// or has expired). One round trip: one range read of one key.
//
// It needs no head: "now" is the later of the clock and the head's time,
// but every commit writes the expiries due at its time before its own
// entries, so a latest entry that is still a put expires after the head's
// time, and comparing it with the clock alone gives the same answer.
func (s *Store[V]) GetEntry(ctx context.Context, key string) (revkv.Entry[V], bool, error) {
	resp, err := s.kv.Get(ctx, s.l.latest(key))
	if err != nil {
		return revkv.Entry[V]{}, false, keyErr("get", key, etcdErr(ctx, err))
	}
	if len(resp.Kvs) == 0 {
		return revkv.Entry[V]{}, false, nil
	}
	r, err := decodeRecord(resp.Kvs[0].Value)
	if err != nil {
		return revkv.Entry[V]{}, false, keyErr("get", key, err)
	}
	if !r.live(unixNano(s.opts.clock())) {
		return revkv.Entry[V]{}, false, nil
	}
	e, err := entry(s.codec, key, r)
	if err != nil {
		return revkv.Entry[V]{}, false, keyErr("get", key, err)
	}
	return e, true, nil
}

// TTL returns the time key has left: revkv.ErrNotFound for a missing or
// expired key, revkv.ErrNoTTL for one without a TTL.
func (s *Store[V]) TTL(ctx context.Context, key string) (time.Duration, error) {
	h, st, err := s.latest(ctx, key)
	if err != nil {
		return 0, keyErr("ttl", key, err)
	}
	now := s.now(h)
	switch {
	case !st.ok || !st.rec.live(now):
		return 0, keyErr("ttl", key, revkv.ErrNotFound)
	case !st.rec.hasTTL:
		return 0, keyErr("ttl", key, revkv.ErrNoTTL)
	}
	return time.Duration(st.rec.expires - now), nil
}

// Len returns the number of live keys. It reads every key's latest entry at
// one etcd revision, a page at a time; if etcd compacts that revision away
// in the middle, it starts again.
func (s *Store[V]) Len(ctx context.Context) (int, error) {
	for {
		n, err := s.count(ctx)
		if errors.Is(err, rpctypes.ErrCompacted) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("revkv: len: %w", etcdErr(ctx, err))
		}
		return n, nil
	}
}

const pageSize = 512

func (s *Store[V]) count(ctx context.Context) (int, error) {
	h, rev, err := s.readHead(ctx)
	if err != nil {
		return 0, err
	}
	now := s.now(h)
	n, from, end := 0, s.l.latestPrefix(), prefixEnd(s.l.latestPrefix())
	for {
		resp, err := s.kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(pageSize), clientv3.WithRev(rev))
		if err != nil {
			return 0, err
		}
		for _, kv := range resp.Kvs {
			r, err := decodeRecord(kv.Value)
			if err != nil {
				return 0, err
			}
			if r.live(now) {
				n++
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return n, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// History returns key's retained entries, oldest first, tombstones
// included; nil for a key never written or wholly compacted away. One round
// trip, whatever the number of entries (within etcd's response size limit).
func (s *Store[V]) History(ctx context.Context, key string) ([]revkv.Entry[V], error) {
	from, end := s.l.histRange(key)
	resp, err := s.kv.Get(ctx, from, clientv3.WithRange(end))
	if err != nil {
		return nil, keyErr("history", key, etcdErr(ctx, err))
	}
	var es []revkv.Entry[V]
	for _, kv := range slices.Backward(resp.Kvs) {
		r, err := decodeRecord(kv.Value)
		if err != nil {
			return nil, keyErr("history", key, err)
		}
		if r.op == opTrimmed {
			continue
		}
		e, err := entry(s.codec, key, r)
		if err != nil {
			return nil, keyErr("history", key, err)
		}
		es = append(es, e)
	}
	return es, nil
}

// seek is the read of key's entry visible at rev: the first history key at
// or after inv(rev), the newest entry at or below rev.
func (s *Store[V]) seek(key string, rev int64) clientv3.Op {
	_, end := s.l.histRange(key)
	return clientv3.OpGet(s.l.histKey(key, rev), clientv3.WithRange(end), clientv3.WithLimit(1))
}

// found decodes the answer of seek: the entry, whether there is one, and
// revkv.ErrCompacted if the entries that decide it were trimmed.
func found(kvs []*mvccpb.KeyValue) (record, bool, error) {
	if len(kvs) == 0 {
		return record{}, false, nil
	}
	r, err := decodeRecord(kvs[0].Value)
	if err != nil {
		return r, false, err
	}
	if r.op == opTrimmed {
		return r, false, detail(revkv.ErrCompacted, "the key's oldest remaining revision is %d", r.rev)
	}
	return r, true, nil
}

// GetAt returns key's value just after revision rev committed. rev <= 0 is
// "not found"; above the latest revision, revkv.ErrFutureRevision; below
// the floor or the key's trimmed entries, revkv.ErrCompacted. One round
// trip.
func (s *Store[V]) GetAt(ctx context.Context, key string, rev revkv.Revision) (V, bool, error) {
	var zero V
	if rev <= 0 {
		return zero, false, nil
	}
	// The head is read only for a revision above every one this store has
	// seen: revisions never go back, so below that it cannot be future.
	ops := []clientv3.Op{clientv3.OpGet(s.l.floor()), s.seek(key, int64(rev))}
	known := int64(rev) <= s.seen.Load()
	if !known {
		ops = append(ops, clientv3.OpGet(s.l.head()))
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return zero, false, revErr("get at", key, int64(rev), etcdErr(ctx, err))
	}
	r, ok, err := s.decideAt(resp.Responses, int64(rev), known)
	if err != nil || !ok || r.op != revkv.OpPut {
		return zero, false, keyErrOrNilRev("get at", key, int64(rev), err)
	}
	e, err := entry(s.codec, key, r)
	if err != nil {
		return zero, false, revErr("get at", key, int64(rev), err)
	}
	return e.Value, true, nil
}

func keyErrOrNilRev(op, key string, rev int64, err error) error {
	if err == nil {
		return nil
	}
	return revErr(op, key, rev, err)
}

// decideAt answers a read at rev from the floor, a seek, and the head
// unless rev is known not to be in the future.
func (s *Store[V]) decideAt(rs []*etcdserverpb.ResponseOp, rev int64, known bool) (record, bool, error) {
	if !known {
		h, err := headOf(rs[2].GetResponseRange().Kvs)
		if err != nil {
			return record{}, false, err
		}
		if s.saw(h.seq); rev > h.seq {
			return record{}, false, detail(revkv.ErrFutureRevision, "latest is %d", h.seq)
		}
	}
	f, err := floorOf(rs[0].GetResponseRange().Kvs)
	if err != nil {
		return record{}, false, err
	}
	if rev < f.rev {
		return record{}, false, detail(revkv.ErrCompacted, "compacted at %d", f.rev)
	}
	return found(rs[1].GetResponseRange().Kvs)
}

// GetAsOf returns the value of key's last entry with Time <= t, unless that
// entry had expired by t. t after now is revkv.ErrFutureRevision; before
// revision 1, "not found". Two round trips: the time index gives the
// revision, then the key's history its entry.
func (s *Store[V]) GetAsOf(ctx context.Context, key string, t time.Time) (V, bool, error) {
	var zero V
	rev, err := s.revAsOf(ctx, t)
	if err != nil || rev == 0 {
		return zero, false, keyErrOrNil("get as of", key, err)
	}
	resp, err := s.kv.Get(ctx, s.l.histKey(key, rev), clientv3.WithRange(s.histEnd(key)), clientv3.WithLimit(1))
	if err != nil {
		return zero, false, keyErr("get as of", key, etcdErr(ctx, err))
	}
	r, ok, err := found(resp.Kvs)
	if err != nil || !ok || !r.live(unixNano(t)) {
		return zero, false, keyErrOrNil("get as of", key, err)
	}
	e, err := entry(s.codec, key, r)
	if err != nil {
		return zero, false, keyErr("get as of", key, err)
	}
	return e.Value, true, nil
}

func (s *Store[V]) histEnd(key string) string {
	_, end := s.l.histRange(key)
	return end
}

// revAsOf returns the last revision whose time is <= t: 0 before revision
// 1, revkv.ErrFutureRevision after now, revkv.ErrCompacted below the floor.
// One round trip.
func (s *Store[V]) revAsOf(ctx context.Context, t time.Time) (int64, error) {
	resp, err := s.kv.Txn(ctx).Then(
		clientv3.OpGet(s.l.head()), clientv3.OpGet(s.l.floor()),
		clientv3.OpGet(s.l.timeSeek(unixNano(t)), clientv3.WithRange(s.l.timeEnd()), clientv3.WithLimit(1), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return 0, etcdErr(ctx, err)
	}
	h, err := headOf(resp.Responses[0].GetResponseRange().Kvs)
	if err != nil {
		return 0, err
	}
	f, err := floorOf(resp.Responses[1].GetResponseRange().Kvs)
	if err != nil {
		return 0, err
	}
	ns := unixNano(t)
	switch now := s.now(h); {
	case ns > now:
		return 0, detail(revkv.ErrFutureRevision, "now is %v", time.Unix(0, now))
	case h.seq == 0 || ns < h.first:
		return 0, nil
	case ns < f.time:
		return 0, detail(revkv.ErrCompacted, "compacted at %d, of %v", f.rev, time.Unix(0, f.time))
	}
	kvs := resp.Responses[2].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, detail(revkv.ErrCompacted, "compacted at %d", f.rev)
	}
	k := string(kvs[0].Key)
	rev, ok := parseInv(k[len(k)-16:])
	if !ok {
		return 0, errBadRecord
	}
	return rev, nil
}
