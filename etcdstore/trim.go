package etcdstore

import (
	"context"
	"errors"

	"github.com/revkv/revkv"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// capKey cuts key's history to its newest WithMaxHistory entries if it holds
// more than that, and returns how many entries it dropped: what Trim does
// to each key.
func (s *Store[V]) capKey(ctx context.Context, key string) (int, error) {
	n := s.opts.maxHistory
	kvs, err := s.histKeys(ctx, key, n+1)
	if err != nil || len(kvs) <= n {
		return 0, err
	}
	return s.cutKey(ctx, key, kvs, n)
}

// capWritten is the cap a commit applies to a key it appended expiries and
// writes to, as the root package applies it: an expiry that takes the key
// past twice the cap cuts it back to the cap, and so does the commit's
// writes, together.
func (s *Store[V]) capWritten(ctx context.Context, key string, expiries, writes int) error {
	n := s.opts.maxHistory
	added := expiries + writes
	kvs, err := s.histKeys(ctx, key, 2*n+added+1)
	if err != nil {
		return err
	}
	keep := len(kvs) - added
	for range expiries {
		if keep++; keep > 2*n {
			keep = n
		}
	}
	if keep += writes; keep > 2*n {
		keep = n
	}
	if keep < len(kvs) {
		_, err = s.cutKey(ctx, key, kvs, keep)
	}
	return err
}

// histKeys returns the names of key's newest limit history entries, newest
// first, without the trim marker.
func (s *Store[V]) histKeys(ctx context.Context, key string, limit int) ([]*mvccpb.KeyValue, error) {
	from, end := s.l.histRange(key)
	resp, err := s.kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(limit+1)), clientv3.WithKeysOnly())
	if err != nil {
		return nil, etcdErr(ctx, err)
	}
	kvs := resp.Kvs
	if len(kvs) > 0 && string(kvs[len(kvs)-1].Key) == s.l.histKey(key, 0) {
		kvs = kvs[:len(kvs)-1]
	}
	return kvs[:min(len(kvs), limit)], nil
}

// cutKey drops key's entries after the newest keep of kvs (its newest
// entries, newest first), keeping the entry an open View needs and
// everything after it, and returns how many it dropped. A marker at the
// oldest end of the history (opTrimmed) then answers ErrCompacted for reads
// below the oldest remaining entry.
func (s *Store[V]) cutKey(ctx context.Context, key string, kvs []*mvccpb.KeyValue, keep int) (int, error) {
	pin, err := s.minPin(ctx)
	if err != nil {
		return 0, err
	}
	revOf := func(i int) int64 { k := string(kvs[i].Key); r, _ := parseInv(k[len(k)-16:]); return r }
	drop := max(keep, 1)
	for pin > 0 && drop < len(kvs) && revOf(drop-1) > pin {
		drop++ // the oldest kept entry must be the one visible at the pin, or older
	}
	if drop >= len(kvs) {
		return 0, nil
	}
	kept := revOf(drop - 1)
	first, marker := string(kvs[drop].Key), s.l.histKey(key, 0)
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
