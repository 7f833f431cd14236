package revkv

import (
	"maps"
	"slices"
	"time"

	"github.com/google/btree"
	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/mvcc"
	"github.com/revkv/revkv/wal"
)

// Checkpoint writes a snapshot of the retained state now and deletes the log
// segments and older snapshots it covers. Writers and readers go on while
// it writes: it holds the write lock only to start a new log segment and
// pin the head. A store made by New has nothing to write: nil. Checkpoints
// also run by themselves once WithCheckpointBytes were logged, and, for a
// store that seals (WithMemory), once more in Close, so that the next Open
// replays no log.
func (s *Store[V]) Checkpoint() error {
	if s.disk == nil {
		return nil
	}
	if err := s.checkpoint(); err != nil {
		return &OpError{Op: "checkpoint", Key: s.disk.dir, Err: err}
	}
	return nil
}

func (s *state[V]) checkpoint() error {
	d := s.disk
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	return s.checkpointLocked(false)
}

// pinned is what a checkpoint takes under the write lock: the head, and
// frozen copies of everything its snapshot writes, so that writers go on
// while it writes.
type pinned[V any] struct {
	h       mvcc.Stamp
	cut     *wal.Cut // the log's cut at h, nil if the current segment starts at h+1
	st      wal.State
	times   mvcc.Times
	keys    *btree.BTreeG[*keyLog[V]]
	digests *chain.Seq
	notes   []noteSpan[V]
}

// checkpointLocked writes a checkpoint (a seal first, for a store that
// seals); the caller holds ckptMu. closing says Close runs it, with the
// store closed to writes and its goroutines stopped: it then writes one
// only if nothing stands in its way, since what it saves is the next
// Open's replay, never data.
func (s *state[V]) checkpointLocked(closing bool) error {
	d := s.disk
	// The rotation below syncs the current segment while drains wait to
	// write (the records after the cut go to the next segment, and must
	// not be written before it). Under SyncNever the segment may hold
	// every write since the last sync: sync it first, beside the drains,
	// so that the rotation's sync has only the last moment's to do.
	if s.opts.sync != SyncAlways {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed && !closing {
			return ErrClosed
		}
		if err := d.sync(); err != nil {
			return err
		}
	}
	p, err := s.pin(closing)
	if p == nil || err != nil {
		return err
	}
	if p.cut != nil {
		if err := p.cut.Rotate(p.h.Rev + 1); err != nil {
			return d.fail(err)
		}
	}
	if s.opts.seals() {
		// Before the snapshot, which then holds only what memory keeps.
		if err := s.seal(p.h.Rev); err != nil {
			return err
		}
	}
	if err := s.writeSnapshot(p); err != nil || !s.opts.seals() {
		return err
	}
	// After the snapshot, which holds the compaction a merge may act on
	// and the digests its kept entries need. A merge is an optimization:
	// one that fails before its manifest (a damaged segment it reads, a
	// full disk) leaves the store as it was, and the checkpoint is done.
	// Only a failed log sync, which stops the store, is the checkpoint's.
	if err := s.mergeSome(max(p.st.CompactRev, p.st.TrimFloor)); err != nil && d.err() != nil {
		return err
	}
	return nil
}

