package revkv

import (
	"errors"
	"fmt"

	"github.com/google/btree"
	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/wal"
)

// A store on a directory keeps a SHA-256 hash chain over its revisions
// (contract §11.3; the encoding and a worked example are in package
// chain's docs): D(0) is 32 zero bytes and D(r) = SHA-256(D(r-1) ||
// enc(r)). Each batch record carries D of its last revision, computed
// as the commit is recorded; replay recomputes it and a record whose
// stored digest does not follow is ErrCorrupt naming the revision. A
// checkpoint writes the digests the store holds (every revision from the
// floor on, and, for each kept entry below it, its own and the one
// before), and Open checks every entry of the snapshot against them. A
// store made by New keeps no chain and pays nothing for it.

// Digest returns the latest revision and D there. A store made by New has
// no codec to fix the bytes of its values: an error wrapping
// errors.ErrUnsupported.
func (s *Store[V]) Digest() (Revision, [32]byte, error) {
	d := s.disk
	if d == nil {
		return 0, [32]byte{}, &OpError{Op: "digest", Err: errNoChain, keyless: true}
	}
	d.chainMu.Lock()
	defer d.chainMu.Unlock()
	h := s.order.Head().Rev // published: its digest is pushed
	dg, _ := d.chain.At(h)
	return Revision(h), dg, nil
}

// DigestAt returns D(rev), for a revision from Floor()-1 on, or one whose
// entry is still kept below it (checked when Open loaded it); otherwise
// ErrCompacted, and above Rev() ErrFutureRevision.
func (s *Store[V]) DigestAt(rev Revision) ([32]byte, error) {
	fail := func(err error) ([32]byte, error) {
		return [32]byte{}, &OpError{Op: "digest", Rev: rev, Err: err, keyless: true}
	}
	d := s.disk
	if d == nil {
		return fail(errNoChain)
	}
	if h := s.order.Head().Rev; int64(rev) > h {
		return fail(detail(ErrFutureRevision, "latest is", h))
	}
	d.chainMu.Lock()
	dg, ok := d.chain.At(int64(rev))
	d.chainMu.Unlock()
	floor := s.floor.Load()
	if !ok && (int64(rev) >= floor-1 || s.sealedKept(int64(rev)) || s.sealedKept(int64(rev)+1)) {
		// A sealed revision's digest, which the store let go of: from the
		// floor's predecessor on, or a kept entry's own or the one before.
		var err error
		if dg, ok, err = s.sealedDigest(int64(rev)); err != nil {
			return fail(err)
		}
	}
	if !ok {
		return fail(detail(ErrCompacted, "floor is", floor))
	}
	return dg, nil
}

var errNoChain = fmt.Errorf("a store made by New keeps no hash chain: %w", errors.ErrUnsupported)

// linkOf fills r with what the chain covers of x, logged with notes.
func linkOf(r *chain.Rev, x *wal.Entry, notes []string) {
	*r = chain.Rev{Rev: x.Rev, Key: x.Key, Op: x.Op, Sec: x.Sec, Nsec: x.Nsec,
		HasTTL: x.HasTTL, Expires: x.Expires, Value: x.Value, Notes: notes}
}

// hashBatch returns D of each entry of b in turn from prev, into ds.
func hashBatch(h *chain.Hasher, link *chain.Rev, prev chain.Digest, b wal.Batch, notes []string, ds []chain.Digest) []chain.Digest {
	for i := range b {
		linkOf(link, &b[i], notes)
		prev = h.Next(prev, link)
		ds = append(ds, prev)
	}
	*link = chain.Rev{}
	return ds
}

// pushDigests appends the digests of the revisions after the chain's last.
func (d *disk[V]) pushDigests(ds []chain.Digest) {
	d.chainMu.Lock()
	for _, dg := range ds {
		d.chain.Push(dg)
	}
	d.chainMu.Unlock()
}

