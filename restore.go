package revkv

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/mvcc"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/wal"
)

// Open loads the newest snapshot (this file), then replays the log after
// it (recover.go).

// loadSnapshot loads the snapshot of revision at into an empty state. A
// reader goroutine reads the records and checks what needs the order of
// the file (the state record first, the keys increasing, which is how a
// key written twice is found); builder goroutines, each given a run of key
// records at a time, decode and check them and build each key's log (the
// codec, the times: most of the work); the caller enters the built keys
// into the index, tree and expiries, which cannot fail. A builder's error
// names its record's file and offset, as the reader's do; the first in
// the file wins. A codec's panic in a builder is raised again on the
// caller's goroutine. The builders are the only users of s.zones while
// they run, one at a time (zmu). Each key's log gets room for share more
// of its entries (logShare).
func (s *state[V]) loadSnapshot(at int64, share float64) error {
	d := s.disk
	builders := max(1, min(runtime.GOMAXPROCS(0), 4))
	l := &snapshotLoader[V]{
		s: s, at: at, name: filepath.Join(d.dir, wal.SnapshotName(at)),
		jobs:  make(chan *snapshotJob, 2*builders),
		spare: make(chan *snapshotJob, 2*builders+1),
		loads: make(chan snapshotLoad[V], 2*builders),
		free:  make(chan []restoredKey[V], 2*builders+1),
	}
	if t := d.tier.Load(); t != nil {
		l.ld.sealed = t.last()
	}
	for range builders {
		l.wg.Go(func() { l.build(share) })
	}
	go l.read()
	snapSize, _ := d.fs.Size(l.name) // bounds the state record's key count
	noted := l.apply(snapSize)
	if l.panicked != nil {
		panic(l.panicked)
	}
	if l.rerr == nil && l.failure == nil {
		if err := s.restoreChain(l.ld.chain, l.ld.spans, noted); err != nil {
			l.rerr = &wal.Corruption{File: l.name, Offset: l.size, Why: err.Error()}
		} else {
			d.setFloorMark(s.floor.Load())
		}
	}
	d.snapBytes.Store(l.size)
	if l.failure != nil { // before the reader's, which may be errStopped
		return l.failure
	}
	return l.rerr
}

// snapshotLoader is one loadSnapshot: its reader, builders and the
// channels between them and the caller.
type snapshotLoader[V any] struct {
	s        *state[V]
	at       int64
	name     string
	jobs     chan *snapshotJob     // the reader's runs of key records, to the builders
	spare    chan *snapshotJob     // jobs the builders are done with, for the reader
	loads    chan snapshotLoad[V]  // the state record and the built keys, to the caller
	free     chan []restoredKey[V] // key batches the caller is done with, for the builders
	stop     atomic.Bool           // a builder failed or panicked: the reader stops
	wg       sync.WaitGroup        // the builders
	mu       sync.Mutex            // guards failure and panicked; the builders' zmu
	failure  *wal.Corruption       // the first builder's error in the file
	panicked any                   // a builder's panic, raised again by the caller
	// The reader's, read by the caller once loads is closed: the
	// builders read ld's chain and spans, which it completes before it
	// hands over the first key.
	ld   snapshotReader
	size int64 // of the file's records, for the checkpoint rule
	rerr error
}

// build is a builder goroutine: it decodes and checks each job's key
// records into keys for the caller. A panic (a codec's) stops the reader
// and is kept for the caller.
func (l *snapshotLoader[V]) build(share float64) {
	defer func() {
		if p := recover(); p != nil {
			l.mu.Lock()
			l.panicked = p
			l.mu.Unlock()
			l.stop.Store(true)
			for range l.jobs { // let the reader finish
			}
		}
	}()
	b := snapshotBuilder[V]{s: l.s, zmu: &l.mu, share: share, chain: &l.ld}
	for j := range l.jobs {
		if l.stop.Load() {
			continue
		}
		var keys []restoredKey[V]
		select {
		case keys = <-l.free:
		default:
			keys = make([]restoredKey[V], 0, restoreBatch)
		}
		keys, off, err := b.build(j, keys)
		select {
		case l.spare <- j:
		default:
		}
		if err != nil {
			l.mu.Lock()
			if l.failure == nil || off < l.failure.Offset {
				l.failure = &wal.Corruption{File: l.name, Offset: off, Why: err.Error()}
			}
			l.mu.Unlock()
			l.stop.Store(true)
			continue
		}
		l.loads <- snapshotLoad[V]{keys: keys}
	}
}

