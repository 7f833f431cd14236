package revkv

import (
	"sort"

	"github.com/revkv/revkv/revlog"
)

// The group commit of a store on a directory (see durable.go for what it
// promises). Write calls queue as requests; the first to find no leader
// leads a drain of the queue. Holding the drain lock (disk.drainMu) from
// start to end, it runs each request in turn under the write lock
// (commits assign revisions, durability.record buffers their records,
// committed collects them in unpublished), then lets go of the write lock
// while it writes the buffer with one write (a copy into the mapped log,
// vfs.MapAppend) and syncs once under SyncAlways, and takes it again to
// publish the group, with publishLocked, in one step. So no reader ever
// waits for the disk: a view opened meanwhile is at the head before the
// group, whose entries sit in the keys' logs above it, unseen. What must
// not run beside a drain (a compaction, a trim, a seal, a checkpoint)
// takes the drain lock first (lockQuiet). The leader's own request is
// always the first of its group: a leader is the first writer to find the
// queue empty, or the one at its head when the lead is handed on.

// request is one write call in the queue: a single write (key, x, op),
// which the leader runs, or a turn (turn != nil: Update, a purge batch),
// whose own goroutine runs its code under the drain's write lock when the
// leader hands it over. So Update's fn never leaves its caller's goroutine
// and stack, and never escapes to the heap for a store made by New.
type request[V any] struct {
	key string
	x   expiry
	op  writeOp[V]

	rev      Revision
	cur      int64 // a single write's key's current revision, for a conflict
	err      error
	panicked any           // a panic of the request's code: a single write's submitter raises it again
	done     chan struct{} // closed when the request is done, or made leader
	lead     bool          // set before done is closed: lead the next drain
	leading  bool          // this request's submitter leads its drain
	// turn and back hand the drain's write lock to a turn's submitter: the
	// leader sends on turn and waits on back.
	turn, back chan struct{}
}

// write is a single write call: a request the leader runs.
func (d *disk[V]) write(s *state[V], key string, x expiry, op writeOp[V]) (Revision, int64, error) {
	r := &request[V]{key: key, x: x, op: op}
	if d.join(s, r) { // leading: r is first in its group
		if r.err = d.err(); r.err == nil {
			s.runRequest(r)
		}
		d.finish(s, r)
	}
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.rev, r.cur, r.err
}

// acquire queues a turn and returns once its submitter holds the write
// lock: its own drain's, or the leader's.
func (d *disk[V]) acquire(s *state[V]) (*request[V], error) {
	r := &request[V]{turn: make(chan struct{}), back: make(chan struct{})}
	if !d.join(s, r) {
		return nil, r.err // failed before its turn came
	}
	if err := d.err(); err != nil && r.leading {
		r.err = err
		d.finish(s, r)
		return nil, err
	}
	return r, nil
}

// release ends a turn with its code's results and returns the call's: the
// drain's failure if its write or sync failed.
func (d *disk[V]) release(s *state[V], r *request[V], rev Revision, err error) (Revision, error) {
	r.rev, r.err = rev, err
	if !r.leading {
		r.back <- struct{}{}
		<-r.done
		return r.rev, r.err
	}
	d.finish(s, r)
	return r.rev, r.err
}

// abandon ends a turn whose code panicked: the drain goes on without it,
// and the panic goes on in the turn's goroutine.
func (d *disk[V]) abandon(s *state[V], r *request[V]) {
	r.panicked = true
	d.release(s, r, 0, nil)
}

