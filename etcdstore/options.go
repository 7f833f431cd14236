package etcdstore

import (
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Option configures a Store at Open. The names and meanings are the root
// package's (revkv.WithClock, ...), plus two of etcd's limits.
type Option func(*options)

type options struct {
	clock           func() time.Time
	expiryInterval  time.Duration
	maxHistory      int
	retention       time.Duration
	trimInterval    time.Duration
	maxRequestBytes int
	maxTxnOps       int
	wrapKV          func(clientv3.KV) clientv3.KV // tests count round trips with it
	afterReplay     func()                        // tests compact etcd between a Watch's replay and its follow
}

func defaultOptions() options {
	return options{
		clock:           time.Now,
		maxRequestBytes: 3 << 19, // 1.5 MiB, etcd's default --max-request-bytes
		maxTxnOps:       128,     // etcd's default --max-txn-ops
	}
}

// WithClock sets the store's clock (default time.Now). Stores on one prefix
// may have clocks that disagree: times along revisions never decrease
// whatever they say, because every write takes the later of its clock and
// the last revision's time.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithExpiryInterval starts a goroutine that materialises due expiries every
// d (0, the default: none). Several stores may run one: the head compare
// makes sure each expiry is written once.
func WithExpiryInterval(d time.Duration) Option { return func(o *options) { o.expiryInterval = d } }

// WithMaxHistory caps each key's history at its newest n entries (0: no
// cap), applied by Trim, the trimmer, and by a write that takes a key's
// history past 2n.
func WithMaxHistory(n int) Option { return func(o *options) { o.maxHistory = n } }

// WithRetention makes Trim and the trimmer compact at the last revision whose
// time is at or before now - d (0: keep everything).
func WithRetention(d time.Duration) Option { return func(o *options) { o.retention = d } }

// WithTrimInterval starts a goroutine that calls Trim every d (0: none).
func WithTrimInterval(d time.Duration) Option { return func(o *options) { o.trimInterval = d } }

// WithMaxRequestBytes tells the store the cluster's --max-request-bytes
// (default 1.5 MiB, etcd's default), so that a value too large for it is
// refused with ErrValueTooLarge before it is sent.
func WithMaxRequestBytes(n int) Option { return func(o *options) { o.maxRequestBytes = n } }

// WithMaxTxnOps tells the store the cluster's --max-txn-ops (default 128):
// it bounds how many expiries one commit carries, and an Update that needs
// more operations than that fails with ErrTooManyWrites.
func WithMaxTxnOps(n int) Option { return func(o *options) { o.maxTxnOps = n } }

func (o *options) check() error {
	switch {
	case o.clock == nil:
		return fmt.Errorf("etcdstore: WithClock(nil)")
	case o.expiryInterval < 0:
		return fmt.Errorf("etcdstore: negative WithExpiryInterval %v", o.expiryInterval)
	case o.maxHistory < 0:
		return fmt.Errorf("etcdstore: negative WithMaxHistory %d", o.maxHistory)
	case o.retention < 0:
		return fmt.Errorf("etcdstore: negative WithRetention %v", o.retention)
	case o.trimInterval < 0:
		return fmt.Errorf("etcdstore: negative WithTrimInterval %v", o.trimInterval)
	case o.maxRequestBytes < 4096:
		return fmt.Errorf("etcdstore: WithMaxRequestBytes %d is below 4096", o.maxRequestBytes)
	case o.maxTxnOps < 16:
		return fmt.Errorf("etcdstore: WithMaxTxnOps %d is below 16", o.maxTxnOps)
	}
	return nil
}
