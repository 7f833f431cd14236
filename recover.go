package revkv

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/revkv/revkv/mvcc"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/wal"
)

// recover loads the newest snapshot and replays the log after it into an
// empty state, and returns where the log ends. Every record is checked
// before it changes anything: a record the store could not have written
// (revisions out of order, a time that goes back, a value the codec cannot
// decode) is an error that wal turns into a *wal.Corruption naming the file
// and offset. With WithRepair, damage in the log cuts it there instead.
func (s *state[V]) recover() (wal.Tail, error) {
	d := s.d
	d.replaying = true
	defer func() { d.replaying = false }()
	s.mu.Lock()
	defer s.mu.Unlock()
	snaps, err := wal.Snapshots(d.fs, d.dir)
	if err != nil {
		return wal.Tail{}, err
	}
	from := int64(1)
	if n := len(snaps); n > 0 {
		at := snaps[n-1]
		if err := s.loadSnapshot(at, s.logShare(at)); err != nil {
			return wal.Tail{}, err
		}
		if s.order.Last().Rev != at {
			return wal.Tail{}, fmt.Errorf("snapshot %s holds revision %d: %w", wal.SnapshotName(at), s.order.Last().Rev, ErrCorrupt)
		}
		from = at + 1
	}
	tail, err := s.replayLog(from)
	var c *wal.Corruption
	if err != nil && s.opts.repair && errors.As(err, &c) && c.Frame {
		// The state holds every record before the damaged one: cut there.
		// A whole record the store refuses (a value the codec cannot
		// decode) is not damage to cut: a repair would throw away every
		// later revision for a codec's mistake.
		return wal.CutLog(d.fs, d.dir, c)
	}
	return tail, err
}

// corruption is ErrCorrupt saying where and why, for Open's error:
//
//	revkv: open "db": corrupt data (db/0000000000000001.log at offset 1893: checksum mismatch)
func corruption(c *wal.Corruption) error {
	return detail(ErrCorrupt, "", fmt.Sprintf("%s at offset %d: %s", c.File, c.Offset, c.Why))
}

// logShare returns the size of the log after the snapshot of revision at
// over the snapshot's, at most 1: about how much the snapshot's keys will
// grow as the log is replayed, if its writes fall on them as the
// snapshot's did. The snapshot's key logs are built with that much room
// (snapshotBuilder.key), so that the replay does not regrow, copy and
// garbage-collect most of them; a key the log does not write keeps room
// for no more entries than append's doubling would have left it. A file
// it cannot size makes it 0: it is a hint, and reading the files reports
// their errors.
func (s *state[V]) logShare(at int64) float64 {
	d := s.d
	snap, err := d.fs.Size(filepath.Join(d.dir, wal.SnapshotName(at)))
	if err != nil || snap <= 0 {
		return 0
	}
	log, err := wal.LogBytes(d.fs, d.dir, at+1)
	if err != nil {
		return 0
	}
	return min(1, float64(log)/float64(snap))
}

// replayLog replays the log from revision from on, on two goroutines: a
// loader reads, checks and decodes the records (the revisions in order,
// the times, the values), and Open's goroutine finds
// each key's log and commits the writes, many at a time. A trim needs the
// state to check, so the loader hands it over alone and waits for the
// answer, which it returns as the record's error (naming file and
// offset). The loader never touches the state: commitLocked sets the
// entries' times.
func (s *state[V]) replayLog(from int64) (wal.Tail, error) {
	d := s.d
	loads := make(chan *logLoad[V], 4)
	free := make(chan *logLoad[V], 5)
	answers := make(chan error) // to a trim
	var (
		tail     wal.Tail
		err      error
		panicked any
	)
	ld := logLoader[V]{s: s, last: s.order.Last()}
	go func() {
		defer close(loads)
		defer func() {
			if p := recover(); p != nil {
				panicked = p
			}
		}()
		var l *logLoad[V]
		send := func() {
			if l != nil {
				loads <- l
				l = nil
			}
		}
		tail, err = wal.Replay(d.fs, d.dir, from, func(kind wal.Kind, p []byte) error {
			d.logged.Add(int64(wal.FrameSize(len(p)))) // the next checkpoint counts it
			if l == nil {
				select {
				case l = <-free:
				default:
					l = new(logLoad[V])
				}
			}
			switch kind {
			case wal.KindBatch:
				if err := ld.batch(l, p); err != nil {
					return err
				}
				if len(l.changes) >= replayLoad {
					send()
				}
				return nil
			case wal.KindCompact:
				c, err := ld.compact(p)
				if err == nil {
					l.compacts = append(l.compacts, compactAt{c, len(l.batches)})
				}
				return err
			case wal.KindTrim:
				t, err := wal.DecodeTrim(p)
				if err != nil {
					return err
				}
				l.trim = &t
				send()
				return <-answers
			}
			return fmt.Errorf("a log record of unknown kind %d", kind)
		})
		send()
	}()
	for l := range loads {
		s.applyLoad(l)
		if l.trim != nil {
			answers <- s.applyTrim(*l.trim)
		}
		l.reset()
		select {
		case free <- l:
		default:
		}
	}
	if panicked != nil {
		panic(panicked)
	}
	for _, kl := range d.stale { // the slots commitLocked left behind
		kl.stale = false
		if kl.slot < len(s.slots) && s.slots[kl.slot] == kl { // not removed by a trim
			last, _ := kl.log.Last()
			s.index[kl.key] = indexedOf(kl, last)
		}
	}
	d.stale = nil
	return tail, err
}

