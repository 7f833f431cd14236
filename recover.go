package revkv

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/revkv/revkv/chain"
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
	d := s.disk
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
	if d.chain == nil { // no snapshot, or one written before the chain began there
		d.chain = chain.NewSeq(from-1, chain.Digest{})
	}
	// The chain's index of revisions (disk.forget), from as low as its
	// digests reach.
	s.buildRevKeysLocked(min(s.keepLocked()-1, d.chain.Base()))
	tail, err := s.replayLog(from)
	if err == nil && s.floor.Load() > 0 {
		// A compaction replays as its mark, then the trims logged after
		// it: what the mark's forget kept for the entries those trims
		// dropped goes now, as the live compaction's sweep let it go.
		// Without either in the log, the snapshot's chain is the one its
		// checkpoint kept after the last sweep: a sweep now would keep
		// the same digests, and would read each key's kept sealed entries
		// to find them out.
		if d.replayedUpkeep {
			d.swept(s)
		}
		s.sweepNotesLocked()
	}
	var c *wal.Corruption
	if err != nil && s.opts.repair && errors.As(err, &c) && c.Frame {
		// The state holds every record before the damaged one: cut there.
		// A whole record the store refuses (a value the codec cannot
		// decode) is not damage to cut: a repair would throw away every
		// later revision for a codec's mistake.
		before := d.damagedFiles()
		tail, err := wal.CutLog(d.fs, d.dir, c)
		if err == nil {
			d.repaired(c, s.order.Next(), before)
		}
		return tail, err
	}
	return tail, err
}

