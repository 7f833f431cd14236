package revkv

import (
	"github.com/revkv/revkv/chain"
	"slices"
	"time"

	"github.com/revkv/revkv/wal"
)

// Checkpoint writes a snapshot of the retained state now and deletes the log
// segments and older snapshots it covers. Writers and readers go on while
// it writes: it holds the write lock only to start a new log segment and
// pin the head. A store made by New has nothing to write: nil. Checkpoints
// also run by themselves once WithCheckpointBytes were logged.
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

	// The rotation below syncs the current segment while drains wait to
	// write (the records after the cut go to the next segment, and must
	// not be written before it). Under SyncNever the segment may hold
	// every write since the last sync: sync it first, beside the drains,
	// so that the rotation's sync has only the last moment's to do.
	if s.opts.sync != SyncAlways {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if err := d.sync(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	for s.sweepsDue > 0 && s.opts.seals() && !s.closed {
		// A compaction's walk is under way: its sweep rehashes the
		// sealed digests its kept entries need before the annotations
		// go. The snapshot takes the chain after it, or it would hold
		// the new floor without them.
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
	}
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if err := d.err(); err != nil {
		s.mu.Unlock()
		return err
	}
	h := s.order.Head() // no drain runs: every assigned revision is published
	// The log's records up to h go to the current segment, and the next
	// segment starts at h+1; syncing the current one waits until the write
	// lock is released.
	var cut *wal.Cut
	if cur, err := d.w.Current(); err == nil && cur != h.Rev+1 {
		cut = d.w.Cut()
	}
	d.logged.Store(0)
	st := stateRecord(s, h)
	times := s.order.Times() // read after the lock is released
	// No pin: a trim or compaction that drops entries while the snapshot is
	// written is in the new segment, and replaying it over whatever the
	// snapshot holds of that key leaves the same log. A pin would make
	// trims keep more than they would without a checkpoint.
	keys := s.tree.Clone()
	d.chainMu.Lock()
	digests := d.chain.Frozen()
	d.chainMu.Unlock()
	s.notes.mu.RLock()
	notes := slices.Clone(s.notes.spans) // a span never changes once added
	s.notes.mu.RUnlock()
	s.mu.Unlock()

	if cut != nil {
		if err := cut.Rotate(h.Rev + 1); err != nil {
			return d.fail(err)
		}
	}
	if s.opts.seals() {
		// Before the snapshot, which then holds only what memory keeps.
		if err := s.seal(h.Rev); err != nil {
			return err
		}
	}
	// The times the seal's segments now hold are left out (Held).
	skip := int64(0)
	if n := len(d.manifest.Segments); n > 0 && s.opts.seals() {
		held := max(st.Held, min(d.manifest.Segments[n-1].Last+1, h.Rev))
		skip, st.Held = held-st.Held, held
	}
	st.Times = make([]wal.Instant, times.Len()-skip)
	for i := range st.Times {
		st.Times[i].Sec, st.Times[i].Nsec = times.At(skip + int64(i))
	}

	w, err := wal.CreateSnapshot(d.fs, d.dir, h.Rev, wal.AppendState(nil, &st))
	if err != nil {
		return err
	}
	// The older digests the snapshot's entries need: a trim meanwhile
	// may leave the snapshot fewer entries, never more.
	need := s.olderNeeded(keys, digests.Base())
	keep := func(r int64) bool { return need[r] || r >= digests.Base() }
	digests.KeepOld(keep)
	if err = writeChain(w, digests, notes, h.Rev); err != nil {
		w.Abort()
		return err
	}
	var kr keyRecorder[V]
	keys.Ascend(func(kl *keyLog[V]) bool {
		var p []byte
		if p, err = kr.record(d.codec, &s.zones, kl, h.Rev); err == nil && p != nil {
			err = w.Add(wal.KindKey, p)
		}
		return err == nil
	})
	if err != nil {
		w.Abort()
		return err
	}
	if err := w.Commit(); err != nil {
		return err
	}
	s.dropUnneeded(digests.Base(), func(c *chain.Seq, need map[int64]bool) {
		c.KeepOld(func(r int64) bool { return need[r] || r >= digests.Base() })
	})
	d.snapBytes.Store(w.Size())
	if err := wal.RemoveBefore(d.fs, d.dir, h.Rev+1); err != nil {
		return err
	}
	if err := wal.RemoveSnapshotsBefore(d.fs, d.dir, h.Rev); err != nil {
		return err
	}
	// Durable removals: a crash never brings back the history a checkpoint
	// let go of (after a Compact, say) nor the space it freed.
	return d.fs.SyncDir(d.dir)
}
