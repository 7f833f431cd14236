// Package mvcc keeps revkv's commit order: which revision comes next, the time
// of every revision still needed, and the clock rule (times never decrease).
//
// An Order is written by one writer at a time (the store's write lock) and read
// by any number of goroutines: Head, Now and First are safe for concurrent use;
// every other method needs the caller's write lock.
//
// A writer assigns revisions (Assign) and publishes them (Publish), which
// Commit does in one step. A store that must sync its log before readers see
// a revision assigns several, syncs, then publishes them all: writers see the
// assigned revisions (Last, Next, WriterNow), readers only the published head.
package mvcc

import (
	"sync/atomic"
	"time"
)

// Stamp is a published revision and its time.
type Stamp struct {
	Rev  int64
	Time time.Time
}

// Order assigns revisions and remembers their times.
//
// Invariants, with head = the last published Stamp:
//   - revisions are 1, 2, 3, ... with no gaps; head.Rev is the latest;
//   - times.at(i) is the time of revision base+i, and times never decrease;
//   - head.Time is the instant of the newest time in times, once there is one.
//
// Example: Commit(t1); Commit(t2); Commit(t3); Forget(3) →
// base=3, times=[t3], head={3, t3}; TimeOf(2) is unknown, First() is t1.
type Order struct {
	clock func() time.Time

	head  atomic.Pointer[Stamp]     // the latest published revision; nil before the first
	first atomic.Pointer[time.Time] // time of revision 1; nil before it

	// Guarded by the caller's write lock.
	base   int64    // revision of times.at(0)
	times  timeline // times of revisions base, base+1, ..., last.Rev
	last   Stamp    // the last assigned revision and its time; head.Rev <= last.Rev
	stamps []Stamp  // where the next heads are written; each is written once, then published
}

// stampBlock is how many heads one allocation holds. A published Stamp is
// never written again, so readers may keep pointers into a block while the
// writer fills the rest of it. 127 is the most that, with the allocator's
// header, fit one of its 4 KiB size classes: one more would take the next
// class up and waste most of its extra room.
const stampBlock = 127

// instant is a time.Time without its location: 16 bytes and no pointer, so
// the timeline costs 8 bytes a revision less than a []time.Time and nothing
// for the garbage collector to scan. The timeline needs only to order times
// and to give one back for comparisons, where the location does not matter.
// sec is t.Unix(), which with nsec holds every time a time.Time can; it
// orders them exactly except within about 2,000 years of the lowest time a
// time.Time holds (year -292 billion), where t.Unix() wraps around.
type instant struct {
	sec  int64
	nsec int32
}

func instantOf(t time.Time) instant { return instant{t.Unix(), int32(t.Nanosecond())} }

func (i instant) time() time.Time { return time.Unix(i.sec, int64(i.nsec)).UTC() }

func (i instant) after(j instant) bool { return i.sec > j.sec || (i.sec == j.sec && i.nsec > j.nsec) }

// NewOrder returns an empty order reading the given clock.
func NewOrder(clock func() time.Time) *Order {
	return &Order{clock: clock, base: 1}
}

// Head returns the latest published revision and its time; {0, zero} before
// the first commit. It is safe for concurrent use.
func (o *Order) Head() Stamp {
	if h := o.head.Load(); h != nil {
		return *h
	}
	return Stamp{}
}

// First returns the time of revision 1, if it was committed.
func (o *Order) First() (time.Time, bool) {
	if f := o.first.Load(); f != nil {
		return *f, true
	}
	return time.Time{}, false
}

// Now applies the clock rule to a reading of the clock: the later of the
// clock and h.Time, without a monotonic clock reading (so that times compare
// by their wall clock alone). It never fails, whatever the clock returns.
func (o *Order) Now(h Stamp) time.Time {
	t := o.clock().Round(0)
	if t.Before(h.Time) {
		return h.Time
	}
	return t
}

// Next returns the revision the next Assign will give.
func (o *Order) Next() int64 { return o.last.Rev + 1 }

// Last returns the last assigned revision and its time: the head, unless
// revisions were assigned and not yet published.
func (o *Order) Last() Stamp { return o.last }

// WriterNow is Now for a writer: the later of the clock and the last
// assigned revision's time.
func (o *Order) WriterNow() time.Time { return o.Now(o.last) }

