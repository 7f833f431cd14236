package revkv

import (
	"runtime"
	"sync/atomic"
)

// pace lets a writer in between the steps of a store's background work:
// a seal's entries, a merge's, a snapshot's keys.
//
// That work runs beside the writers, and on a small machine it and the
// garbage collector keep every processor busy. A writer that a background
// goroutine wakes, by letting go of a lock the writer waited on, is queued
// on that goroutine's processor; while every processor is busy, it runs
// only once the goroutine blocks, yields or is preempted (after
// milliseconds), so a loop that does none of these holds the writer up
// for as long as it runs. Such a loop calls step once per item (an entry,
// and in a seal also each key it visits), and yields every paceEvery
// items, so that such a writer waits for about one stretch of them rather
// than for the rest of the loop. The zero pace is ready to use.
//
// A seal's eviction (evict) does not pace itself: it takes the write lock
// for each batch of keys, and a yield after each lets a writer's whole
// batch run between two of them, which spreads one eviction over as many
// of a bulk writer's batches and slows that writer down.
type pace struct{ n uint32 }

// paceEvery is how many items a background loop runs between yields: a
// stretch of a few microseconds for an entry or a key, against the
// fraction of a microsecond a yield costs when no one waits.
const paceEvery = 16

func (p *pace) step() {
	if p.n++; p.n%paceEvery == 0 {
		if h := yieldHook.Load(); h != nil {
			(*h)()
		}
		runtime.Gosched()
	}
}

// yieldHook, if set, is called at each yield: a test's way to see who
// yields. Atomic, since a store left open by another test may yield
// while it is set.
var yieldHook atomic.Pointer[func()]