// replayLoad is about how many writes the log loader hands over at a time.
const replayLoad = 512

// logLoad is what the log loader hands over: batches of writes, each with
// its time (decoded and checked, their logs not yet looked up), the
// compactions logged between them, and, last, a trim to apply and answer.
type logLoad[V any] struct {
	changes  []change[V]
	batches  []loadedBatch // in log order, over changes
	compacts []compactAt
	trim     *wal.Trim
}

type loadedBatch struct {
	t      time.Time
	lo, hi int // its changes are changes[lo:hi]
}

// compactAt is a logged compaction, which came after the first before
// batches of its load.
type compactAt struct {
	c      wal.Compact
	before int
}

func (l *logLoad[V]) reset() {
	clear(l.changes)
	l.changes, l.batches, l.compacts, l.trim = l.changes[:0], l.batches[:0], l.compacts[:0], nil
}

// logLoader reads a log's records in order and checks each against those
// before it.
type logLoader[V any] struct {
	s       *state[V]
	last    mvcc.Stamp // the last revision read, and its time
	decoder wal.BatchDecoder
	decoded wal.Batch // the decoder's buffer
}

// batch decodes and checks a batch record into l. A batch the snapshot
// already holds is skipped.
func (ld *logLoader[V]) batch(l *logLoad[V], p []byte) error {
	b, err := ld.decoder.Decode(ld.decoded, p)
	if err != nil {
		return err
	}
	ld.decoded = b
	defer clear(b) // its values point into the file's bytes
	last := ld.last
	switch {
	case len(b) == 0:
		return errors.New("an empty batch")
	case b[len(b)-1].Rev <= last.Rev:
		return nil
	case b[0].Rev != last.Rev+1:
		return fmt.Errorf("revision %d follows %d", b[0].Rev, last.Rev)
	}
	t, err := ld.s.timeOf(&b[0])
	if err != nil {
		return err
	}
	if t.Before(last.Time) {
		return fmt.Errorf("revision %d at %v is before revision %d at %v", b[0].Rev, t, last.Rev, last.Time)
	}
	lo := len(l.changes)
	for i := range b {
		x := &b[i]
		if x.Sec != b[0].Sec || x.Nsec != b[0].Nsec || x.Zone != b[0].Zone {
			l.changes = l.changes[:lo]
			return fmt.Errorf("revision %d: a batch of several times", x.Rev)
		}
		l.changes = append(l.changes, change[V]{key: x.Key, prev: -1})
		if err := ld.s.decodeEntry(&l.changes[len(l.changes)-1].e, x, t); err != nil {
			l.changes = l.changes[:lo]
			return err
		}
	}
	l.batches = append(l.batches, loadedBatch{t, lo, len(l.changes)})
	ld.last = mvcc.Stamp{Rev: b[len(b)-1].Rev, Time: t}
	return nil
}

// compact decodes and checks a compaction record.
func (ld *logLoader[V]) compact(p []byte) (wal.Compact, error) {
	c, err := wal.DecodeCompact(p)
	if err != nil {
		return c, err
	}
	if c.Rev < 1 || c.Rev > ld.last.Rev || c.Nsec < 0 || c.Nsec > 999_999_999 {
		return c, fmt.Errorf("compaction at %d of %d revisions", c.Rev, ld.last.Rev)
	}
	return c, nil
}

// applyLoad commits the batches of a load, with the compactions between
// them, at the revisions and times they were logged with.
func (s *state[V]) applyLoad(l *logLoad[V]) {
	cs := l.compacts
	for i, b := range l.batches {
		for len(cs) > 0 && cs[0].before == i {
			s.applyCompact(cs[0].c)
			cs = cs[1:]
		}
		s.applyBatch(l.changes[b.lo:b.hi], b.t)
	}
	for _, c := range cs {
		s.applyCompact(c.c)
	}
}

func (s *state[V]) applyCompact(c wal.Compact) {
	if c.Rev > s.compactRev {
		s.compactRev = c.Rev
		s.compaction.Store(&mark{rev: c.Rev, time: time.Unix(c.Sec, c.Nsec).UTC()})
		s.publishFloorLocked()
	}
}