// read is the reader goroutine: it reads the records in order, checks
// what needs that order, and hands runs of key records to the builders;
// it closes loads once they are done.
func (l *snapshotLoader[V]) read() {
	defer func() {
		close(l.jobs)
		l.wg.Wait()
		close(l.loads)
	}()
	var j *snapshotJob
	ld := &l.ld
	l.rerr = wal.ReadSnapshot(l.s.disk.fs, l.s.disk.dir, l.at, func(kind wal.Kind, p []byte, off int64) error {
		if l.stop.Load() {
			return errStopped
		}
		l.size += int64(wal.FrameSize(len(p)))
		switch kind {
		case wal.KindState:
			st, err := ld.state(p)
			if err == nil {
				l.loads <- snapshotLoad[V]{state: st}
			}
			return err
		case wal.KindDigests:
			return ld.digests(p)
		case wal.KindNotes:
			return ld.notes(p)
		case wal.KindKey:
			if ld.chain != nil && !ld.chainDone {
				if err := ld.endChain(); err != nil {
					return err
				}
			}
			if err := ld.key(p); err != nil {
				return err
			}
			if j == nil {
				select {
				case j = <-l.spare:
				default:
					j = new(snapshotJob)
				}
				j.reset(ld.last)
			}
			if j.add(p, off) == restoreBatch {
				l.jobs <- j
				j = nil
			}
			return nil
		}
		return fmt.Errorf("a snapshot record of unknown kind %d", kind)
	})
	if j != nil && l.rerr == nil {
		l.jobs <- j
	}
	if l.rerr == nil && ld.chain != nil && !ld.chainDone {
		if err := ld.endChain(); err != nil { // a snapshot without keys
			l.rerr = &wal.Corruption{File: l.name, Offset: l.size, Why: err.Error()}
		}
	}
}

// apply enters what the builders built into the state as it comes, which
// cannot fail, and returns the annotated revisions of the keys.
func (l *snapshotLoader[V]) apply(snapSize int64) []notedRev[V] {
	s := l.s
	var noted []notedRev[V]
	for ld := range l.loads {
		if ld.state != nil {
			s.restoreState(ld.state)
			s.reserveKeys(min(ld.state.Keys, snapSize/minKeyRecord))
		}
		for i := range ld.keys {
			kl := s.restoreKey(&ld.keys[i])
			for _, r := range ld.keys[i].noted {
				noted = append(noted, notedRev[V]{r, kl})
			}
		}
		if ld.keys != nil {
			clear(ld.keys)
			select {
			case l.free <- ld.keys[:0]:
			default:
			}
		}
	}
	return noted
}

// minKeyRecord is fewer bytes than any key record takes in a snapshot
// file: its frame and one entry.
const minKeyRecord = 16

// reserveKeys makes room for n keys in an empty index, as many as a
// snapshot's state record says follow: the index is made once, not grown
// and rehashed a dozen times.
func (s *state[V]) reserveKeys(n int64) {
	if n <= 0 || len(s.index) > 0 {
		return
	}
	s.index = make(map[string]indexed[V], n)
	s.slots = slices.Grow(s.slots, int(n))
}

// errStopped stops the snapshot reader after a builder's failure.
var errStopped = errors.New("stopped")

// restoreBatch is how many keys a snapshot builder is given at a time.
const restoreBatch = 256

// snapshotLoad is what the snapshot's reader or builders hand over: the
// state record, or keys.
type snapshotLoad[V any] struct {
	state *wal.State
	keys  []restoredKey[V]
}

// restoredKey is a key of a snapshot with its log, built and checked.
type restoredKey[V any] struct {
	key   string
	log   revlog.Log[V]
	noted []int64 // its annotated revisions
}

