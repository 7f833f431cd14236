package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/revkv/revkv"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// The errors of this package that the root package has no sentinel for.
// Every other error is one of revkv's sentinels (revkv.ErrNotFound, ...)
// inside a *revkv.OpError, or an error from etcd wrapped with the call.
var (
	// ErrValueTooLarge is returned by a write whose request would be over
	// etcd's --max-request-bytes (WithMaxRequestBytes). A value is sent
	// twice in one request (its history entry and the key's latest entry),
	// so the largest value is a little under half the limit.
	ErrValueTooLarge = errors.New("etcdstore: value too large for etcd's request limit")

	// ErrTooManyWrites is returned by an Update whose writes need more
	// operations in one etcd transaction than --max-txn-ops (WithMaxTxnOps)
	// allows: each write takes two, three with a TTL.
	ErrTooManyWrites = errors.New("etcdstore: too many writes for one etcd transaction")

	// ErrInvalidPrefix is returned by Open for a prefix with a zero byte,
	// which the key layout uses to keep nested prefixes apart.
	ErrInvalidPrefix = errors.New("etcdstore: prefix must not contain a zero byte")
)

// keyErr is the error of a call on key.
func keyErr(op, key string, err error) error {
	return &revkv.OpError{Op: op, Key: key, Err: err}
}

// revErr is the error of a call at a revision.
func revErr(op, key string, rev int64, err error) error {
	return &revkv.OpError{Op: op, Key: key, Rev: revkv.Revision(rev), Err: err}
}

// etcdErr wraps an error from the client: a done ctx is reported as
// ctx.Err() (so errors.Is finds context.Canceled), a request over the size
// limit as ErrValueTooLarge, anything else as it is, said to come from etcd.
func etcdErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (etcd: %v)", cerr, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) {
		return fmt.Errorf("%w: %v", ErrValueTooLarge, err)
	}
	if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrGRPCTooManyOps) {
		return fmt.Errorf("%w: %v", ErrTooManyWrites, err)
	}
	return fmt.Errorf("etcd: %w", err)
}

// detail adds why to a sentinel, keeping it for errors.Is. A time among
// args is shown as the root package shows one: RFC 3339 with its
// nanoseconds and offset, without the monotonic clock reading.
func detail(err error, format string, args ...any) error {
	for i, a := range args {
		if t, ok := a.(time.Time); ok {
			args[i] = t.Round(0).Format(time.RFC3339Nano)
		}
	}
	return fmt.Errorf("%w (%s)", err, fmt.Sprintf(format, args...))
}
