package revkv

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/revkv/revkv/vfs"
	"github.com/revkv/revkv/wal"
)

// A store on a directory (Open) is the in-memory store plus a log of every
// revision, compaction and trim (package wal), and snapshots that let the
// log be deleted. The root wires them in at the commit point:
//
//   - Every write call, Update and purge is a request, in every sync mode.
//     Requests queue, and the first writer to find no leader drains the
//     queue: under the write lock it runs each request in turn (each sees
//     the ones before it), hands their records to the operating system with
//     one write(2), syncs once (SyncAlways only), and only then publishes
//     their revisions to readers, in order. So writers that arrive together
//     share a write and a sync; no write returns, and no reader sees a
//     revision, before its record is in the operating system's hands (a
//     crash of the process alone loses nothing acknowledged, in any mode),
//     and under SyncAlways before it is on stable storage. Revisions are
//     assigned but not published during a drain (mvcc.Order's Assign and
//     Publish); index slots, the new keys' entries in the index and the
//     history cap wait for the publication.
//   - Compactions and trims are written as they happen. Under SyncAlways,
//     Compact and Trim sync before they return, and the history cap's cuts
//     ride in the write of the drain that made them; the background
//     trimmer's cuts wait for the next sync (a power cut may undo them, and
//     the history they dropped is then answered again, correctly).
//   - A checkpoint rotates the log to a new segment at the head (syncing
//     the old one first, beside the drains, under SyncInterval and
//     SyncNever, so that the rotation's own sync holds them up only
//     briefly), then writes the retained state as of the head while
//     writers go on, reading each key's log under that key's lock (no pin:
//     a cut made meanwhile is also in the new segment, and replays to the
//     same log), and then deletes the segments and snapshots it covers and
//     syncs the directory.
//   - Under SyncInterval the syncer goroutine syncs the log every
//     WithSyncInterval, beside the drains (wal.Writer lets a sync and a
//     write run together), so a machine crash loses at most that
//     interval's writes. Under SyncNever nothing syncs but Sync, Close and
//     checkpoints: a machine crash loses what the operating system had not
//     written back.
//   - A failed write or sync stops the store's writes for good: nothing of
//     the failed drain is published, and every later write returns the
//     error. Reads go on; Close returns it. (Under SyncInterval the writes
//     a failed background sync covered were already answered.)

// durability is the log of a store on a directory.
type durability[V any] struct {
	dir   string
	codec Codec[V]
	fs    vfs.FS
	lock  io.Closer   // holds the directory's lock until close
	w     *wal.Writer // records are buffered under state.mu; see wal.Writer

	// qmu guards queue and leading. It is taken alone, never with mu.
	qmu     sync.Mutex
	queue   []*request[V]
	leading bool

	// Guarded by state.mu.
	draining  bool                  // a drain runs: publication is deferred
	replaying bool                  // Open applies the log: nothing is logged or capped
	pending   []slotUpdate[V]       // index slots the drain publishes, in order
	newKeys   map[string]*keyLog[V] // keys the drain created, not yet in the index
	touched   []string              // keys the drain wrote, whose watchers publication wakes
	trims     []*keyLog[V]          // keys whose history cap cut waits for publication (keyLog.drop)
	batch     wal.Batch
	payload   []byte       // the batch's encoded values
	rec       []byte       // a trim record being logged: logLocked copies it out
	stale     []*keyLog[V] // keys whose slot the log replay has yet to set (keyLog.stale)

	logged atomic.Int64 // bytes logged since the last checkpoint
	// snapBytes is the size of the newest snapshot: a checkpoint waits for
	// at least as many bytes of log (see WithCheckpointBytes).
	snapBytes atomic.Int64
	ckptMu    sync.Mutex    // one checkpoint at a time, and none as close runs; taken before state.mu
	ckpt      chan struct{} // wakes the checkpointer
	failure   atomic.Pointer[error]
}

type slotUpdate[V any] struct {
	key string
	x   indexed[V]
}

// request is one write call waiting for a drain: a single write (key, d,
// op), or run for the others (Update, a purge batch).
type request[V any] struct {
	key      string
	d        expiry
	op       writeOp[V]
	run      func() (Revision, error)
	rev      Revision
	cur      int64 // a single write's key's current revision, for a conflict
	err      error
	panicked any
	done     chan struct{} // closed when the request is done, or made leader
	lead     bool          // set before done is closed: drain the queue
	// turn and back hand the drain's write lock to the submitter of a
	// request that runs its own code (Update's fn): the leader sends on turn
	// when the request's turn comes and waits on back. So fn never leaves
	// its caller's goroutine and stack, and a store made by New, which
	// shares Update, does not pay for it escaping.
	turn, back chan struct{}
}