// forget lets the chain go of the digests below floor-1 that no kept
// entry needs: those of the revisions whose entries are gone, found
// through Diff's index of each revision's key, which a store on a
// directory always keeps (s.revs). A compaction publishes its floor
// before it walks the keys, so the entries it is about to drop are still
// kept here: swept lets their digests go after the walk.
func (d *disk[V]) forget(s *state[V], floor int64) {
	if d.chain == nil || s.revs == nil {
		return
	}
	rk := s.revs
	keptAt := func(r int64) bool {
		if r < rk.base {
			// A sealed revision, which the index leaves to the tier:
			// kept for now; the sweep after the walk lets go of what
			// no kept entry needs.
			return d.tier.Load() != nil
		}
		if r >= rk.base+int64(len(rk.kls)) {
			return false
		}
		return kept(rk.at(r), r)
	}
	d.chainMu.Lock()
	d.chain.Forget(floor, keptAt)
	d.chainMu.Unlock()
}

func (d *disk[V]) forgetNotes(s *state[V], floor int64) { s.forgetNotesLocked(floor) }

// swept lets go of the older digests no kept entry needs any more, after
// a compaction's or a trim's walk over every key. O(keys).
func (d *disk[V]) swept(s *state[V]) {
	d.chainMu.Lock()
	base := d.chain.Base()
	d.chainMu.Unlock()
	need := s.olderNeeded(s.tree, base, s.floor.Load())
	if d.tier.Load() != nil {
		if err := s.sweptSealed(need); err != nil {
			d.fail(err)
		}
	}
	d.setFloorMark(s.floor.Load())
	d.chainMu.Lock()
	d.chain.KeepOld(func(r int64) bool { return need[r] || r >= base })
	d.chainMu.Unlock()
}

// digestsPerRecord is how many digests one snapshot record holds (2 MiB).
const digestsPerRecord = 1 << 16

