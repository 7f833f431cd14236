// Package ttl is revkv's expiry index: the pending expiries ordered by
// (ExpiresAt, key), so that the next one due is always at the front.
//
// An Index is not safe for concurrent use; the store guards it with its write
// lock. Each item carries a value of the caller's (the store's: the key's
// log), so that whoever pops it needs no lookup by key.
package ttl

import (
	"math"
	"time"

	"github.com/google/btree"
)

// Item is one pending expiry: key expires at At (Unix nanoseconds). Val is
// carried along and plays no part in the order.
type Item[T any] struct {
	At  int64
	Key string
	Val T
}

func less[T any](a, b Item[T]) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	return a.Key < b.Key
}

// Index holds at most one Item per key (the store removes a key's old item
// before it adds a new one).
type Index[T any] struct {
	tree *btree.BTreeG[Item[T]]
}

// New returns an empty index.
func New[T any]() *Index[T] {
	return &Index[T]{tree: btree.NewG(32, less[T])}
}

// Len returns the number of pending expiries.
func (x *Index[T]) Len() int { return x.tree.Len() }

// Add records that key expires at at, with val. O(log n).
func (x *Index[T]) Add(key string, at int64, val T) {
	x.tree.ReplaceOrInsert(Item[T]{At: at, Key: key, Val: val})
}

// Remove forgets key's expiry at at and reports whether it was there. O(log n).
func (x *Index[T]) Remove(key string, at int64) bool {
	_, ok := x.tree.Delete(Item[T]{At: at, Key: key})
	return ok
}

// Lookup returns the value of key's item at at, if there is one. O(log n).
func (x *Index[T]) Lookup(key string, at int64) (T, bool) {
	it, ok := x.tree.Get(Item[T]{At: at, Key: key})
	return it.Val, ok
}

// Due reports whether an item is due at now (At <= now). O(log n).
func (x *Index[T]) Due(now int64) bool {
	it, ok := x.tree.Min()
	return ok && it.At <= now
}

// PopDue removes and returns the first item due at now (At <= now): the
// earliest, ties broken by key. O(log n).
func (x *Index[T]) PopDue(now int64) (Item[T], bool) {
	it, ok := x.tree.Min()
	if !ok || it.At > now {
		return Item[T]{}, false
	}
	x.tree.DeleteMin()
	return it, true
}

// CountDue returns how many items are due at now. O(due + log n).
func (x *Index[T]) CountDue(now int64) int {
	n := 0
	x.tree.Ascend(func(it Item[T]) bool {
		if it.At > now {
			return false
		}
		n++
		return true
	})
	return n
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// Nanos converts t to Unix nanoseconds, saturating outside the range an int64
// holds, so that comparisons against in-range expiry times stay exact.
func Nanos(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// ExpiryTime returns now+d, or false when d <= 0 or the result falls outside
// what Unix nanoseconds can hold (years 1678 to 2262). The last instant they
// hold, time.Unix(0, math.MaxInt64), is valid: Nanos saturates there, so an
// expiry at it is due exactly from then on. The two lowest instants are
// refused: the store uses their values to mean "deleted" and "no TTL", and
// no clock after 1677 reaches them.
func ExpiryTime(now time.Time, d time.Duration) (time.Time, bool) {
	if d <= 0 {
		return time.Time{}, false
	}
	return ExpiryAt(now, now.Add(d)) // an overflowing sum is not after now
}

// ExpiryAt returns at for an expiry set at now, or false when at is not
// after now or falls outside what Unix nanoseconds can hold, as ExpiryTime
// decides for now+d.
func ExpiryAt(now, at time.Time) (time.Time, bool) {
	if !at.After(now) || !at.After(lowest) || at.After(maxTime) {
		return time.Time{}, false
	}
	return at, true
}

// Holds reports whether an expiry at at can be kept at all, whatever the
// time of the write that sets it: whether Unix nanoseconds hold it.
func Holds(at time.Time) bool { return at.After(lowest) && !at.After(maxTime) }

// lowest is the highest instant ExpiryTime refuses on the low side.
var lowest = time.Unix(0, math.MinInt64+1)