// applyBatch commits a logged batch, checked, again: it finds each key's
// log, then commits the batch as it was.
func (s *state[V]) applyBatch(cs []change[V], t time.Time) {
	// fresh maps a key the store does not hold yet to the batch's last
	// write of it: its first write gets the key its log, and commitLocked
	// gives a later one that log through prev. A key the store holds has
	// its log already, so most writes never touch the map.
	var fresh map[string]int
	for i := range cs {
		c := &cs[i]
		if c.kl = s.lookupLocked(c.key); c.kl == nil && len(cs) > 1 {
			if j, ok := fresh[c.key]; ok {
				c.prev = j
			} else if fresh == nil {
				fresh = make(map[string]int)
			}
			fresh[c.key] = i
		}
	}
	s.commitLocked(cs, t)
}

// decodeEntry fills e from a logged entry at time t, checking what the
// store relies on: a known op, a TTL only on a put and after its time, a
// value the codec decodes. It leaves e's time to the caller: numbering the
// time's location in s.zones is for one goroutine at a time.
func (s *state[V]) decodeEntry(e *revlog.Entry[V], x *wal.Entry, t time.Time) error {
	e.Op, e.Rev = revlog.Op(x.Op), x.Rev
	if x.HasTTL && (e.Op != revlog.Put || x.Expires <= t.UnixNano() || x.Expires == math.MinInt64+1) {
		return fmt.Errorf("revision %d of %q: an impossible expiry", x.Rev, x.Key)
	}
	e.HasTTL, e.Expires = x.HasTTL, x.Expires
	if e.Op == revlog.Put {
		v, err := s.d.codec.Decode(x.Value)
		if err != nil {
			return fmt.Errorf("decoding revision %d of %q: %w", x.Rev, x.Key, err)
		}
		e.Value = v
	}
	return nil
}

// timeOf returns a logged entry's time in its location: UTC, Local, the
// named location if this machine has it with the same offset at that time,
// else a fixed zone of that name and offset.
func (s *state[V]) timeOf(x *wal.Entry) (time.Time, error) {
	if x.Nsec < 0 || x.Nsec > 999_999_999 {
		return time.Time{}, fmt.Errorf("revision %d: nanoseconds %d", x.Rev, x.Nsec)
	}
	t := time.Unix(x.Sec, int64(x.Nsec))
	switch x.Zone {
	case "":
		return t.UTC(), nil
	case "Local":
		return t.Local(), nil
	}
	if loc, err := time.LoadLocation(x.Zone); err == nil {
		if _, off := t.In(loc).Zone(); off == int(x.Offset) {
			return t.In(loc), nil
		}
	}
	return t.In(time.FixedZone(x.Zone, int(x.Offset))), nil
}

