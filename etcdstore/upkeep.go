package etcdstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/revkv/revkv"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Upkeep shrinks revkv's history, never etcd's: Compact, WithRetention and
// WithMaxHistory delete history keys under the prefix; etcd's own
// compaction only drops etcd's old versions of keys, which no revkv read
// uses. Deleting is done in steps (a page of keys at a time), each safe on
// its own: reads are decided by the floor key, written first, and by a
// trimmed key's marker, written with the deletion it describes.

// Compact makes every read below rev (below rev's time) answer
// revkv.ErrCompacted, for every key, and deletes the history those reads
// needed, keeping what open Views (of any store) still need. rev above the
// latest revision: revkv.ErrFutureRevision; at or below the last
// compaction: nothing to do.
func (s *Store[V]) Compact(ctx context.Context, rev revkv.Revision) error {
	if s.closed.Load() {
		return &revkv.OpError{Op: "compact", Rev: rev, Err: revkv.ErrClosed}
	}
	err := s.compact(ctx, int64(rev))
	if err == nil {
		_, err = s.sweepFloor(ctx)
	}
	if err != nil {
		return &revkv.OpError{Op: "compact", Rev: rev, Err: err}
	}
	return nil
}

// compact moves the floor to rev (reads below it are then ErrCompacted);
// sweep deletes what it no longer needs.
func (s *Store[V]) compact(ctx context.Context, rev int64) error {
	resp, err := s.kv.Txn(ctx).Then(clientv3.OpGet(s.l.head()), clientv3.OpGet(s.l.floor()), s.rowOf(rev)).Commit()
	if err != nil {
		return etcdErr(ctx, err)
	}
	h, err := headOf(resp.Responses[0].GetResponseRange().Kvs)
	if err != nil {
		return err
	}
	f, err := floorOf(resp.Responses[1].GetResponseRange().Kvs)
	switch {
	case err != nil:
		return err
	case rev > h.seq:
		return detail(revkv.ErrFutureRevision, "latest is %d", h.seq)
	case rev <= f.rev:
		return nil
	}
	at, err := timeIn(resp.Responses[2].GetResponseRange().Kvs, rev)
	if err != nil {
		return err
	}
	next := floorState{rev: rev, time: at, trim: f.trim}
	put, err := s.kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(s.l.floor()), "=", f.mod)).
		Then(clientv3.OpPut(s.l.floor(), string(next.encode()))).Commit()
	if err != nil {
		return etcdErr(ctx, err)
	}
	if !put.Succeeded { // another store moved the floor: start again from it
		return s.compact(ctx, rev)
	}
	return nil
}

// sweep deletes what no read at or above rev needs, except what a pinned
// View needs: for each key the entries older than the one visible at rev, a
// key whose entry at rev is a tombstone with nothing after it entirely (one at rev stays), and
// the revision and time rows below rev.
func (s *Store[V]) sweep(ctx context.Context, rev int64) (int, error) {
	pin, err := s.minPin(ctx)
	if err != nil {
		return 0, err
	}
	if pin > 0 && pin < rev {
		rev = pin
	}
	n := 0
	err = s.eachKeyPage(ctx, func(keys []string, latest []record, mods []int64) error {
		d, err := s.sweepPage(ctx, rev, keys, latest, mods)
		n += d
		return err
	})
	if err != nil {
		return n, err
	}
	resp, err := s.kv.Txn(ctx).Then(s.rowOf(rev)).Commit()
	if err != nil {
		return n, etcdErr(ctx, err)
	}
	at, err := timeIn(resp.Responses[0].GetResponseRange().Kvs, rev)
	if err != nil {
		return n, err
	}
	_, err = s.kv.Txn(ctx).Then(
		clientv3.OpDelete(s.l.revPrefix(), clientv3.WithRange(s.l.revRow(rev))),
		clientv3.OpDelete(s.l.timeRow(at, rev)+"\x00", clientv3.WithRange(s.l.timeEnd())),
	).Commit()
	return n, etcdErr(ctx, err)
}

// sweepPage is sweep for one page of keys: one read of each key's entry at
// rev, then one transaction of deletions. A key deleted whole is guarded by
// its latest entry being unchanged (a write to it in between keeps it).
func (s *Store[V]) sweepPage(ctx context.Context, rev int64, keys []string, latest []record, mods []int64) (int, error) {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = s.seek(k, rev)
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, etcdErr(ctx, err)
	}
	var dels []clientv3.Op
	var guards []clientv3.Cmp
	for i, k := range keys {
		r, ok, _ := found(resp.Responses[i].GetResponseRange().Kvs)
		if !ok {
			continue
		}
		from, end := s.l.histRange(k)
		if r.op != revkv.OpPut && latest[i].rev == r.rev && r.rev < rev { // a tombstone at rev stays, for a watch from rev
			dels = append(dels, clientv3.OpDelete(from, clientv3.WithRange(end)), clientv3.OpDelete(s.l.latest(k)))
			guards = append(guards, clientv3.Compare(clientv3.ModRevision(s.l.latest(k)), "=", mods[i]))
			continue
		}
		dels = append(dels, clientv3.OpDelete(s.l.histKey(k, r.rev)+"\x00", clientv3.WithRange(end)))
	}
	if len(dels) == 0 {
		return 0, nil
	}
	del, err := s.kv.Txn(ctx).If(guards...).Then(dels...).Commit()
	if err != nil || !del.Succeeded {
		return 0, etcdErr(ctx, err) // a failed guard leaves the page for the next sweep
	}
	n := 0
	for i, op := range dels {
		if strings.HasPrefix(string(op.KeyBytes()), s.l.root+"h/") {
			n += int(del.Responses[i].GetResponseDeleteRange().Deleted)
		}
	}
	return n, nil
}

