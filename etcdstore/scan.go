package etcdstore

import (
	"context"
	"iter"

	"github.com/revkv/revkv"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Scan yields the live entries of keys with prefix, in byte-wise key order,
// as of the revision current when the iteration began (a pinned View of
// it, hiding what has expired by then). The loop body may write to the
// store: that never changes what the loop yields. A failed read is yielded
// as an error and ends the iteration.
func (s *Store[V]) Scan(ctx context.Context, prefix string) iter.Seq2[revkv.Entry[V], error] {
	return func(yield func(revkv.Entry[V], error) bool) {
		var v *View[V]
		var err error
		for range 3 { // a compaction at the very head, between the two reads: again
			var h headState
			if h, _, err = s.readHead(ctx); err == nil {
				v, err = s.openView(ctx, h.seq, s.now(h), true)
			}
			if !isCompacted(err) {
				break
			}
		}
		if err != nil {
			yield(revkv.Entry[V]{}, &revkv.OpError{Op: "scan", Key: prefix, Err: err})
			return
		}
		defer v.Close()
		for e, err := range v.Scan(ctx, prefix) {
			if !yield(e, err) {
				return
			}
		}
	}
}

// Scan yields the View's live entries of keys with prefix, in byte-wise key
// order. It reads the key names a page at a time, then each page's entries
// at the View's revision in one transaction: about two round trips per
// page of keys.
func (v *View[V]) Scan(ctx context.Context, prefix string) iter.Seq2[revkv.Entry[V], error] {
	return func(yield func(revkv.Entry[V], error) bool) {
		if v.closed.Load() || v.rev == 0 {
			return
		}
		fail := func(err error) {
			yield(revkv.Entry[V]{}, &revkv.OpError{Op: "view scan", Key: prefix, Rev: revkv.Revision(v.rev), Err: err})
		}
		s := v.s
		from := s.l.latest(prefix)
		end := prefixEnd(from)
		page := max(1, s.opts.maxTxnOps-1)
		for {
			keys, more, err := s.keyPage(ctx, from, end, page)
			if err != nil {
				fail(err)
				return
			}
			es, err := v.entries(ctx, keys)
			if err != nil {
				fail(err)
				return
			}
			for _, e := range es {
				if !yield(e, nil) {
					return
				}
			}
			if !more {
				return
			}
			from = s.l.latest(keys[len(keys)-1]) + "\x00"
		}
	}
}

// keyPage reads up to n key names from the store's latest entries.
func (s *Store[V]) keyPage(ctx context.Context, from, end string, n int) ([]string, bool, error) {
	resp, err := s.kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(n)), clientv3.WithKeysOnly())
	if err != nil {
		return nil, false, etcdErr(ctx, err)
	}
	keys := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		keys[i] = string(kv.Key[len(s.l.latestPrefix()):])
	}
	return keys, resp.More && len(keys) > 0, nil
}

// entries reads the live entries of keys at the View's revision in one
// transaction.
func (v *View[V]) entries(ctx context.Context, keys []string) ([]revkv.Entry[V], error) {
	if len(keys) == 0 {
		return nil, nil
	}
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = v.s.seek(k, v.rev)
	}
	resp, err := v.s.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, etcdErr(ctx, err)
	}
	var es []revkv.Entry[V]
	for i, k := range keys {
		r, ok, err := found(resp.Responses[i].GetResponseRange().Kvs)
		if err != nil {
			return nil, err
		}
		if !ok || !v.visible(r) {
			continue
		}
		e, err := entry(v.s.codec, k, r)
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	return es, nil
}

// Len returns the number of live keys in the View.
func (v *View[V]) Len(ctx context.Context) (int, error) {
	n := 0
	for _, err := range v.Scan(ctx, "") {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}