// corruption is ErrCorrupt saying where and why, for Open's error:
//
//	revkv: open "db": corrupt data (db/0000000000000001.log at offset 1893: checksum mismatch)
func corruption(c *wal.Corruption) error {
	if c.Newer {
		return detail(ErrNewerFormat, "", fmt.Sprintf("%s: %s", c.File, c.Why))
	}
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
	d := s.disk
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
	d := s.disk
	loads := make(chan *logLoad[V], 4)
	free := make(chan *logLoad[V], 5)
	answers := make(chan error) // to a trim
	var (
		tail     wal.Tail
		err      error
		panicked any
	)
	ld := logLoader[V]{s: s, last: s.order.Last(), snap: s.order.Last().Rev}
	_, ld.prev = d.chain.Last()
	go func() {
		defer close(loads)
		defer func() {
			if p := recover(); p != nil {
				panicked = p
			}
		}()
		tail, err = ld.read(from, loads, free, answers)
	}()
	s.applyLoads(loads, free, answers)
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

// read is the loader: it reads the log from revision from on and hands
// the decoded records to loads, a trim alone, waiting for its answer.
func (ld *logLoader[V]) read(from int64, loads chan<- *logLoad[V], free <-chan *logLoad[V], answers <-chan error) (wal.Tail, error) {
	d := ld.s.disk
	var l *logLoad[V]
	send := func() {
		if l != nil {
			loads <- l
			l = nil
		}
	}
	tail, err := wal.Replay(d.fs, d.dir, from, func(kind wal.Kind, p []byte) error {
		d.logged.Add(int64(wal.FrameSize(len(p)))) // the next checkpoint counts it
		if l == nil {
			select {
			case l = <-free:
			default:
				l = new(logLoad[V])
			}
		}
		switch kind {
		case wal.KindBatch, wal.KindChained:
			if err := ld.batch(l, kind, p); err != nil {
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
	return tail, err
}

// applyLoads commits what the loader hands over, in order, and answers
// its trims.
func (s *state[V]) applyLoads(loads <-chan *logLoad[V], free chan<- *logLoad[V], answers chan<- error) {
	reported := s.order.Last().Rev / progressEvery
	for l := range loads {
		s.applyLoad(l)
		if last := s.order.Last().Rev; s.opts.progress != nil && last/progressEvery > reported {
			reported = last / progressEvery
			s.opts.progress(Revision(last))
		}
		if l.trim != nil {
			answers <- s.applyTrim(*l.trim)
		}
		l.reset()
		select {
		case free <- l:
		default:
		}
	}
}

// replayLoad is about how many writes the log loader hands over at a time.
const replayLoad = 512

// logLoad is what the log loader hands over: batches of writes, each with
// its time (decoded and checked, their logs not yet looked up), the
// compactions logged between them, and, last, a trim to apply and answer.
type logLoad[V any] struct {
	changes  []change[V]
	digests  []chain.Digest // D of each change's revision
	batches  []loadedBatch  // in log order, over changes
	compacts []compactAt
	trim     *wal.Trim
}

type loadedBatch struct {
	t      time.Time
	lo, hi int      // its changes are changes[lo:hi]
	notes  []string // its annotations, sorted by key
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
	l.digests = l.digests[:0]
}

// logLoader reads a log's records in order and checks each against those
// before it.
type logLoader[V any] struct {
	s       *state[V]
	last    mvcc.Stamp // the last revision read, and its time
	snap    int64      // the snapshot's revision
	decoder wal.BatchDecoder
	decoded wal.Batch    // the decoder's buffer
	chained wal.Chained  // the decoder's buffer for chained batches
	prev    chain.Digest // D(last.Rev)
	hasher  chain.Hasher
	link    chain.Rev
}

// batch decodes and checks a batch record into l, and the hash chain
// through it: a chained batch whose logged digest is not the one its
// entries give is damage. A batch the snapshot already holds is skipped.
func (ld *logLoader[V]) batch(l *logLoad[V], kind wal.Kind, p []byte) error {
	var (
		b     wal.Batch
		notes []string
	)
	if kind == wal.KindChained {
		c := &ld.chained
		if err := ld.decoder.DecodeChained(c, p); err != nil {
			return err
		}
		b, notes = c.Batch, c.Notes
	} else {
		var err error
		if b, err = ld.decoder.Decode(ld.decoded, p); err != nil {
			return err
		}
		ld.decoded = b
	}
	defer clear(b) // its values point into the file's bytes
	last := ld.last
	switch {
	case len(b) == 0:
		return errors.New("an empty batch")
	case b[len(b)-1].Rev <= last.Rev && last.Rev == ld.snap && b[0].Rev >= 1:
		// In a segment that began before the snapshot, and only before
		// the first revision replayed: anything else below is damage.
		return nil
	case b[0].Rev != last.Rev+1:
		return fmt.Errorf("revision %d follows %d", b[0].Rev, last.Rev)
	}
	t, err := ld.s.timeOf(&b[0])
	if err != nil {
		return err
	}
	if t.Before(last.Time) {
		return fmt.Errorf("revision %d at %s is before revision %d at %s", b[0].Rev, t.Format(time.RFC3339Nano), last.Rev, last.Time.Format(time.RFC3339Nano))
	}
	lo := len(l.changes)
	for i := range b {
		x := &b[i]
		if x.Sec != b[0].Sec || x.Nsec != b[0].Nsec || x.Zone != b[0].Zone {
			l.changes = l.changes[:lo]
			return fmt.Errorf("revision %d: a batch of several times", x.Rev)
		}
		if x.Op == uint8(revlog.Expire) && len(b) > 1 {
			l.changes = l.changes[:lo]
			return fmt.Errorf("revision %d: an expiry in a batch of several writes", x.Rev)
		}
		l.changes = append(l.changes, change[V]{key: x.Key, prev: -1})
		if err := ld.s.decodeEntry(&l.changes[len(l.changes)-1].e, x, t); err != nil {
			l.changes = l.changes[:lo]
			return err
		}
	}
	l.digests = hashBatch(&ld.hasher, &ld.link, ld.prev, b, notes, l.digests)
	got := l.digests[len(l.digests)-1]
	if kind == wal.KindChained && got != ld.chained.Digest {
		l.changes, l.digests = l.changes[:lo], l.digests[:lo]
		return fmt.Errorf("revision %d: the hash chain breaks: the log says %s, the revisions give %s",
			b[len(b)-1].Rev, chain.Digest(ld.chained.Digest).Short(), got.Short())
	}
	if notes = slices.Clip(notes); len(notes) > 0 {
		notes = slices.Clone(notes) // the decoder's buffer is reused
	} else {
		notes = nil // no span for a commit without annotations
	}
	l.batches = append(l.batches, loadedBatch{t, lo, len(l.changes), notes})
	ld.last = mvcc.Stamp{Rev: b[len(b)-1].Rev, Time: t}
	ld.prev = got
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
		s.disk.pushDigests(l.digests[b.lo:b.hi])
		s.commitNotes = b.notes
		s.applyBatch(l.changes[b.lo:b.hi], b.t)
		s.commitNotes = nil
	}
	for _, c := range cs {
		s.applyCompact(c.c)
	}
}

// applyCompact applies a logged compaction. There is one sweep, after the
// replay (recover), not one a compaction as the live store made them: the
// annotations stay until then (publishFloorLocked), so that sweep can
// rehash every sealed digest the last floor needs, and a sweep at an
// earlier floor would let go of digests a later one needs that a snapshot
// written after that later compaction holds (sinceThePin).
func (s *state[V]) applyCompact(c wal.Compact) {
	if c.Rev > s.compactRev {
		s.disk.replayedUpkeep = true
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
	if c := &cs[0]; c.e.Op == revlog.Expire && c.kl != nil {
		// commitLocked expects an expiry off the expiry index, as a purge
		// leaves it (an expiry is a batch of its own: ld.batch checks).
		if last, ok := c.kl.log.Last(); ok && last.Op == revlog.Put && last.HasTTL {
			s.expiry.Remove(c.key, last.Expires)
		}
	}
	s.commitLocked(cs, t) // nothing to encode: it cannot fail
}

// replay is the durability of a store while Open replays its log: what it
// applies is logged already, and the cuts of the history cap are logged
// where they happened, so it logs and cuts nothing. No reader can look
// yet: a key's slot is set at its first write of the replay (so that
// lookupLocked finds a new key), and again at the replay's end
// (replayLog). Write calls never reach it.
type replay[V any] struct{ *disk[V] }

func (replay[V]) record(*state[V], []change[V], int64, time.Time) error { return nil }
func (replay[V]) cap(*state[V], *keyLog[V])                             {}
func (replay[V]) pending(string) *keyLog[V]                             { return nil }
func (replay[V]) trimmed(*state[V], *keyLog[V], bool, bool)             {}

// hideSealed hides what the replayed compaction hides, and logs nothing.
func (r replay[V]) hideSealed(s *state[V], kl *keyLog[V], cut int64) int {
	return r.disk.hide(s, kl, cut, false)
}
func (replay[V]) compacted(*state[V], int64, time.Time) {}

// forgetNotes keeps the annotations until the sweep after the replay: the
// snapshot's keys may already lack the entries a replayed compaction
// drops (one made while the checkpoint wrote it), and that sweep
// rehashes sealed digests across their revisions.
func (replay[V]) forgetNotes(*state[V], int64) {}

func (r replay[V]) committed(s *state[V], cs []change[V]) {
	s.indexMu.Lock()
	for i := range cs {
		if kl := cs[i].kl; !kl.stale {
			kl.stale = true
			r.stale = append(r.stale, kl)
			s.index[cs[i].key] = indexedOf(kl, &cs[i].e)
		}
	}
	s.order.Publish()
	s.indexMu.Unlock()
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
		v, err := s.disk.codec.Decode(x.Value)
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
	s.disk.replayedUpkeep = true
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
	if sb := kl.log.SealedBelow(); sb > 0 && t.Lo <= sb { // a compaction's cut among sealed entries
		kl.log.HideSealed(t.Lo, t.Dropped)
		return nil
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
