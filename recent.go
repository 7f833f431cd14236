package revkv

import "sync/atomic"

// recent maps the latest revisions to the keys that made them, while any
// watcher exists, so that a watcher's wake-up reads what changed — a few
// revisions — instead of every key under its prefix. It is a ring of the
// last recentCap revisions, written by writers under state.mu and read
// without a lock: a reader takes the slots of a range and then checks that
// lo has not passed the range, since the writer moves lo past a revision
// before it reuses that revision's slot. A store with no watcher never
// touches it.
type recent[V any] struct {
	kls    atomic.Pointer[[recentCap]atomic.Pointer[keyLog[V]]] // kls[r % recentCap] is revision r's key, lo <= r <= hi
	lo, hi atomic.Int64                                         // lo > hi: empty
}

const recentCap = 1 << 16

// record notes that revision rev is kl's; the caller holds state.mu.
// Revisions come in order; after a gap (no watcher for a while) the ring
// starts again at rev.
func (rc *recent[V]) record(rev int64, kl *keyLog[V]) {
	kls := rc.kls.Load()
	if kls == nil {
		kls = new([recentCap]atomic.Pointer[keyLog[V]])
		rc.kls.Store(kls)
	}
	switch lo, hi := rc.lo.Load(), rc.hi.Load(); {
	case rev != hi+1 || lo > hi:
		rc.lo.Store(rev)
	case rev-lo >= recentCap:
		rc.lo.Store(rev - recentCap + 1) // before the slot of rev-recentCap is reused
	}
	kls[rev%recentCap].Store(kl)
	rc.hi.Store(rev)
}

// get appends to dst the keys of revisions from..to, if the ring holds
// them all.
func (rc *recent[V]) get(dst []*keyLog[V], from, to int64) ([]*keyLog[V], bool) {
	kls := rc.kls.Load()
	if kls == nil || to > rc.hi.Load() || from < rc.lo.Load() {
		return dst, false
	}
	for r := from; r <= to; r++ {
		dst = append(dst, kls[r%recentCap].Load())
	}
	if from < rc.lo.Load() { // overwritten while we read
		return dst[:0], false
	}
	return dst, true
}
