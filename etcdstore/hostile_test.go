package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/etcdstore"
)

// TestOpenErrors: a nil client, a nil codec, a prefix with a zero byte and a
// negative option are errors from Open, never panics.
func TestOpenErrors(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	_, err := etcdstore.Open[string](ctx, nil, "p", revkv.StringCodec())
	require.ErrorContains(t, err, "nil etcd client")
	_, err = etcdstore.Open[string](ctx, cli, "p", nil)
	require.ErrorContains(t, err, "nil codec")
	_, err = etcdstore.Open(ctx, cli, "p\x00q", revkv.StringCodec())
	require.ErrorIs(t, err, etcdstore.ErrInvalidPrefix)
	_, err = etcdstore.Open(ctx, cli, "p", revkv.StringCodec(), etcdstore.WithMaxHistory(-1))
	require.ErrorContains(t, err, "WithMaxHistory")
	_, err = etcdstore.Open(ctx, cli, "p", revkv.StringCodec(), etcdstore.WithClock(nil))
	require.Error(t, err)
}

// TestHostileInputs: the empty key is an ordinary key (as in the root
// package); a TTL <= 0, an expiry in the past, a cancelled ctx and an
// expired one get clear errors and write nothing.
func TestHostileInputs(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	s, err := etcdstore.Open(ctx, cli, "hostile", revkv.BytesCodec())
	require.NoError(t, err)
	rev := func() revkv.Revision { r, err := s.Rev(ctx); require.NoError(t, err); return r }

	_, err = s.Put(ctx, "", []byte("empty key"))
	require.NoError(t, err)
	v, ok, err := s.Get(ctx, "")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "empty key", string(v))
	before := rev()

	for _, ttl := range []time.Duration{0, -time.Second} {
		_, err = s.PutTTL(ctx, "k", []byte("v"), ttl)
		require.ErrorIs(t, err, revkv.ErrInvalidTTL)
		var oe *revkv.OpError
		require.ErrorAs(t, err, &oe)
		require.Equal(t, "k", oe.Key)
	}
	_, err = s.PutExpiresAt(ctx, "k", []byte("v"), time.Now().Add(-time.Hour))
	require.ErrorIs(t, err, revkv.ErrInvalidTTL)
	_, err = s.PutExpiresAt(ctx, "k", []byte("v"), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	require.ErrorIs(t, err, revkv.ErrInvalidTTL, "past what Unix nanoseconds hold")

	_, ok, err = s.GetAsOf(ctx, "", time.Time{})
	require.NoError(t, err, "the zero time is before revision 1")
	require.False(t, ok)
	_, _, err = s.GetAsOf(ctx, "", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	require.ErrorIs(t, err, revkv.ErrFutureRevision)
	_, ok, err = s.GetAt(ctx, "", math.MinInt64)
	require.NoError(t, err)
	require.False(t, ok)
	v0, err := s.At(ctx, -5)
	require.NoError(t, err)
	n, err := v0.Len(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a View at a revision <= 0 is empty")
	v0.Close()

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Put(cancelled, "k", []byte("v"))
	require.ErrorIs(t, err, context.Canceled)
	_, _, err = s.Get(cancelled, "")
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Update(cancelled, func(tx *etcdstore.Txn[[]byte]) error { return tx.Put(cancelled, "k", nil) })
	require.ErrorIs(t, err, context.Canceled)
	for _, err := range s.Watch(cancelled, "", 1) {
		require.ErrorIs(t, err, context.Canceled)
	}
	expired, cancel2 := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel2()
	time.Sleep(time.Millisecond)
	_, err = s.Delete(expired, "")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, before, rev(), "nothing was written")
}

// TestEtcdLimits: a value over etcd's request limit (sent twice: over half
// of it) and an Update over its transaction limit are refused with clear
// errors, writing nothing; after Close writes are ErrClosed and reads still
// answer; a Txn used after its Update is ErrClosed.
func TestEtcdLimits(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	s, err := etcdstore.Open(ctx, cli, "limits", revkv.BytesCodec())
	require.NoError(t, err)
	rev := func() revkv.Revision { r, err := s.Rev(ctx); require.NoError(t, err); return r }
	_, err = s.Put(ctx, "", []byte("empty key"))
	require.NoError(t, err)
	before := rev()
	big := []byte(strings.Repeat("x", 2<<20))
	_, err = s.Put(ctx, "big", big)
	require.ErrorIs(t, err, etcdstore.ErrValueTooLarge)
	_, err = s.Put(ctx, "big", big[:1<<20]) // sent twice: over the limit too
	require.ErrorIs(t, err, etcdstore.ErrValueTooLarge)
	require.Equal(t, before, rev(), "nothing was written")
	_, err = s.Put(ctx, "big", big[:600<<10])
	require.NoError(t, err, "600 KiB fits")

	before = rev()
	_, err = s.Update(ctx, func(tx *etcdstore.Txn[[]byte]) error {
		for i := range 100 {
			if err := tx.Put(ctx, strings.Repeat("k", i+1), nil); err != nil {
				return err
			}
		}
		return nil
	})
	require.ErrorIs(t, err, etcdstore.ErrTooManyWrites)
	require.Equal(t, before, rev())

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	_, err = s.Put(ctx, "k", nil)
	require.ErrorIs(t, err, revkv.ErrClosed)
	require.ErrorIs(t, s.Compact(ctx, 1), revkv.ErrClosed)
	_, ok, err := s.Get(ctx, "")
	require.NoError(t, err)
	require.True(t, ok, "reads answer after Close")
	v, err := s.At(ctx, 1)
	require.NoError(t, err, "a View opens after Close (it pins nothing)")
	_, ok, err = v.Get(ctx, "")
	require.NoError(t, err)
	require.True(t, ok)
	v.Close()
	other, err := etcdstore.Open(ctx, cli, "other", revkv.BytesCodec())
	require.NoError(t, err)
	defer other.Close()
	var tx *etcdstore.Txn[[]byte]
	_, err = other.Update(ctx, func(t *etcdstore.Txn[[]byte]) error { tx = t; return nil })
	require.NoError(t, err)
	require.True(t, errors.Is(tx.Put(ctx, "late", nil), revkv.ErrClosed), "a Txn after its Update")
}

// TestLargeValueInBatch: concurrent writes whose values fit etcd's request
// limit one by one but not together (group commit would carry them in one
// request) all succeed: a batch the limit refuses is committed a write at a
// time.
func TestLargeValueInBatch(t *testing.T) {
	_, cli := single(t)
	ctx := ctxT(t)
	s, err := etcdstore.Open(ctx, cli, "batch", revkv.BytesCodec())
	require.NoError(t, err)
	defer s.Close()
	small, big := []byte("v"), []byte(strings.Repeat("x", 700<<10)) // two of these are over the limit together
	errs := make([]error, 12)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			v := small
			if i%4 == 0 {
				v = big
			}
			_, errs[i] = s.Put(ctx, fmt.Sprint("k", i), v)
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "write %d", i)
	}
	for i := range errs {
		v, ok, err := s.Get(ctx, fmt.Sprint("k", i))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, i%4 == 0, len(v) > 1)
	}
}