// rowOf reads the row of the commit that wrote rev: the first row at or
// after it (rows are named by their commit's last revision).
func (s *Store[V]) rowOf(rev int64) clientv3.Op {
	return clientv3.OpGet(s.l.revRow(rev), clientv3.WithRange(prefixEnd(s.l.revPrefix())), clientv3.WithLimit(1))
}

// timeIn returns the time of rev from the answer of rowOf.
func timeIn(kvs []*mvccpb.KeyValue, rev int64) (int64, error) {
	if len(kvs) == 1 {
		es, err := decodeCommitRow(kvs[0].Value)
		if err != nil {
			return 0, err
		}
		for _, e := range es {
			if e.rev == rev {
				return e.time, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: no row for revision %d", errBadRecord, rev)
}

// eachKeyPage calls fn with every key of the store, a page at a time, with
// its latest entry and that entry's etcd ModRevision.
func (s *Store[V]) eachKeyPage(ctx context.Context, fn func(keys []string, latest []record, mods []int64) error) error {
	from, end := s.l.latestPrefix(), prefixEnd(s.l.latestPrefix())
	page := max(1, s.opts.maxTxnOps/3)
	for {
		resp, err := s.kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(page)))
		if err != nil {
			return etcdErr(ctx, err)
		}
		keys := make([]string, len(resp.Kvs))
		latest := make([]record, len(resp.Kvs))
		mods := make([]int64, len(resp.Kvs))
		for i, kv := range resp.Kvs {
			keys[i] = string(kv.Key[len(s.l.latestPrefix()):])
			if latest[i], err = decodeRecord(kv.Value); err != nil {
				return err
			}
			mods[i] = kv.ModRevision
		}
		if len(keys) > 0 {
			if err := fn(keys, latest, mods); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Trim applies WithRetention (a compaction at the last revision whose time
// is at or before now - d) and WithMaxHistory (every key cut to its newest
// n entries) in one pass, and returns the number of entries it dropped
// under the history cap. After Close it returns 0.
func (s *Store[V]) Trim(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, nil
	}
	if d := s.opts.retention; d > 0 {
		h, _, err := s.readHead(ctx)
		if err != nil {
			return 0, fmt.Errorf("revkv: trim: %w", err)
		}
		rev, err := s.revAsOf(ctx, time.Unix(0, s.now(h)-int64(d)))
		if err == nil && rev > 0 {
			err = s.compact(ctx, rev)
		}
		if err != nil && !isCompacted(err) {
			return 0, fmt.Errorf("revkv: trim: %w", err)
		}
	}
	// The last compaction, applied again: it may have kept entries for
	// Views that have closed since.
	n, err := s.sweepFloor(ctx)
	if err != nil {
		return n, fmt.Errorf("revkv: trim: %w", err)
	}
	if s.opts.maxHistory > 0 {
		err := s.eachKeyPage(ctx, func(keys []string, _ []record, _ []int64) error {
			over, err := s.keysOver(ctx, keys, s.opts.maxHistory)
			for _, k := range over {
				if err != nil {
					break
				}
				var d int
				d, err = s.capKey(ctx, k)
				n += d
			}
			return err
		})
		if err != nil {
			return n, fmt.Errorf("revkv: trim: %w", err)
		}
	}
	return n, nil
}

// sweepFloor sweeps at the floor, if there has been a compaction.
func (s *Store[V]) sweepFloor(ctx context.Context) (int, error) {
	resp, err := s.kv.Get(ctx, s.l.floor())
	if err != nil {
		return 0, etcdErr(ctx, err)
	}
	f, err := floorOf(resp.Kvs)
	if err != nil || f.rev == 0 {
		return 0, err
	}
	return s.sweep(ctx, f.rev)
}

// keysOver returns the keys (of one page) that may hold more than n history
// entries: one transaction of counts. A count of n+1 may include a trim
// marker; capKey looks again.
func (s *Store[V]) keysOver(ctx context.Context, keys []string, n int) ([]string, error) {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		from, end := s.l.histRange(k)
		ops[i] = clientv3.OpGet(from, clientv3.WithRange(end), clientv3.WithCountOnly())
	}
	resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, etcdErr(ctx, err)
	}
	var over []string
	for i, k := range keys {
		if resp.Responses[i].GetResponseRange().Count > int64(n) {
			over = append(over, k)
		}
	}
	return over, nil
}
