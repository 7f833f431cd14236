package revkv

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/segment"
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
//     the ones before it); with the lock let go, it hands their records to
//     the operating system with one write(2) and syncs once (SyncAlways
//     only); and only then, under the lock again, publishes their
//     revisions to readers, in order. So writers that arrive together
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

// disk is the durability of a store on a directory: its log, and the
// group commit that writes it.
type disk[V any] struct {
	dir   string
	codec Codec[V]
	fs    vfs.FS
	lock  io.Closer   // holds the directory's lock until close
	w     *wal.Writer // records are buffered under state.mu; see wal.Writer

	// qmu guards queue, spare and leading. It is taken alone, never with
	// mu. spare is the array of the last drain's group, emptied, for the
	// queue after the next leader takes it: so a queue's array is not
	// allocated again for every drain.
	qmu     sync.Mutex
	queue   []*request[V]
	spare   []*request[V]
	leading bool

	// drainMu is held by a drain's leader from its first request to its
	// publication, across its write and sync, and by quiesce (lockQuiet):
	// taken after ckptMu and before state.mu.
	drainMu sync.Mutex

	// Guarded by state.mu, and changed only by the drain lock's holder.
	group       []*request[V]         // the requests of the running drain, the leader's first
	unpublished []change[V]           // the drain's commits, in order, to publish
	newKeys     map[string]*keyLog[V] // keys the drain created, not yet in the index
	trims       []*keyLog[V]          // keys whose history cap cut waits for publication (keyLog.drop)
	batch       wal.Batch
	payload     []byte       // the batch's encoded values
	rec         []byte       // a trim or compaction record being logged: the writer copies it out
	stale       []*keyLog[V] // keys whose slot the log replay has yet to set (keyLog.stale)

	logged atomic.Int64 // bytes logged since the last checkpoint
	// snapBytes is the size of the newest snapshot: a checkpoint waits for
	// at least as many bytes of log (see WithCheckpointBytes).
	snapBytes atomic.Int64
	ckptMu    sync.Mutex    // one checkpoint at a time, and none as close runs; taken before state.mu
	ckpt      chan struct{} // wakes the checkpointer
	failure   atomic.Pointer[error]
	mode      SyncMode  // WithSync
	readOnly  bool      // WithReadOnly: w is nil, and err says ErrReadOnly
	recovery  *Recovery // what Open found that was not whole records (recovery.go); set by Open

	// chainMu guards chain, the hash chain's digests (chain.go): writers
	// push under state.mu, readers (Digest) take it alone; a checkpoint
	// takes it under state.mu to freeze a copy.
	chainMu sync.Mutex
	chain   *chain.Seq
	// floorMark is D(floor-1) where the floor lies in sealed history,
	// guarded by chainMu: below the floor a compaction's sweep lets go of
	// annotations, so that a sealed digest is rehashed from no anchor
	// below it (seal_chain.go). ok is false until one is known.
	floorMark struct {
		digestMark
		ok bool
	}
	sweptFloor     int64          // guarded by chainMu: the floor floorMark was set at
	replayedUpkeep bool           // Open replayed a compaction or a trim (recover.go)
	hasher         chain.Hasher   // guarded by state.mu
	link           chain.Rev      // guarded by state.mu: the revision being hashed
	chained        wal.Chained    // guarded by state.mu: the batch record being made
	settled        []byte         // guarded by state.mu: settle's buffer
	digests        []chain.Digest // guarded by state.mu: the digests of the batch being recorded

	// The sealed tier (seal.go, sealed.go). tier is nil until the
	// directory has a manifest, and replaced whole by each seal; a reader
	// loads it after reading a key's log, so it sees every segment the
	// log's mark counts on. manifest is what the directory's manifest
	// says, guarded by ckptMu.
	tier     atomic.Pointer[sealed[V]]
	manifest segment.Manifest
	ixCache  *segment.Cache // bounds the segments' loaded indexes together (options.indexBudget)
}