// pin takes, under the write lock, what a checkpoint writes. It returns
// nil and no error where a closing store's checkpoint is not worth
// writing: nothing was logged since the last one, or a compaction's sweep
// is under way.
func (s *state[V]) pin(closing bool) (*pinned[V], error) {
	d := s.disk
	s.lockQuiet()
	defer s.unlockQuiet()
	s.awaitSweepsLocked()
	switch {
	case closing && (s.sweepsDue > 0 || d.logged.Load() == 0):
		return nil, nil
	case s.closed && !closing:
		return nil, ErrClosed
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	p := &pinned[V]{h: s.order.Head()} // no drain runs: every assigned revision is published
	// The log's records up to h go to the current segment, and the next
	// segment starts at h+1; syncing the current one waits until the write
	// lock is released.
	if cur, err := d.w.Current(); err == nil && cur != p.h.Rev+1 {
		p.cut = d.w.Cut()
	}
	d.logged.Store(0)
	p.st = stateRecord(s, p.h)
	p.times = s.order.Times() // read after the lock is released
	// No pin on the keys' logs: a trim or compaction that drops entries
	// while the snapshot is written is in the new segment, and replaying it
	// over whatever the snapshot holds of that key leaves the same log. A
	// pin would make trims keep more than they would without a checkpoint.
	p.keys = s.tree.Clone()
	p.st.Keys = int64(p.keys.Len())
	d.chainMu.Lock()
	p.digests = d.chain.Frozen()
	d.chainMu.Unlock()
	s.notes.mu.RLock()
	p.notes = slices.Clone(s.notes.spans) // a span never changes once added
	s.notes.mu.RUnlock()
	return p, nil
}

// sinceThePin adds to need, and to p's digests, what a compaction or trim
// since p's pin makes the snapshot need. Its floor is the one pinned (its
// keys' logs are the store's now, less what that compaction dropped), and
// the compaction is in the log after h: the Open that replays it rehashes
// the sealed digests the new floor needs that the snapshot lacks, from
// the digest before the pinned floor. It cannot rehash across the revisions
// that compaction dropped before a seal wrote them (a segment lacks
// them), so the snapshot holds what both floors need, taken from the
// live chain, whose sweep rehashed them, where the chain the pin froze
// lacks them. The annotations of the revisions at and above the pinned
// floor stay in it too (writeChain).
func (s *state[V]) sinceThePin(p *pinned[V], base, floor int64, need map[int64]bool) {
	s.lockQuiet()
	s.awaitSweepsLocked()
	now := s.floor.Load()
	s.unlockQuiet()
	if now == floor {
		return
	}
	maps.Copy(need, s.olderNeeded(p.keys, base, now))
	d := s.disk
	d.chainMu.Lock()
	defer d.chainMu.Unlock()
	for r := range need {
		if _, ok := p.digests.At(r); !ok {
			if dg, ok := d.chain.At(r); ok {
				p.digests.AddOld(r, dg)
			}
		}
	}
}

// awaitSweepsLocked waits, for a store that seals, until no compaction's
// or trim's walk is under way: its sweep rehashes the sealed digests its
// kept entries need before the annotations go, and a checkpoint takes the
// chain after it, or it would hold the new floor without them. The caller
// holds state.mu, which it lets go of while it waits.
func (s *state[V]) awaitSweepsLocked() {
	for s.sweepsDue > 0 && s.opts.seals() && !s.closed {
		s.unlockQuiet()
		time.Sleep(time.Millisecond)
		s.lockQuiet()
	}
}

// writeSnapshot writes p's snapshot, then deletes the log segments and
// older snapshots it covers.
func (s *state[V]) writeSnapshot(p *pinned[V]) error {
	d := s.disk
	st, h := &p.st, p.h.Rev
	// The times the seal's segments now hold are left out (Held).
	skip := int64(0)
	if n := len(d.manifest.Segments); n > 0 && s.opts.seals() {
		held := max(st.Held, min(d.manifest.Segments[n-1].Last+1, h))
		skip, st.Held = held-st.Held, held
	}
	st.Times = make([]wal.Instant, p.times.Len()-skip)
	for i := range st.Times {
		st.Times[i].Sec, st.Times[i].Nsec = p.times.At(skip + int64(i))
	}

	w, err := wal.CreateSnapshot(d.fs, d.dir, h, wal.AppendState(nil, st))
	if err != nil {
		return err
	}
	// The older digests the snapshot's entries need: a trim meanwhile
	// may leave the snapshot fewer entries, never more. After a seal the
	// segments answer for the digests up to h, as they do for the live
	// chain (seal): the snapshot keeps those the kept entries need and h's.
	base := p.digests.Base()
	if s.opts.seals() {
		base = max(base, h)
	}
	floor := max(st.CompactRev, st.TrimFloor)
	need := s.olderNeeded(p.keys, base, floor)
	if s.opts.seals() {
		s.sinceThePin(p, base, floor, need)
		p.digests.ForgetAllBut(h+1, slices.Collect(maps.Keys(need)))
	}
	p.digests.KeepOld(func(r int64) bool { return need[r] || r >= base })
	if err = writeChain(w, p.digests, p.notes, h, floor); err != nil {
		w.Abort()
		return err
	}
	var kr keyRecorder[V]
	var pc pace
	p.keys.Ascend(func(kl *keyLog[V]) bool {
		pc.step()
		var rec []byte
		if rec, err = kr.record(d.codec, &s.zones, kl, h); err == nil && rec != nil {
			err = w.Add(wal.KindKey, rec)
		}
		return err == nil
	})
	if err != nil {
		w.Abort()
		return err
	}
	// What a trim or compaction since the pin dropped from the keys just
	// written is logged after h: synced before the snapshot commits, or a
	// power cut could keep the drops and lose the records (and the floor)
	// that account for them. A key's cut is logged before the write lock
	// is let go, so taking it once waits for the last one.
	s.lockQuiet()
	s.unlockQuiet()
	if err := d.sync(); err != nil {
		w.Abort()
		return err
	}
	if err := w.Commit(); err != nil {
		return err
	}
	s.dropUnneeded(base, func(c *chain.Seq, need map[int64]bool) {
		c.KeepOld(func(r int64) bool { return need[r] || r >= base })
	})
	d.snapBytes.Store(w.Size())
	if err := wal.RemoveBefore(d.fs, d.dir, h+1); err != nil {
		return err
	}
	if err := wal.RemoveSnapshotsBefore(d.fs, d.dir, h); err != nil {
		return err
	}
	// Durable removals: a crash never brings back the history a checkpoint
	// let go of (after a Compact, say) nor the space it freed.
	return d.fs.SyncDir(d.dir)
}
