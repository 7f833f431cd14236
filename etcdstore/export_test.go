package etcdstore

import clientv3 "go.etcd.io/etcd/client/v3"

// WithKVWrapper lets a test see every request the store sends (to count
// round trips).
func WithKVWrapper(wrap func(clientv3.KV) clientv3.KV) Option {
	return func(o *options) { o.wrapKV = wrap }
}
