package etcdstore

import clientv3 "go.etcd.io/etcd/client/v3"

// WithKVWrapper lets a test see every request the store sends (to count
// round trips).
func WithKVWrapper(wrap func(clientv3.KV) clientv3.KV) Option {
	return func(o *options) { o.wrapKV = wrap }
}

// WithAfterReplay runs f each time a Watch has replayed history and is about
// to follow etcd's watch.
func WithAfterReplay(f func()) Option {
	return func(o *options) { o.afterReplay = f }
}
