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
//   - times.at(i) is the time of revision held+i, and times never decrease;
//   - base <= held: the times of revisions base..held-1 are known but not
//     held here (Shed gave them to another keeper, the sealed tier);
//   - head.Time is the instant of the newest time in times, once there is one.
//
// Example: Commit(t1); Commit(t2); Commit(t3); Forget(3) →
// base=3, times=[t3], head={3, t3}; TimeOf(2) is unknown, First() is t1.
// Then Commit(t4); Shed(4) → base=3, held=4, times=[t4]: TimeOf(3) is not
// held, and RevAt(t3) says so (Below).
type Order struct {
	clock func() time.Time

	head  atomic.Pointer[Stamp]     // the latest published revision; nil before the first
	first atomic.Pointer[time.Time] // time of revision 1; nil before it

	// Guarded by the caller's write lock.
	base   int64    // the oldest revision whose time is known
	held   int64    // revision of times.at(0); >= base
	times  timeline // times of revisions held, held+1, ..., last.Rev
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
	return &Order{clock: clock, base: 1, held: 1}
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
// last at its time, first's time, the oldest revision whose time is known
// (base), and the n times of revisions held..last.Rev (held >= base),
// oldest first, which at gives as Unix seconds and nanoseconds (0 <= nsec
// < 1e9), all published. It is for recovery.
func (o *Order) Restore(first time.Time, base, held int64, n int, at func(i int) (sec int64, nsec int32), last Stamp) {
	if last.Rev == 0 {
		return
	}
	f := first
	o.first.Store(&f)
	o.base, o.held = base, max(held, base)
	for i := range n {
		sec, nsec := at(i)
		o.times.push(instant{sec, nsec})
	}
	o.last = last
	o.Publish()
}

// Times returns the times of revisions Held()..Last().Rev, oldest first:
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

// Held returns the oldest revision whose time the order holds itself: the
// times of Base()..Held()-1 are known, but kept elsewhere (Shed).
func (o *Order) Held() int64 { return o.held }

// TimeOf returns the time of rev, if the order holds it: the same instant
// as the time committed, in UTC. A revision from Base() up to Held() is
// known but not held here: false.
func (o *Order) TimeOf(rev int64) (time.Time, bool) {
	i := rev - o.held
	if rev < 1 || i < 0 || i >= o.times.len() {
		return time.Time{}, false
	}
	return o.times.at(i).time(), true
}

// Answer says how RevAt answered.
type Answer uint8

const (
	Known     Answer = iota // the revision is the answer
	Forgotten               // the answer is below Base: its number is no longer known
	Below                   // the answer is from Base() to Held()-1: ask the keeper of those times
)

// RevAt returns the last revision whose time is <= t: 0 if t is before the
// first revision (or nothing was committed). O(log n).
func (o *Order) RevAt(t time.Time) (int64, Answer) {
	if f, ok := o.First(); !ok || t.Before(f) {
		return 0, Known
	}
	n := o.times.search(instantOf(t))
	switch {
	case n > 0:
		return o.held + n - 1, Known
	case o.held > o.base: // t is before the time of held, at or after base's, or before it
		return 0, Below
	}
	return 0, Forgotten // t is before the time of base, which is above revision 1
}

// Forget drops the times of revisions below rev (never the last one's): it
// raises Base, and Held with it if rev is above it. O(1) amortised; the
// memory held stays proportional to the revisions kept.
func (o *Order) Forget(rev int64) {
	rev = min(rev, o.last.Rev)
	if rev <= o.base {
		return
	}
	o.base = rev
	o.shed(rev)
}

// Shed lets go of the times of revisions below rev (never the last one's),
// which stay known: TimeOf no longer answers for them, and RevAt answers
// Below where one of them is the answer. Their keeper answers instead.
func (o *Order) Shed(rev int64) {
	o.shed(min(rev, o.last.Rev))
}

func (o *Order) shed(rev int64) {
	drop := rev - o.held
	if drop <= 0 {
		return
	}
	o.times.dropFront(drop)
	o.held = rev
}
