package etcdstore

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A write is optimistic, like etcd's STM: it reads a snapshot (the head,
// the first expiry index entries, the latest entries of the keys it names), runs
// the caller's function against it, and commits everything in one etcd
// transaction guarded by "the head's ModRevision is still what the snapshot
// saw". Every write of every store rewrites the head, so the guard holding
// means nothing revkv wrote changed in between: the write is serializable
// against all stores, its revisions follow the head's without a gap, and
// its time is at least the head's. When the guard fails, the same request
// returns the new snapshot (its Else branch), and the write runs again.

// snapshot is what a write starts from.
type snapshot struct {
	head    headState
	due     []pendingExpiry   // the first expiry index entries, by (time, key); some may be stale
	more    bool              // there are index entries after due
	latest  map[string]record // latest entries read (keys and due expiries' keys)
	known   map[string]bool   // the keys whose latest entry was read (absent from latest: none)
	etcdRev int64             // the etcd revision the snapshot was read at
}

type pendingExpiry struct {
	at  int64
	key string
}

// snapshotOps are the reads of a snapshot: the head, the first expiries
// (one more than a commit may carry, to know whether there are more) and
// the latest entry of each key.
func (s *Store[V]) snapshotOps(keys []string) []clientv3.Op {
	ops := []clientv3.Op{
		clientv3.OpGet(s.l.head()),
		clientv3.OpGet(s.l.expiryPrefix(), clientv3.WithRange(prefixEnd(s.l.expiryPrefix())),
			clientv3.WithLimit(int64(s.expiryBatch()+1)), clientv3.WithKeysOnly()),
	}
	for _, k := range keys {
		ops = append(ops, clientv3.OpGet(s.l.latest(k)))
	}
	return ops
}

// expiryBatch is how many expiries one commit carries: about four
// operations each (entry, latest, index deletion, time row), in at most half
// the transaction, leaving the rest to the writes that carry them.
func (s *Store[V]) expiryBatch() int { return max(1, (s.opts.maxTxnOps-16)/5/2) }

func (s *Store[V]) readSnapshot(ctx context.Context, keys []string) (*snapshot, error) {
	resp, err := s.kv.Txn(ctx).Then(s.snapshotOps(keys)...).Commit()
	if err != nil {
		return nil, etcdErr(ctx, err)
	}
	return s.parseSnapshot(resp, keys)
}

func (s *Store[V]) parseSnapshot(resp *clientv3.TxnResponse, keys []string) (*snapshot, error) {
	rs := resp.Responses
	if len(rs) != 2+len(keys) {
		return nil, fmt.Errorf("etcd: snapshot of %d responses, want %d", len(rs), 2+len(keys))
	}
	snap := &snapshot{latest: make(map[string]record, len(keys)), known: make(map[string]bool, len(keys)), etcdRev: resp.Header.Revision}
	var err error
	if snap.head, err = headOf(rs[0].GetResponseRange().Kvs); err != nil {
		return nil, err
	}
	s.saw(snap.head.seq)
	x := rs[1].GetResponseRange()
	for _, kv := range x.Kvs {
		at, key, ok := s.l.expiryKey(string(kv.Key))
		if !ok {
			return nil, fmt.Errorf("%w: expiry key %q", errBadRecord, kv.Key)
		}
		snap.due = append(snap.due, pendingExpiry{at, key})
	}
	snap.more = x.More
	defer s.setCache(snap)
	for i, k := range keys {
		snap.known[k] = true
		if kvs := rs[2+i].GetResponseRange().Kvs; len(kvs) == 1 {
			r, err := decodeRecord(kvs[0].Value)
			if err != nil {
				return nil, err
			}
			snap.latest[k] = r
		}
	}
	return snap, nil
}

// dueAt returns the expiries due at now, and whether there may be more due
// than those (then the commit carries only expiries, and the write runs
// again on the snapshot after it).
func (snap *snapshot) dueAt(now int64, batch int) ([]pendingExpiry, bool) {
	n := 0
	for n < len(snap.due) && snap.due[n].at <= now {
		n++
	}
	if n > batch || (n == len(snap.due) && n > 0 && snap.more) {
		return snap.due[:min(n, batch)], true
	}
	return snap.due[:n], false
}

// commit sends t's writes guarded by the head. It returns whether they
// committed and, if not, the snapshot the guard failed against.
func (s *Store[V]) commit(ctx context.Context, t *Txn[V]) (bool, *snapshot, error) {
	t.indexRows()
	if len(t.ops)+1 > s.opts.maxTxnOps {
		return false, nil, fmt.Errorf("%w: %d operations, etcd's limit is %d", ErrTooManyWrites, len(t.ops)+1, s.opts.maxTxnOps)
	}
	if t.size > s.opts.maxRequestBytes {
		return false, nil, fmt.Errorf("%w: %d bytes, etcd's limit is %d", ErrValueTooLarge, t.size, s.opts.maxRequestBytes)
	}
	ops := make([]clientv3.Op, 0, len(t.ops)+1)
	for _, op := range t.ops {
		ops = append(ops, op)
	}
	head := headState{seq: t.seq, time: t.lastTime, first: t.snap.head.first}
	if head.first == 0 && t.snap.head.seq == 0 {
		head.first = t.firstTime
	}
	ops = append(ops, clientv3.OpPut(s.l.head(), string(head.encode())))
	resp, err := s.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(s.l.head()), "=", t.snap.head.mod)).
		Then(ops...).
		Else(s.snapshotOps(t.prefetch)...).
		Commit()
	if err != nil {
		return false, nil, etcdErr(ctx, err)
	}
	if resp.Succeeded {
		s.saw(t.seq)
		s.setCache(t.nextSnapshot(head, resp.Header.Revision))
		return true, nil, nil
	}
	snap, err := s.parseSnapshot(resp, t.prefetch)
	return false, snap, err
}

// indexRows adds the commit's row (every entry's revision, time and key,
// under the last revision: what Watch replays) and its time index rows
// (the last revision of each distinct time: what AsOf seeks).
func (t *Txn[V]) indexRows() {
	if len(t.rows) == 0 {
		return
	}
	t.put(t.s.l.revRow(t.seq), encodeCommitRow(t.rows))
	for i, r := range t.rows {
		if i+1 == len(t.rows) || t.rows[i+1].time != r.time {
			t.put(t.s.l.timeRow(r.time, r.rev), nil)
		}
	}
}

func headOf(kvs []*mvccpb.KeyValue) (headState, error) {
	if len(kvs) == 0 {
		return headState{}, nil
	}
	return decodeHead(kvs[0].Value, kvs[0].ModRevision)
}

func floorOf(kvs []*mvccpb.KeyValue) (floorState, error) {
	if len(kvs) == 0 {
		return floorState{}, nil
	}
	return decodeFloor(kvs[0].Value, kvs[0].ModRevision)
}