// Open returns a store whose state lives in dir (created if missing) and
// survives a restart and a crash: it loads the newest snapshot, replays the
// log after it, cuts a torn last record, and goes on from Rev()+1. Nothing
// is expired during Open: expiries that fell due while the store was closed
// are written, at their exact times, by the first write, purge or expirer
// tick after it. Open uses every core (up to six goroutines): it reads and
// checks each file on one, decodes a snapshot's keys on up to four, and
// replays the log on two; the codec's Decode runs on all of them.
//
// A directory another store holds is ErrLocked; damaged files, an unknown
// format version or a value codec cannot decode are ErrCorrupt, naming the
// file and offset, and Open changes nothing on disk (unless WithRepair
// asks it to cut a damaged log). The options of New apply, and WithSync,
// WithSyncInterval, WithCheckpointBytes and WithRepair.
func Open[V any](dir string, codec Codec[V], opts ...Option) (*Store[V], error) {
	o := build(opts)
	fail := func(err error) (*Store[V], error) { return nil, &OpError{Op: "open", Key: dir, Err: err} }
	if codec == nil {
		return fail(errors.New("nil codec"))
	}
	if err := makeDir(o.fs, dir); err != nil {
		return fail(err)
	}
	lock, err := o.fs.Lock(dir)
	if errors.Is(err, vfs.ErrLocked) {
		return fail(ErrLocked)
	}
	if err != nil {
		return fail(err)
	}
	defer func() {
		if p := recover(); p != nil { // a codec's: the directory is free again
			lock.Close()
			panic(p)
		}
	}()
	st := newState[V](o)
	d := &durability[V]{fs: o.fs, dir: dir, codec: codec, lock: lock, newKeys: map[string]*keyLog[V]{}, ckpt: make(chan struct{}, 1)}
	st.d = d
	tail, err := st.recover()
	if err == nil {
		d.w, err = wal.OpenWriter(o.fs, dir, tail, st.order.Next())
	}
	if err != nil {
		lock.Close()
		var c *wal.Corruption
		if errors.As(err, &c) {
			err = corruption(c)
		}
		return fail(err)
	}
	// The keys compactions removed before this Open are not known, but
	// their tombstones were below the last compaction (compactKeyLocked): a
	// Changes from below it is ErrCompacted, one from it (Floor) is not.
	st.removals, st.removedFloor = nil, max(st.compactRev-1, 0)
	st.removedMax.Store(st.removedFloor)
	return st.start(), nil
}

// makeDir creates dir and the directories above it that are missing,
// durably: the parent of each one created is synced, and dir's own parent
// always is (an Open that created dir may have crashed before syncing it),
// so that a machine crash cannot take the directory, and every write in
// it, away. It costs Open one sync of the parent.
func makeDir(fsys vfs.FS, dir string) error {
	dir = filepath.Clean(dir)
	parents := []string{filepath.Dir(dir)}
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := fsys.List(d); !errors.Is(err, fs.ErrNotExist) {
			break // there (or not ours to make: MkdirAll says why)
		}
		if d != dir {
			parents = append(parents, filepath.Dir(d))
		}
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	for _, p := range parents { // deepest first
		if err := fsys.SyncDir(p); err != nil {
			return err
		}
	}
	return nil
}

// start starts the checkpointer and, under SyncInterval, the syncer.
func (d *durability[V]) start(s *state[V]) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		for {
			select {
			case <-s.stop:
				return
			case <-d.ckpt:
				s.checkpoint() // its error, if any, stops the store and is Close's
			}
		}
	}()
	if s.opts.sync == SyncInterval {
		s.bg.Add(1)
		go s.every(s.opts.syncInterval, func() { d.sync() }) // the syncer; its error is every later write's
	}
}

// err returns the failure that stopped the store's writes, if any.
func (d *durability[V]) err() error {
	if e := d.failure.Load(); e != nil {
		return *e
	}
	if d.w != nil {
		if err := d.w.Err(); err != nil {
			return d.fail(err)
		}
	}
	return nil
}

func (d *durability[V]) fail(err error) error {
	d.failure.CompareAndSwap(nil, &err)
	return d.err()
}

// sync makes everything written so far durable.
func (d *durability[V]) sync() error {
	if err := d.err(); err != nil {
		return err
	}
	if err := d.w.Sync(); err != nil {
		return d.fail(err)
	}
	return nil
}

// close syncs and closes the log and releases the directory; it runs once,
// after the goroutines stopped and with the store closed to writes, and
// after a Checkpoint under way ends.
func (d *durability[V]) close() error {
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	err := d.sync()
	if cerr := d.w.Close(); err == nil && cerr != nil {
		err = cerr
	}
	d.lock.Close()
	return err
}