// join queues r and waits until it is done (false), its turn came (true,
// for a turn: the leader holds the write lock for it), or it leads a drain
// (true, holding the write lock, with r first in d.group).
func (d *disk[V]) join(s *state[V], r *request[V]) bool {
	if err := d.err(); err != nil {
		r.err = err
		return false
	}
	d.qmu.Lock()
	lead := !d.leading
	d.leading = true
	if !lead {
		// Only a writer that waits needs a channel to wait on: a leader's
		// request is the first of its group, which no one wakes.
		r.done = make(chan struct{})
	}
	d.queue = append(d.queue, r)
	d.qmu.Unlock()
	if !lead {
		select {
		case <-r.turn: // nil for a single write: never ready
			return true
		case <-r.done:
		}
		if !r.lead {
			return false
		}
	}
	d.qmu.Lock()
	group := d.queue
	d.queue, d.spare = d.spare, nil
	d.qmu.Unlock()
	r.leading = true
	d.drainMu.Lock()
	s.mu.Lock()
	d.group = group
	return true
}

// finish ends the drain that the leader r began in join: it runs the rest
// of the group, logs it with one write and (under SyncAlways) one sync
// with the write lock let go, and publishes it; then it lets go of both
// locks, wakes the group and hands the lead on.
func (d *disk[V]) finish(s *state[V], r *request[V]) {
	group := d.group
	for _, q := range group[1:] {
		switch {
		case d.err() != nil:
			q.err = d.err()
		case q.turn != nil: // its submitter runs it, under this lock
			q.turn <- struct{}{}
			<-q.back
		default:
			s.runRequest(q)
		}
	}
	err := d.err()
	if err == nil {
		d.logDeferredTrimsLocked()
	}
	s.mu.Unlock()
	if err == nil {
		err = d.flush()
	}
	s.mu.Lock()
	if err != nil {
		for _, q := range group {
			if q.err == nil && q.panicked == nil {
				q.rev, q.err = 0, err
			}
		}
		d.discardLocked()
	} else {
		d.publishLocked(s)
	}
	d.group = nil
	s.mu.Unlock()
	d.drainMu.Unlock()
	for _, q := range group[1:] {
		close(q.done)
	}
	clear(group) // the requests go; their array is the next drain's queue
	d.qmu.Lock()
	d.spare = group[:0]
	if len(d.queue) > 0 {
		next := d.queue[0] // hand the lead on: this writer has its answer
		next.lead = true
		close(next.done)
	} else {
		d.leading = false
	}
	d.qmu.Unlock()
	d.checkpointIfDue(s.opts.checkpointBytes)
}

// flush writes the drain's records (the cuts its commits deferred
// included) with one write (vfs.MapAppend), and syncs them under
// SyncAlways. It runs with the write lock let go: the writer has locks of
// its own, and only the drain buffers records while it holds the drain
// lock.
func (d *disk[V]) flush() error {
	if d.w.Buffered() == 0 {
		return nil
	}
	n, err := d.w.Flush()
	d.logged.Add(int64(n))
	if err == nil && d.mode == SyncAlways {
		err = d.w.Sync()
	}
	if err != nil {
		return d.fail(err)
	}
	return nil
}

// runRequest runs a single write under the drain's lock, catching a panic
// for its submitter.
func (s *state[V]) runRequest(r *request[V]) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked = p
		}
	}()
	r.rev, r.cur, r.err = s.writeLocked(r.key, &r.x, &r.op)
}

// checkpointIfDue wakes the checkpointer once limit bytes, and at least as
// many as the newest snapshot holds, were logged since the last checkpoint.
func (d *disk[V]) checkpointIfDue(limit int64) {
	if n := d.logged.Load(); n >= limit && n >= d.snapBytes.Load() {
		select {
		case d.ckpt <- struct{}{}:
		default:
		}
	}
}

// committed collects a commit of the drain for its publication; a key it
// created waits in newKeys, where lookupLocked finds it.
func (d *disk[V]) committed(s *state[V], cs []change[V]) {
	for i := range cs {
		if c := &cs[i]; s.index[c.key].kl == nil {
			d.newKeys[c.key] = c.kl
		}
	}
	d.unpublished = append(d.unpublished, cs...)
}

func (d *disk[V]) pending(key string) *keyLog[V] { return d.newKeys[key] }