// snapshotJob is a run of a snapshot's key records for a builder: copies
// of their payloads, one after the other, and their offsets in the file.
type snapshotJob struct {
	last int64 // the snapshot's revision
	buf  []byte
	ends []int // where each payload ends in buf
	offs []int64
}

func (j *snapshotJob) reset(last int64) {
	j.last, j.buf, j.ends, j.offs = last, j.buf[:0], j.ends[:0], j.offs[:0]
}

// add copies a record in and returns how many the job holds.
func (j *snapshotJob) add(p []byte, off int64) int {
	j.buf = append(j.buf, p...)
	j.ends, j.offs = append(j.ends, len(j.buf)), append(j.offs, off)
	return len(j.ends)
}

// snapshotReader checks each record of a snapshot against those before it.
type snapshotReader struct {
	sealed int64  // the last revision the segments hold (0: none)
	last   int64  // the snapshot's revision, once its state record is read
	prev   []byte // the last key read
	n      int    // keys read
	// The hash chain's digests and the annotated commits, which come
	// before the keys; complete (chainDone) at the first key.
	chain     *chain.Seq
	chainDone bool
	spans     []wal.Notes
}

// state decodes and checks the state record.
func (ld *snapshotReader) state(p []byte) (*wal.State, error) {
	st, err := wal.DecodeState(p)
	if err != nil {
		return nil, err
	}
	if st.Last < 0 || st.Last > 0 && (st.Base < 1 || st.Base > st.Last || int64(len(st.Times)) != st.Last-st.Held+1) {
		return nil, fmt.Errorf("a state of revision %d with %d times from %d", st.Last, len(st.Times), st.Held)
	}
	if st.CompactRev < 0 || st.CompactRev > st.Last || st.TrimFloor < 0 || st.TrimFloor > st.Last {
		return nil, fmt.Errorf("floors %d and %d above revision %d", st.CompactRev, st.TrimFloor, st.Last)
	}
	if floor := max(st.CompactRev, st.TrimFloor); st.Base > max(floor, 1) {
		// A store keeps the times from its floor (or below) on: a state
		// that says otherwise would have Open index revisions it has no
		// record of.
		return nil, fmt.Errorf("times from revision %d, above the floor %d", st.Base, floor)
	}
	if st.Held > st.Base && st.Held-1 > ld.sealed {
		// The times of Base..Held-1 are the segments' to answer for.
		return nil, fmt.Errorf("times from revision %d held elsewhere, but the segments end at %d", st.Held, ld.sealed)
	}
	for i, t := range st.Times {
		if t.Nsec < 0 || t.Nsec > 999_999_999 {
			return nil, fmt.Errorf("the time of revision %d has %d nanoseconds", st.Held+int64(i), t.Nsec)
		}
		if i > 0 && (t.Sec < st.Times[i-1].Sec || t.Sec == st.Times[i-1].Sec && t.Nsec < st.Times[i-1].Nsec) {
			return nil, fmt.Errorf("the time of revision %d goes back", st.Held+int64(i))
		}
	}
	ld.last = st.Last
	return st, nil
}

// key checks that a key record's key comes after the last one's: a
// checkpoint writes them in increasing order.
func (ld *snapshotReader) key(p []byte) error {
	k, err := wal.KeyOf(p)
	if err != nil {
		return err
	}
	if ld.n > 0 {
		switch c := bytes.Compare(k, ld.prev); {
		case c == 0:
			return fmt.Errorf("key %q twice", k)
		case c < 0:
			return fmt.Errorf("key %q after %q", k, ld.prev)
		}
	}
	ld.prev, ld.n = append(ld.prev[:0], k...), ld.n+1
	return nil
}

// snapshotBuilder decodes and checks key records and builds their logs.
type snapshotBuilder[V any] struct {
	s   *state[V]
	zmu *sync.Mutex // taken to number a location in s.zones
	k   wal.Key     // decoded into again for every key
	// share is the room each key's log gets for the log's replay, as a
	// share of its entries (logShare).
	share float64
	// the location numbered last, and its number
	loc  *time.Location
	zone revlog.Zone
	// chain has the snapshot's digests and annotations, to check each
	// entry against.
	chain  *snapshotReader
	hasher chain.Hasher
	link   chain.Rev
}