// Commit assigns and publishes revision Next() with time t, which must not
// be before the last revision's time. Whatever the caller wrote for that
// revision must be in place before Commit: readers that load the new head
// expect to find it. O(1) amortised.
func (o *Order) Commit(t time.Time) int64 { return o.CommitN(1, t) }

// CommitN assigns the next n revisions (n >= 1), all with time t, and
// publishes them in one step: a reader loads the head before them or the
// head after them, never one in between. That is how a batch of writes
// becomes visible together. It returns the last of them. O(n) amortised.
func (o *Order) CommitN(n int, t time.Time) int64 {
	rev := o.Assign(n, t)
	o.Publish()
	return rev
}

// Assign gives the next n revisions (n >= 1) the time t and returns the
// last of them, without publishing them.
func (o *Order) Assign(n int, t time.Time) int64 {
	rev := o.Next()
	if rev == 1 {
		first := t // a copy: taking t's address would move t to the heap on every call
		o.first.Store(&first)
	}
	at := instantOf(t)
	for range n {
		o.times.push(at)
	}
	o.last = Stamp{Rev: rev + int64(n) - 1, Time: t}
	return o.last.Rev
}

// Publish makes every assigned revision visible to readers.
func (o *Order) Publish() {
	if o.last.Rev == o.Head().Rev {
		return
	}
	if len(o.stamps) == 0 {
		o.stamps = make([]Stamp, stampBlock)
	}
	h := &o.stamps[0]
	o.stamps = o.stamps[1:]
	*h = o.last
	o.head.Store(h)
}

// Restore sets an empty order to the state a snapshot recorded: revision
// last at its time, first's time, and the n times of revisions
// base..last.Rev, oldest first, which at gives as Unix seconds and
// nanoseconds (0 <= nsec < 1e9), all published. It is for recovery.
func (o *Order) Restore(first time.Time, base int64, n int, at func(i int) (sec int64, nsec int32), last Stamp) {
	if last.Rev == 0 {
		return
	}
	f := first
	o.first.Store(&f)
	o.base = base
	for i := range n {
		sec, nsec := at(i)
		o.times.push(instant{sec, nsec})
	}
	o.last = last
	o.Publish()
}

// Times returns the times of revisions Base()..Last().Rev, oldest first:
// what Restore needs besides the first time and the last stamp. It copies
// none of them (O(Len/4096)), and the result may be read without the write
// lock while the order goes on: a checkpoint takes it under the lock and
// writes it out after releasing it.
func (o *Order) Times() Times { return Times{o.times.frozen()} }

// Times is a list of revision times taken by Order.Times, safe to read
// from any goroutine.
type Times struct{ tl timeline }

// Len returns how many times t holds.
func (t Times) Len() int64 { return t.tl.len() }

// At returns the i-th time, 0 <= i < Len(), as Unix seconds and
// nanoseconds.
func (t Times) At(i int64) (sec int64, nsec int32) {
	x := t.tl.at(i)
	return x.sec, x.nsec
}

// Base returns the oldest revision whose time is still known.
func (o *Order) Base() int64 { return o.base }

// TimeOf returns the time of rev, if it is still known: the same instant as
// the time committed, in UTC.
func (o *Order) TimeOf(rev int64) (time.Time, bool) {
	i := rev - o.base
	if rev < 1 || i < 0 || i >= o.times.len() {
		return time.Time{}, false
	}
	return o.times.at(i).time(), true
}

// RevAt returns the last revision whose time is <= t: 0 if t is before the
// first revision (or nothing was committed). known is false when that
// revision is older than Base and its number is no longer known. O(log n).
func (o *Order) RevAt(t time.Time) (rev int64, known bool) {
	if f, ok := o.First(); !ok || t.Before(f) {
		return 0, true
	}
	n := o.times.search(instantOf(t))
	if n == 0 { // t is before the time of base, which is above revision 1
		return 0, false
	}
	return o.base + n - 1, true
}

// Forget drops the times of revisions below rev (never the last one's).
// O(1) amortised; the memory held stays proportional to the revisions kept.
func (o *Order) Forget(rev int64) {
	if h := o.last.Rev; rev > h {
		rev = h
	}
	drop := rev - o.base
	if drop <= 0 {
		return
	}
	o.times.dropFront(drop)
	o.base = rev
}
