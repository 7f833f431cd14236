// Package ttl is revkv's expiry index: the pending expiries ordered by
// (ExpiresAt, key), so that the next one due is always at the front.
//
// An Index is not safe for concurrent use; the store guards it with its write
// lock. Each item carries a value of the caller's (the store's: the key's
// log), so that whoever pops it needs no lookup by key.
package ttl

import (
	"math"
	"sort"
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
//
// Most expiries arrive in order: writes with one TTL expire in the order
// they were written. Those go to run, a sorted queue appended at its end in
// O(1); an item that would not sort after the run's last goes to tree, a
// B-tree. The front of the index is the lesser of the two fronts, so the
// order stays exact whatever the mix. What the run gains depends on the
// mix: one long TTL at the run's end sends every shorter one after it to
// the tree until it pops, and the run's array keeps its size after a
// burst (about 40 bytes an item) until it empties or compacts.
//
// Invariants: run[head:] is sorted by (At, Key); run[head], if any, is not
// dead; dead counts the dead items of run[head:]; live counts the others.
type Index[T any] struct {
	tree *btree.BTreeG[Item[T]]
	run  []queued[T]
	head int
	dead int
	live int
}

// queued is an item of the run; a removed one stays, dead, until the
// front passes it or the run is compacted.
type queued[T any] struct {
	Item[T]
	dead bool
}

// New returns an empty index.
func New[T any]() *Index[T] {
	return &Index[T]{tree: btree.NewG(32, less[T])}
}

// Len returns the number of pending expiries.
func (x *Index[T]) Len() int { return x.live + x.tree.Len() }

// Add records that key expires at at, with val: O(1) amortised when it
// sorts after every item added to the run before, else O(log n).
func (x *Index[T]) Add(key string, at int64, val T) {
	it := Item[T]{At: at, Key: key, Val: val}
	if n := len(x.run); n == x.head || less(x.run[n-1].Item, it) {
		x.run = append(x.run, queued[T]{Item: it})
		x.live++
		return
	}
	x.tree.ReplaceOrInsert(it)
}

// find returns the index in run of key's item at at, or -1.
func (x *Index[T]) find(key string, at int64) int {
	want := Item[T]{At: at, Key: key}
	q := x.run[x.head:]
	i := sort.Search(len(q), func(i int) bool { return !less(q[i].Item, want) })
	if i < len(q) && !q[i].dead && q[i].At == at && q[i].Key == key {
		return x.head + i
	}
	return -1
}

// Remove forgets key's expiry at at and reports whether it was there. O(log n).
func (x *Index[T]) Remove(key string, at int64) bool {
	if i := x.find(key, at); i >= 0 {
		x.run[i] = queued[T]{Item: Item[T]{At: at, Key: key}, dead: true} // lets go of Val
		x.live--
		x.dead++
		x.tidy()
		return true
	}
	_, ok := x.tree.Delete(Item[T]{At: at, Key: key})
	return ok
}

// tidy restores the run's invariants after a removal: it moves the front
// past dead items, and compacts the run once dead items or the space
// before the front outweigh the live items.
func (x *Index[T]) tidy() {
	for x.head < len(x.run) && x.run[x.head].dead {
		x.run[x.head] = queued[T]{}
		x.head++
		x.dead--
	}
	if x.head == len(x.run) {
		x.run, x.head = x.run[:0], 0
		return
	}
	if x.dead > x.live || x.head > len(x.run)/2 {
		q := x.run[:0]
		for _, it := range x.run[x.head:] {
			if !it.dead {
				q = append(q, it)
			}
		}
		clear(x.run[len(q):])
		x.run, x.head, x.dead = q, 0, 0
	}
}

// Lookup returns the value of key's item at at, if there is one. O(log n).
func (x *Index[T]) Lookup(key string, at int64) (T, bool) {
	if i := x.find(key, at); i >= 0 {
		return x.run[i].Val, true
	}
	it, ok := x.tree.Get(Item[T]{At: at, Key: key})
	return it.Val, ok
}

// front returns the first item and whether it is the run's.
func (x *Index[T]) front() (it Item[T], inRun, ok bool) {
	t, inTree := x.tree.Min()
	if x.head == len(x.run) {
		return t, false, inTree
	}
	if r := x.run[x.head].Item; !inTree || less(r, t) {
		return r, true, true
	}
	return t, false, true
}

// Due reports whether an item is due at now (At <= now). O(log n).
func (x *Index[T]) Due(now int64) bool {
	it, _, ok := x.front()
	return ok && it.At <= now
}

// PopDue removes and returns the first item due at now (At <= now): the
// earliest, ties broken by key. O(log n).
func (x *Index[T]) PopDue(now int64) (Item[T], bool) {
	it, inRun, ok := x.front()
	if !ok || it.At > now {
		return Item[T]{}, false
	}
	if inRun {
		x.run[x.head] = queued[T]{}
		x.head++
		x.live--
		x.tidy()
	} else {
		x.tree.DeleteMin()
	}
	return it, true
}

// CountDue returns how many items are due at now. O(due + log n).
func (x *Index[T]) CountDue(now int64) int {
	n := 0
	for _, it := range x.run[x.head:] {
		if it.At > now {
			break
		}
		if !it.dead {
			n++
		}
	}
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