// build builds the keys of j into keys, or returns the offset of the first
// record that fails, and why.
func (b *snapshotBuilder[V]) build(j *snapshotJob, keys []restoredKey[V]) ([]restoredKey[V], int64, error) {
	start := 0
	for i, end := range j.ends {
		r, err := b.key(j.buf[start:end], j.last)
		if err != nil {
			return keys, j.offs[i], err
		}
		keys = append(keys, r)
		start = end
	}
	return keys, 0, nil
}

// key decodes and checks a key record and builds the key's log.
func (b *snapshotBuilder[V]) key(p []byte, last int64) (restoredKey[V], error) {
	s, k := b.s, &b.k
	defer clear(k.Entries)
	if err := wal.DecodeKeyInto(k, p); err != nil {
		return restoredKey[V]{}, err
	}
	if len(k.Entries) == 0 {
		return restoredKey[V]{}, fmt.Errorf("key %q without entries", k.Key)
	}
	r := restoredKey[V]{key: k.Key}
	n := len(k.Entries)
	r.log.Grow(n + 1 + int(float64(n)*b.share)) // and room for an expiry, as Append leaves
	var prev *revlog.Entry[V]
	for i := range k.Entries {
		x := &k.Entries[i]
		t, err := s.timeOf(x)
		if err != nil {
			return restoredKey[V]{}, err
		}
		if x.Rev < 1 || x.Rev > last || prev != nil && (x.Rev <= prev.Rev || t.Before(prev.Time(&s.zones))) {
			return restoredKey[V]{}, fmt.Errorf("key %q: entry at revision %d out of order", k.Key, x.Rev)
		}
		var e revlog.Entry[V]
		if err := s.decodeEntry(&e, x, t); err != nil {
			return restoredKey[V]{}, err
		}
		if err := b.check(&r, x); err != nil {
			return restoredKey[V]{}, err
		}
		e.SetTimeIn(t, b.number(t.Location()))
		r.log.Append(e)
		prev, _ = r.log.Last()
	}
	switch {
	case k.Sealed:
		if err := s.checkSealed(k, last); err != nil {
			return restoredKey[V]{}, err
		}
		r.log.MarkSealed(k.Lo, k.Trimmed)
		r.log.SetDropped(k.Dropped)
	case k.Trimmed:
		r.log.MarkTrimmed()
		r.log.SetDropped(k.Dropped)
	}
	return r, nil
}

// number returns loc's number in s.zones, numbering it if it is new.
func (b *snapshotBuilder[V]) number(loc *time.Location) revlog.Zone {
	if loc == time.UTC {
		return 0
	}
	if loc != b.loc {
		b.zmu.Lock()
		b.loc, b.zone = loc, b.s.zones.Number(loc)
		b.zmu.Unlock()
	}
	return b.zone
}

func instantTime(i wal.Instant) time.Time { return time.Unix(i.Sec, int64(i.Nsec)).UTC() }

// restoreState sets an empty state to a checked state record.
func (s *state[V]) restoreState(st *wal.State) {
	at := func(i int) (int64, int32) { return st.Times[i].Sec, st.Times[i].Nsec }
	s.order.Restore(instantTime(st.First), st.Base, st.Held, len(st.Times), at, mvcc.Stamp{Rev: st.Last, Time: instantTime(st.LastTime)})
	if st.CompactRev > 0 {
		s.compactRev = st.CompactRev
		s.compaction.Store(&mark{rev: st.CompactRev, time: instantTime(st.Compacted)})
	}
	s.trimFloor = st.TrimFloor
	s.publishFloorLocked()
}

// restoreKey enters a key a snapshot builder built into the state.
func (s *state[V]) restoreKey(r *restoredKey[V]) *keyLog[V] {
	kl := s.addKeyLocked(r.key)
	kl.log = r.log
	last, _ := kl.log.Last()
	s.index[r.key] = indexedOf(kl, last)
	if last.Op == revlog.Put {
		s.liveKeys++
		if last.HasTTL {
			s.expiry.Add(r.key, last.Expires, kl)
		}
	}
	return kl
}