// Open returns a store whose state lives in dir (created if missing) and
// survives a restart and a crash: it loads the newest snapshot, replays the
// log after it, cuts a torn last record (never in silence: Store.Recovery
// says what it cut), and goes on from Rev()+1. Nothing
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
	if o.readOnly {
		if o.repair {
			return fail(errors.New("WithRepair writes: not with WithReadOnly"))
		}
		if _, err := o.fs.List(dir); err != nil {
			return fail(err) // missing: a read-only Open creates nothing
		}
	} else if err := makeDir(o.fs, dir); err != nil {
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
	d := &disk[V]{fs: o.fs, dir: dir, codec: codec, lock: lock, newKeys: map[string]*keyLog[V]{}, ckpt: make(chan struct{}, 1), mode: o.sync, ixCache: segment.NewCache(o.indexBudget())}
	st.disk, st.dur = d, replay[V]{d}
	err = d.openTier(o.readOnly)
	var tail wal.Tail
	if err == nil {
		tail, err = st.recover()
	}
	if err == nil {
		err = d.tierWithin(st.order.Last().Rev)
	}
	st.dur = d
	if err == nil {
		d.setFloorMark(st.floor.Load())
	}
	d.tornTail(tail, st.order.Next(), !o.readOnly) // before OpenWriter cuts it
	if err == nil && !o.readOnly {
		d.w, err = wal.OpenWriter(o.fs, dir, tail, st.order.Next())
	}
	d.readOnly = o.readOnly
	if err != nil {
		if t := d.tier.Load(); t != nil {
			t.close()
		}
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

// start starts the checkpointer and, under SyncInterval, the syncer; a
// read-only store has neither.
func (d *disk[V]) start(s *state[V]) bool {
	if d.readOnly {
		return false
	}
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
	return true
}

// err returns the failure that stopped the store's writes, if any; for a
// store opened WithReadOnly, ErrReadOnly.
func (d *disk[V]) err() error {
	if d.readOnly {
		return ErrReadOnly
	}
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

func (d *disk[V]) fail(err error) error {
	d.failure.CompareAndSwap(nil, &err)
	return d.err()
}

// sync makes everything written so far durable.
func (d *disk[V]) sync() error {
	if err := d.err(); err != nil {
		return err
	}
	if err := d.w.Sync(); err != nil {
		return d.fail(err)
	}
	return nil
}

// quiesce waits for the drain in flight and holds off the next (group.go).
func (d *disk[V]) quiesce() { d.drainMu.Lock() }

func (d *disk[V]) resume() { d.drainMu.Unlock() }

// upkept syncs the compactions and trims logged so far under SyncAlways,
// so that a Compact or Trim is on stable storage when it returns, as a
// write is. (Trims of the background trimmer wait for the next sync: a
// crash that undoes one only keeps more history, which the next pass
// cuts.)
func (d *disk[V]) upkept() error {
	if d.mode != SyncAlways {
		return nil
	}
	return d.sync()
}

// close syncs and closes the log and releases the directory; it runs once,
// after the goroutines stopped and with the store closed to writes, and
// after a Checkpoint under way ends. A store that seals checkpoints first
// if anything was logged since its last checkpoint: the next Open then
// reads the snapshot and the manifest and replays nothing.
func (d *disk[V]) close(s *state[V]) error {
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	// The segments stay open: reads of a closed store still answer
	// (contract §6), and a segment never changes; the garbage collector
	// closes them with the store.
	if d.readOnly {
		return d.lock.Close()
	}
	var err error
	if s.opts.seals() && d.err() == nil {
		err = s.checkpointLocked(true)
	}
	if serr := d.sync(); err == nil {
		err = serr
	}
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
	if s.disk == nil {
		return nil
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || s.disk.readOnly { // Close synced, or returned why it could not; or nothing to sync
		return nil
	}
	if err := s.disk.sync(); err != nil {
		return &OpError{Op: "sync", Key: s.disk.dir, Err: err}
	}
	return nil
}