// writeChain adds a snapshot's digests and annotations, before its keys
// (Open checks each key's entries against them as it reads it): the
// digests from the chain's base to the head h, then the older ones, then
// each annotated commit with a revision still kept, with the keys it
// wrote. Every commit at or above the snapshot's floor counts as kept,
// though a compaction since the checkpoint's pin may have dropped its
// entries: the Open that replays that compaction rehashes sealed digests
// across it, from the floor the snapshot holds.
func writeChain[V any](w *wal.SnapshotWriter, digests *chain.Seq, notes []noteSpan[V], h, floor int64) error {
	var p []byte
	err := digests.Spans(digestsPerRecord, func(first int64, ds [][32]byte) error {
		p = wal.AppendDigests(p[:0], &wal.Digests{First: first, Digests: ds})
		return w.Add(wal.KindDigests, p)
	})
	if err != nil {
		return err
	}
	var n wal.Notes
	for i := range notes {
		sp := &notes[i]
		if sp.last() > h || sp.last() < floor && !sp.anyKept() {
			continue
		}
		for first, last := sp.first, sp.last(); first <= last; first += wal.MaxNoteSpan {
			n.First, n.N, n.Notes = first, min(wal.MaxNoteSpan, last-first+1), sp.kv
			p = wal.AppendNotes(p[:0], &n)
			if err := w.Add(wal.KindNotes, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropUnneeded lets the chain go of digests with apply, given the
// revisions whose digests the entries at or below base need. It finds them
// outside the write lock and applies them under it, finding them again if
// a compaction moved the floor meanwhile: entries below the new floor may
// need digests the old need did not name.
func (s *state[V]) dropUnneeded(base int64, apply func(c *chain.Seq, need map[int64]bool)) {
	s.lockQuiet()
	for {
		keys, floor := s.tree.Clone(), s.floor.Load()
		s.unlockQuiet()
		need := s.olderNeeded(keys, base, floor)
		s.lockQuiet()
		if s.floor.Load() == floor {
			s.disk.chainMu.Lock()
			apply(s.disk.chain, need)
			s.disk.chainMu.Unlock()
			s.unlockQuiet()
			return
		}
	}
}

// olderNeeded returns the revisions whose digests the entries of keys at
// or below base need, given the floor: each one's own and the one before
// it. Of sealed entries, only those below the floor need theirs: the
// segments' marks give the rest (seal_chain.go), and so for the entries
// memory keeps that a segment holds too (each key's newest).
func (s *state[V]) olderNeeded(keys *btree.BTreeG[*keyLog[V]], base, floor int64) map[int64]bool {
	need := map[int64]bool{}
	if floor > 1 && floor-1 < base {
		need[floor-1] = true // the anchor of sealed digests above the floor
	}
	below := min(base, floor-1)
	sealed := int64(0) // the entries up to it are in the segments too
	t := s.disk.tier.Load()
	scan := false
	if t != nil {
		sealed = t.last()
		scan = scanBelowFloor(t, keys.Len(), below)
	}
	keys.Ascend(func(kl *keyLog[V]) bool {
		kl.mu.RLock()
		lo, sb := kl.log.SealedFrom(), kl.log.SealedBelow()
		for _, e := range kl.log.Entries() {
			if e.Rev > base {
				break
			}
			if e.Rev <= sealed && e.Rev >= floor {
				continue // rehashed from the tier when asked for, as the rest of it is
			}
			need[e.Rev], need[e.Rev-1] = true, true
		}
		kl.mu.RUnlock()
		if !scan && sb > 0 && lo <= below { // sealed entries below the floor
			for e, err := range s.sealedRange(kl.key, lo, min(below, sb-1)) {
				if err != nil {
					break
				}
				need[int64(e.Rev)], need[int64(e.Rev)-1] = true, true
			}
		}
		return true
	})
	if scan {
		s.sealedNeededByScan(t, keys, below, need)
	}
	return need
}

// scanBelowFloorPerKey is how many entries, per key, in the segments
// that hold revisions at or below the floor make olderNeeded read each
// key's kept ones (a block read a key, which decodes the block up to the
// key: about a hundred entries of 4 KiB) rather than scan those segments
// end to end. Once merges have cut what lies below a compaction to each
// key's newest entry there, the scan decodes the segment that straddles
// the floor and a few hundred blocks below it, where the reads by key
// read a block for each of 100,000 keys. A variable for the tests, which
// compare the two.
var scanBelowFloorPerKey int64 = 64

// scanBelowFloor reports whether olderNeeded should scan t's segments
// for the kept sealed entries at or below below, among keys keys.
func scanBelowFloor[V any](t *sealed[V], keys int, below int64) bool {
	n := int64(0)
	for i := range t.refs {
		if t.refs[i].First > below {
			break
		}
		n += t.segs[i].Footer().Entries
	}
	return n <= scanBelowFloorPerKey*int64(keys)
}

// sealedNeededByScan adds to need, as olderNeeded's reads by key would,
// the revisions of the sealed entries at or below below that the logs of
// keys count on, and of the entry before each, reading the segments that
// hold revisions at or below below from end to end.
func (s *state[V]) sealedNeededByScan(t *sealed[V], keys *btree.BTreeG[*keyLog[V]], below int64, need map[int64]bool) {
	if len(t.refs) == 0 || t.refs[0].First > below {
		return // nothing sealed below the floor (a store never compacted): no map of every key
	}
	byKey := make(map[string]*keyLog[V], keys.Len())
	keys.Ascend(func(kl *keyLog[V]) bool {
		byKey[kl.key] = kl
		return true
	})
	for i := 0; i < len(t.refs) && t.refs[i].First <= below; i++ {
		for e, err := range t.segs[i].All() {
			if err != nil {
				break // as a read by key stops at damage: verify names it
			}
			kl := byKey[e.Key]
			if e.Rev > below || kl == nil {
				continue
			}
			kl.mu.RLock()
			lo, sb := kl.log.SealedFrom(), kl.log.SealedBelow()
			kl.mu.RUnlock()
			if sb > 0 && e.Rev >= lo && e.Rev < sb {
				need[e.Rev], need[e.Rev-1] = true, true
			}
		}
	}
}
