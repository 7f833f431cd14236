package etcdstore

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"

	"github.com/revkv/revkv"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watch yields, in revision order, every entry with Rev >= from of every key
// with prefix: puts, deletes and expiries. from <= 0 means "what comes
// next". It replays revkv's history (the revision rows root+"r/", a page at
// a time) up to the present, then follows etcd's watch on the history keys
// of the prefix. If etcd has compacted its own history past where the watch
// must resume, it replays from revkv's history again instead of failing.
//
// An entry no longer in revkv's history (compacted or trimmed) is yielded
// as revkv.ErrCompacted naming Floor, the revision to restart from, and the
// watch ends. It also ends with ctx.Err() when ctx is done and with
// revkv.ErrClosed when the store closes. Nothing of it outlives the loop.
func (s *Store[V]) Watch(ctx context.Context, prefix string, from revkv.Revision) iter.Seq2[revkv.Entry[V], error] {
	return func(yield func(revkv.Entry[V], error) bool) {
		fail := func(err error) {
			yield(revkv.Entry[V]{}, &revkv.OpError{Op: "watch", Key: prefix, Rev: from, Err: err})
		}
		next := int64(from)
		if next <= 0 {
			h, _, err := s.readHead(ctx)
			if err != nil {
				fail(err)
				return
			}
			next = h.seq + 1
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for broken := 0; ; {
			etcdRev, ok, err := s.replay(wctx, prefix, &next, yield)
			if ok && err == nil && s.opts.afterReplay != nil {
				s.opts.afterReplay()
			}
			before := next
			if ok && err == nil {
				if ok, err = s.follow(wctx, prefix, etcdRev, &next, yield); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
					err = s.watchErr(ctx, err)
					if broken = broken + 1; next > before {
						broken = 0
					}
				}
				if ok && err != nil && broken <= 3 && !isFinal(err) {
					continue // the stream broke (an election, say): replay and follow again
				}
			}
			if !ok {
				return
			}
			if errors.Is(err, rpctypes.ErrCompacted) {
				continue // etcd compacted past where it must resume: replay again
			}
			if err != nil {
				fail(s.watchErr(ctx, err))
				return
			}
		}
	}
}

