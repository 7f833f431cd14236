// Package ttl is revkv's expiry index: the pending expiries ordered by
// (ExpiresAt, key), so that the next one due is always at the front.
//
// An Index is not safe for concurrent use; the store guards it with its write
// lock.
package ttl

import (
	"math"
	"time"

	"github.com/google/btree"
)

// Item is one pending expiry: key expires at At (Unix nanoseconds).
type Item struct {
	At  int64
	Key string
}

func less(a, b Item) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	return a.Key < b.Key
}

// Index holds at most one Item per key (the store removes a key's old item
// before it adds a new one).
type Index struct {
	tree *btree.BTreeG[Item]
}

// New returns an empty index.
func New() *Index {
	return &Index{tree: btree.NewG(32, less)}
}

// Len returns the number of pending expiries.
func (x *Index) Len() int { return x.tree.Len() }

// Add records that key expires at at. O(log n).
func (x *Index) Add(key string, at int64) { x.tree.ReplaceOrInsert(Item{At: at, Key: key}) }

// Remove forgets key's expiry at at and reports whether it was there. O(log n).
func (x *Index) Remove(key string, at int64) bool {
	_, ok := x.tree.Delete(Item{At: at, Key: key})
	return ok
}

// PopDue removes and returns the first item due at now (At <= now): the
// earliest, ties broken by key. O(log n).
func (x *Index) PopDue(now int64) (Item, bool) {
	it, ok := x.tree.Min()
	if !ok || it.At > now {
		return Item{}, false
	}
	x.tree.DeleteMin()
	return it, true
}

// CountDue returns how many items are due at now. O(due + log n).
func (x *Index) CountDue(now int64) int {
	n := 0
	x.tree.Ascend(func(it Item) bool {
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
// what Unix nanoseconds can hold (years 1678 to 2262). The lowest and highest
// values are excluded too, so no item is ever at math.MinInt64 or
// math.MaxInt64, where Nanos saturates (and which the store uses to mean
// "deleted" and "no TTL").
func ExpiryTime(now time.Time, d time.Duration) (time.Time, bool) {
	if d <= 0 {
		return time.Time{}, false
	}
	at := now.Add(d)
	if !at.After(now) || !at.After(minTime) || !at.Before(maxTime) {
		return time.Time{}, false
	}
	return at, true
}