// Sync makes everything the store has written so far durable. Under
// SyncAlways every write already is when it returns; Sync adds the
// compactions and trims logged since. It returns the failure that stopped
// the store's writes, if any; nil for a store made by New.
func (s *Store[V]) Sync() error {
	if s.d == nil {
		return nil
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed { // Close synced, or returned why it could not
		return nil
	}
	if err := s.d.sync(); err != nil {
		return &OpError{Op: "sync", Key: s.d.dir, Err: err}
	}
	return nil
}

// submit runs r as a request of the next drain and returns once it is
// published (or failed), with r's results set. See the comment at the top.
// mine, if not nil, is r's own code, run on this goroutine when r's turn
// comes, under the drain's lock.
func (s *state[V]) submit(r *request[V], mine func()) {
	d := s.d
	if err := d.err(); err != nil {
		r.err = err
		return
	}
	r.done = make(chan struct{})
	if mine != nil {
		r.turn, r.back = make(chan struct{}), make(chan struct{})
	}
	d.qmu.Lock()
	d.queue = append(d.queue, r)
	lead := !d.leading
	d.leading = true
	d.qmu.Unlock()
	if !lead {
	wait:
		for {
			select {
			case <-r.turn:
				runMine(r, mine)
				r.back <- struct{}{}
			case <-r.done:
				break wait
			}
		}
		lead = r.lead
	}
	if lead {
		d.qmu.Lock()
		batch := d.queue
		d.queue = nil
		d.qmu.Unlock()
		s.drain(batch, r, mine)
		d.qmu.Lock()
		if len(d.queue) > 0 {
			next := d.queue[0] // hand the lead on: this writer has its answer
			next.lead = true
			close(next.done)
		} else {
			d.leading = false
		}
		d.qmu.Unlock()
	}
	if r.panicked != nil {
		panic(r.panicked)
	}
}

// submitRun submits run as a request and returns its results.
func (s *state[V]) submitRun(run func() (Revision, error)) (Revision, error) {
	r := &request[V]{run: run}
	s.submit(r, nil)
	return r.rev, r.err
}

// runMine runs a request's own code, catching a panic for its submitter.
func runMine[V any](r *request[V], mine func()) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked = p
		}
	}()
	mine()
}

// drain runs batch under the write lock, logs it with one write and (under
// SyncAlways) one sync, and publishes it. self is the leader's own request,
// which needs no wake-up.
func (s *state[V]) drain(batch []*request[V], self *request[V], mine func()) {
	d := s.d
	s.mu.Lock()
	d.draining = true
	for _, r := range batch {
		switch {
		case d.err() != nil:
			r.err = d.err()
		case r == self && mine != nil:
			runMine(r, mine)
		case r.turn != nil: // its submitter runs it, under this lock
			r.turn <- struct{}{}
			<-r.back
		default:
			s.runRequest(r)
		}
	}
	err := d.err()
	if err == nil {
		s.logDeferredTrimsLocked()
	}
	if err == nil && d.w.Buffered() > 0 {
		var n int
		n, err = d.w.Flush()
		if err == nil && s.opts.sync == SyncAlways {
			err = d.w.Sync()
		}
		d.logged.Add(int64(n))
	}
	if err != nil {
		err = d.fail(err)
		for _, r := range batch {
			if r.err == nil && r.panicked == nil {
				r.rev, r.err = 0, err
			}
		}
		d.pending, d.touched = d.pending[:0], d.touched[:0]
		for _, kl := range d.trims {
			kl.drop = 0
		}
		d.trims = d.trims[:0]
		clear(d.newKeys)
		d.draining = false
	} else {
		s.publishLocked()
	}
	s.mu.Unlock()
	for _, r := range batch {
		if r != self {
			close(r.done)
		}
	}
	d.checkpointIfDue(s.opts.checkpointBytes)
}

// checkpointIfDue wakes the checkpointer once limit bytes, and at least as
// many as the newest snapshot holds, were logged since the last checkpoint.
func (d *durability[V]) checkpointIfDue(limit int64) {
	if n := d.logged.Load(); n >= limit && n >= d.snapBytes.Load() {
		select {
		case d.ckpt <- struct{}{}:
		default:
		}
	}
}

func (s *state[V]) runRequest(r *request[V]) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked = p
		}
	}()
	switch { // drain checked the store's failure before the call
	case r.run != nil:
		r.rev, r.err = r.run()
	default:
		r.rev, r.cur, r.err = s.writeLocked(r.key, &r.d, &r.op)
	}
}

// publishLocked makes a drain's revisions visible, with their index slots,
// in one step, then drops what the history cap cut during the drain.
func (s *state[V]) publishLocked() {
	d := s.d
	first := s.order.Head().Rev + 1 // the drain's first revision
	s.indexMu.Lock()
	for _, p := range d.pending {
		s.index[p.key] = p.x
	}
	s.order.Publish()
	s.indexMu.Unlock()
	if s.watch.n.Load() > 0 {
		for _, k := range d.touched {
			s.watch.notifyKey(k, first)
		}
	}
	clear(d.touched)
	d.touched = d.touched[:0]
	clear(d.pending)
	d.pending = d.pending[:0]
	clear(d.newKeys)
	d.draining = false
	s.applyDeferredTrimsLocked()
}