// applyTrim drops what a logged trim or compaction dropped. A key that is
// gone already (a snapshot taken after the trim) is skipped.
func (s *state[V]) applyTrim(t wal.Trim) error {
	kl := s.lookupLocked(t.Key)
	if kl == nil {
		return nil
	}
	last, _ := kl.log.Last()
	if t.Lo == 0 {
		if last.Op == revlog.Put {
			return fmt.Errorf("a trim removes %q, whose value is live", t.Key)
		}
		s.removeKeyLocked(kl)
		kl.log.CutBefore(last.Rev + 1) // above the tombstone: the log empties
		return nil
	}
	if t.Lo > last.Rev {
		return fmt.Errorf("a trim of %q to revision %d, past its newest %d", t.Key, t.Lo, last.Rev)
	}
	if kl.log.DropBefore(t.Lo) > 0 {
		s.refreshSlotLocked(kl)
	}
	// The log was cut there, whatever this replay held of it: a snapshot
	// written while the cut happened may hold none of what it dropped.
	kl.log.MarkTrimmed()
	kl.log.SetDropped(t.Dropped)
	if t.Count && t.Lo > s.trimFloor {
		s.trimFloor = t.Lo
		s.publishFloorLocked()
	}
	return nil
}

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
	d := s.d
	name := filepath.Join(d.dir, wal.SnapshotName(at))
	builders := max(1, min(runtime.GOMAXPROCS(0), 4))
	jobs := make(chan *snapshotJob, 2*builders)
	spare := make(chan *snapshotJob, 2*builders+1)
	loads := make(chan snapshotLoad[V], 2*builders)
	free := make(chan []restoredKey[V], 2*builders+1)
	var (
		stop atomic.Bool // a builder failed or panicked: the reader stops
		// mu guards failure and panicked, and is zmu for the builders.
		mu       sync.Mutex
		failure  *wal.Corruption
		panicked any
		size     int64 // of the file's records, for the checkpoint rule
		rerr     error // the reader's
		wg       sync.WaitGroup
	)
	for range builders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					mu.Lock()
					panicked = p
					mu.Unlock()
					stop.Store(true)
					for range jobs { // let the reader finish
					}
				}
			}()
			b := snapshotBuilder[V]{s: s, zmu: &mu, share: share}
			for j := range jobs {
				if stop.Load() {
					continue
				}
				var keys []restoredKey[V]
				select {
				case keys = <-free:
				default:
					keys = make([]restoredKey[V], 0, restoreBatch)
				}
				keys, off, err := b.build(j, keys)
				select {
				case spare <- j:
				default:
				}
				if err != nil {
					mu.Lock()
					if failure == nil || off < failure.Offset {
						failure = &wal.Corruption{File: name, Offset: off, Why: err.Error()}
					}
					mu.Unlock()
					stop.Store(true)
					continue
				}
				loads <- snapshotLoad[V]{keys: keys}
			}
		}()
	}
	go func() { // the reader
		defer func() {
			close(jobs)
			wg.Wait()
			close(loads)
		}()
		var (
			ld snapshotReader
			j  *snapshotJob
		)
		rerr = wal.ReadSnapshot(d.fs, d.dir, at, func(kind wal.Kind, p []byte, off int64) error {
			if stop.Load() {
				return errStopped
			}
			size += int64(wal.FrameSize(len(p)))
			switch kind {
			case wal.KindState:
				st, err := ld.state(p)
				if err == nil {
					loads <- snapshotLoad[V]{state: st}
				}
				return err
			case wal.KindKey:
				if err := ld.key(p); err != nil {
					return err
				}
				if j == nil {
					select {
					case j = <-spare:
					default:
						j = new(snapshotJob)
					}
					j.reset(ld.last)
				}
				if j.add(p, off) == restoreBatch {
					jobs <- j
					j = nil
				}
				return nil
			}
			return fmt.Errorf("a snapshot record of unknown kind %d", kind)
		})
		if j != nil && rerr == nil {
			jobs <- j
		}
	}()
	for l := range loads {
		if l.state != nil {
			s.restoreState(l.state)
		}
		for i := range l.keys {
			s.restoreKey(&l.keys[i])
		}
		if l.keys != nil {
			clear(l.keys)
			select {
			case free <- l.keys[:0]:
			default:
			}
		}
	}
	if panicked != nil {
		panic(panicked)
	}
	d.snapBytes.Store(size)
	if failure != nil { // before the reader's, which may be errStopped
		return failure
	}
	return rerr
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
	key string
	log revlog.Log[V]
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
	last int64  // the snapshot's revision, once its state record is read
	prev []byte // the last key read
	n    int    // keys read
}

// state decodes and checks the state record.
func (ld *snapshotReader) state(p []byte) (*wal.State, error) {
	st, err := wal.DecodeState(p)
	if err != nil {
		return nil, err
	}
	if st.Last < 0 || st.Last > 0 && (st.Base < 1 || st.Base > st.Last || int64(len(st.Times)) != st.Last-st.Base+1) {
		return nil, fmt.Errorf("a state of revision %d with %d times from %d", st.Last, len(st.Times), st.Base)
	}
	if st.CompactRev < 0 || st.CompactRev > st.Last || st.TrimFloor < 0 || st.TrimFloor > st.Last {
		return nil, fmt.Errorf("floors %d and %d above revision %d", st.CompactRev, st.TrimFloor, st.Last)
	}
	for i, t := range st.Times {
		if t.Nsec < 0 || t.Nsec > 999_999_999 {
			return nil, fmt.Errorf("the time of revision %d has %d nanoseconds", st.Base+int64(i), t.Nsec)
		}
		if i > 0 && (t.Sec < st.Times[i-1].Sec || t.Sec == st.Times[i-1].Sec && t.Nsec < st.Times[i-1].Nsec) {
			return nil, fmt.Errorf("the time of revision %d goes back", st.Base+int64(i))
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
		e.SetTimeIn(t, b.number(t.Location()))
		r.log.Append(e)
		prev, _ = r.log.Last()
	}
	if k.Trimmed {
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
	s.order.Restore(instantTime(st.First), st.Base, len(st.Times), at, mvcc.Stamp{Rev: st.Last, Time: instantTime(st.LastTime)})
	if st.CompactRev > 0 {
		s.compactRev = st.CompactRev
		s.compaction.Store(&mark{rev: st.CompactRev, time: instantTime(st.Compacted)})
	}
	s.trimFloor = st.TrimFloor
	s.publishFloorLocked()
}

// restoreKey enters a key a snapshot builder built into the state.
func (s *state[V]) restoreKey(r *restoredKey[V]) {
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
}
