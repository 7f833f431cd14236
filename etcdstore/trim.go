package etcdstore

import (
	"context"
	"errors"

	"github.com/revkv/revkv"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// capKey cuts key's history to its newest WithMaxHistory entries if it holds
// more than limit, keeping the entry an open View needs and everything
// after it, and returns how many entries it dropped. A marker at the oldest
// end of the history (opTrimmed) then answers ErrCompacted for reads below
// the oldest remaining entry.
func (s *Store[V]) capKey(ctx context.Context, key string, limit int) (int, error) {
	from, end := s.l.histRange(key)
	resp, err := s.kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(limit+2)), clientv3.WithKeysOnly())
	if err != nil {
		return 0, etcdErr(ctx, err)
	}
	marker := s.l.histKey(key, 0)
	kvs := resp.Kvs
	if len(kvs) > 0 && string(kvs[len(kvs)-1].Key) == marker {
		kvs = kvs[:len(kvs)-1]
	}
	if len(kvs) <= limit {
		return 0, nil
	}
	pin, err := s.minPin(ctx)
	if err != nil {
		return 0, err
	}
	revOf := func(i int) int64 { k := string(kvs[i].Key); r, _ := parseInv(k[len(k)-16:]); return r }
	drop := s.opts.maxHistory
	for pin > 0 && drop < len(kvs) && revOf(drop-1) > pin {
		drop++ // the oldest kept entry must be the one visible at the pin, or older
	}
	if drop >= len(kvs) {
		return 0, nil
	}
	kept := revOf(drop - 1)
	first := string(kvs[drop].Key)
	txn, err := s.kv.Txn(ctx).Then(
		clientv3.OpGet(first, clientv3.WithRange(marker), clientv3.WithCountOnly()),
		clientv3.OpDelete(first, clientv3.WithRange(marker)),
		clientv3.OpPut(marker, string(record{op: opTrimmed, rev: kept}.encode())),
	).Commit()
	if err != nil {
		return 0, etcdErr(ctx, err)
	}
	return int(txn.Responses[0].GetResponseRange().Count), s.raiseTrimFloor(ctx, kept)
}

// raiseTrimFloor records that a key's oldest remaining revision is rev:
// Floor is at least that.
func (s *Store[V]) raiseTrimFloor(ctx context.Context, rev int64) error {
	for {
		resp, err := s.kv.Get(ctx, s.l.floor())
		if err != nil {
			return etcdErr(ctx, err)
		}
		f, err := floorOf(resp.Kvs)
		if err != nil || f.trim >= rev {
			return err
		}
		mod := f.mod
		f.trim = rev
		put, err := s.kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(s.l.floor()), "=", mod)).
			Then(clientv3.OpPut(s.l.floor(), string(f.encode()))).Commit()
		if err != nil || put.Succeeded {
			return etcdErr(ctx, err)
		}
	}
}

func isCompacted(err error) bool { return errors.Is(err, revkv.ErrCompacted) }