// isFinal reports whether a watch ends with err rather than trying again.
func isFinal(err error) bool {
	return errors.Is(err, revkv.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (s *Store[V]) watchErr(ctx context.Context, err error) error {
	switch {
	case s.closed.Load():
		return revkv.ErrClosed
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}

// replay yields the entries of revisions next, next+1, ... that are in
// history now, and returns the etcd revision it read them at. ok is false
// when the loop ended the watch (yield said stop, or an error was yielded).
func (s *Store[V]) replay(ctx context.Context, prefix string, next *int64, yield func(revkv.Entry[V], error) bool) (int64, bool, error) {
	for {
		ops := []clientv3.Op{
			clientv3.OpGet(s.l.floor()),
			clientv3.OpGet(s.l.revRow(*next), clientv3.WithRange(prefixEnd(s.l.revPrefix())), clientv3.WithLimit(pageSize)),
		}
		resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return 0, true, etcdErr(ctx, err)
		}
		etcdRev := resp.Header.Revision
		f, err := floorOf(resp.Responses[0].GetResponseRange().Kvs)
		if err != nil {
			return 0, true, err
		}
		if *next < f.rev {
			return 0, true, detail(revkv.ErrCompacted, "restart from %d", max(f.rev, f.trim))
		}
		rows := resp.Responses[1].GetResponseRange()
		es, err := s.replayRows(ctx, prefix, *next, rows.Kvs, f)
		if err != nil {
			return 0, true, err
		}
		for _, e := range es {
			if !yield(e, nil) {
				return 0, false, nil
			}
		}
		if len(rows.Kvs) > 0 {
			k := string(rows.Kvs[len(rows.Kvs)-1].Key)
			last, _ := parseOrdHexRev(k[len(k)-16:])
			*next = last + 1
		}
		if !rows.More {
			return etcdRev, true, nil
		}
	}
}

// replayRows reads the entries, from revision next on, of the commit rows
// whose key has prefix.
func (s *Store[V]) replayRows(ctx context.Context, prefix string, next int64, rows []*mvccpb.KeyValue, f floorState) ([]revkv.Entry[V], error) {
	var ws []rowEntry
	var ops []clientv3.Op
	for _, kv := range rows {
		es, err := decodeCommitRow(kv.Value)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.rev >= next && strings.HasPrefix(e.key, prefix) {
				ws = append(ws, e)
				ops = append(ops, clientv3.OpGet(s.l.histKey(e.key, e.rev)))
			}
		}
	}
	var es []revkv.Entry[V]
	for len(ops) > 0 {
		n := min(len(ops), s.opts.maxTxnOps)
		resp, err := s.kv.Txn(ctx).Then(ops[:n]...).Commit()
		if err != nil {
			return nil, etcdErr(ctx, err)
		}
		for i, r := range resp.Responses {
			kvs := r.GetResponseRange().Kvs
			if len(kvs) == 0 {
				return nil, detail(revkv.ErrCompacted, "revision %d of %q was trimmed; restart from %d", ws[i].rev, ws[i].key, max(f.rev, f.trim, ws[i].rev+1))
			}
			e, err := s.decodeEntry(ws[i].key, kvs[0].Value)
			if err != nil {
				return nil, err
			}
			es = append(es, e)
		}
		ops, ws = ops[n:], ws[n:]
	}
	return es, nil
}

func (s *Store[V]) decodeEntry(key string, b []byte) (revkv.Entry[V], error) {
	r, err := decodeRecord(b)
	if err != nil {
		return revkv.Entry[V]{}, err
	}
	return entry(s.codec, key, r)
}

// follow yields the entries etcd's watch reports after etcdRev, in order,
// from *next on. It returns rpctypes.ErrCompacted when etcd has compacted
// past etcdRev (the caller replays), and ok false when the watch ended.
func (s *Store[V]) follow(ctx context.Context, prefix string, etcdRev int64, next *int64, yield func(revkv.Entry[V], error) bool) (bool, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	ch := s.cli.Watch(wctx, s.l.histPrefix(prefix), clientv3.WithPrefix(), clientv3.WithRev(etcdRev+1))
	for {
		var resp clientv3.WatchResponse
		var open bool
		select {
		case <-s.stop:
			return true, revkv.ErrClosed
		case resp, open = <-ch:
		}
		if !open {
			if ctx.Err() != nil {
				return true, ctx.Err()
			}
			return true, rpctypes.ErrCompacted // the watch broke: replay and follow again
		}
		if resp.CompactRevision != 0 {
			return true, rpctypes.ErrCompacted
		}
		if err := resp.Err(); err != nil {
			return true, etcdErr(ctx, err)
		}
		es, err := s.watchEntries(resp.Events)
		if err != nil {
			return true, err
		}
		for _, e := range es {
			if int64(e.Rev) < *next {
				continue
			}
			if !yield(e, nil) {
				return false, nil
			}
			*next = int64(e.Rev) + 1
		}
	}
}

// watchEntries decodes the put events of history keys, in revision order.
func (s *Store[V]) watchEntries(evs []*clientv3.Event) ([]revkv.Entry[V], error) {
	var es []revkv.Entry[V]
	base := len(s.l.root) + len("h/")
	for _, ev := range evs {
		if ev.Type != mvccpb.PUT {
			continue // a trim or a compaction deleting history
		}
		k := string(ev.Kv.Key)
		if len(k) < base+18 || strings.HasSuffix(k, inv(0)) {
			continue // a trim marker
		}
		key := strings.ReplaceAll(k[base:len(k)-18], "\x00\xff", "\x00")
		e, err := s.decodeEntry(key, ev.Kv.Value)
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b revkv.Entry[V]) int { return int(a.Rev - b.Rev) })
	return es, nil
}