// publishLocked publishes the drain's commits, once their records are
// written, then drops what the history cap cut during the drain.
func (d *disk[V]) publishLocked(s *state[V]) {
	if len(d.unpublished) > 0 {
		s.publishLocked(d.unpublished)
	}
	clear(d.unpublished)
	d.unpublished = d.unpublished[:0]
	clear(d.newKeys)
	d.applyDeferredTrimsLocked(s)
}

// unpublishedLocked returns, while a drain writes and syncs, what its commits
// changed of liveKeys and of the expiries due at now, so that Len counts
// the published state (store.go's invariant holds of the published state
// plus these). It compares each key the drain wrote at its newest entry
// and at the head: O(the drain's changes), and only in that window.
func (d *disk[V]) unpublishedLocked(s *state[V], now int64) (live, due int) {
	if len(d.unpublished) == 0 {
		return 0, 0
	}
	h := s.order.Head().Rev
	seen := make(map[*keyLog[V]]bool, len(d.unpublished))
	for i := range d.unpublished {
		kl := d.unpublished[i].kl
		if seen[kl] {
			continue
		}
		seen[kl] = true
		last, _ := kl.log.Last()
		pub, st := kl.log.At(h)
		var was *revlog.Entry[V]
		if st == revlog.Found {
			was = &pub
		}
		live += liveAndDue(last, now, false) - liveAndDue(was, now, false)
		due += liveAndDue(last, now, true) - liveAndDue(was, now, true)
	}
	return live, due
}

// liveAndDue is 1 if e is an OpPut (whose TTL is due at now, if due), else 0.
func liveAndDue[V any](e *revlog.Entry[V], now int64, due bool) int {
	if e == nil || e.Op != revlog.Put || due && (!e.HasTTL || e.Expires > now) {
		return 0
	}
	return 1
}

// discardLocked forgets a failed drain: nothing of it is published, and
// the store writes no more.
func (d *disk[V]) discardLocked() {
	clear(d.unpublished)
	d.unpublished = d.unpublished[:0]
	for _, kl := range d.trims {
		kl.drop = 0
	}
	clear(d.trims)
	d.trims = d.trims[:0]
	clear(d.newKeys)
}

// cap is trimKeyLocked during a drain: the entries it would drop are
// counted in kl.drop and dropped at publication, so that readers at the
// published head lose nothing before the drain's revisions are theirs,
// while the cap cuts exactly where it would without a drain.
func (d *disk[V]) cap(s *state[V], kl *keyLog[V]) {
	es := kl.log.Entries()[kl.drop:]
	drop := len(es) - max(s.opts.maxHistory, 1)
	if i := sort.Search(len(es), func(i int) bool { return es[i].Rev > s.oldestPin }) - 1; i < drop {
		drop = max(i, 0) // keep the entry visible at the oldest view, and all after
	}
	if drop > 0 {
		if kl.drop == 0 {
			d.trims = append(d.trims, kl)
		}
		kl.drop += int32(drop)
	}
}

// applyDeferredTrimsLocked drops what cap counted, once the drain is
// published; logDeferredTrimsLocked logged it. A view opened while the
// drain synced may need an entry cap counted: it is kept, with all after
// it, until a trim after the view closes (the log's cut, which a replay
// makes, is then the one a trim would make with no view open).
func (d *disk[V]) applyDeferredTrimsLocked(s *state[V]) {
	for _, kl := range d.trims {
		es := kl.log.Entries()
		if i := sort.Search(len(es), func(i int) bool { return es[i].Rev > s.oldestPin }) - 1; i < int(kl.drop) {
			kl.drop = int32(max(i, 0))
		}
		if kl.drop == 0 {
			continue
		}
		kl.mu.Lock()
		lo := es[kl.drop].Rev
		kl.log.DropBefore(lo)
		kl.mu.Unlock()
		kl.drop = 0
		s.refreshSlotLocked(kl)
		if lo > s.trimFloor {
			s.trimFloor = lo
			s.publishFloorLocked()
		}
	}
	clear(d.trims)
	d.trims = d.trims[:0]
}
