package revkv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"

	"github.com/revkv/revkv/chain"
)

// Export writes the history of a store on a directory to w as JSON lines
// (every field, and how to recompute each digest from them, is in the
// package doc's "Export format" section): a header with the store's state, then a line
// for every revision it keeps anything of, with its time, entry,
// annotations and digest. Import reads it back into a new directory with
// the same revisions, times, expiries, annotations, digests and floor; an
// export of that directory is the same bytes. With a prefix, only the
// entries of keys with it are written (for reading: Import refuses it).
//
// Export holds the store's write lock while it runs, so that what it
// writes is one state: writes wait, reads go on. It is meant for a store
// no one writes, such as the offline tool's. A store made by New keeps no
// digests: an error wrapping errors.ErrUnsupported.
func (s *Store[V]) Export(w io.Writer, prefix string) error {
	if s.disk == nil {
		return &OpError{Op: "export", Err: errNoChain, keyless: true}
	}
	if err := s.export(w, prefix); err != nil {
		return &OpError{Op: "export", Key: prefix, Err: err}
	}
	return nil
}

func (s *state[V]) export(w io.Writer, prefix string) error {
	s.lockQuiet()
	defer s.unlockQuiet()
	if s.closed {
		return ErrClosed
	}
	d := s.disk
	h := s.order.Head()
	hd := exportHeader{Format: 1, Prefix: prefix, Rev: h.Rev, Base: s.order.Base(), Floor: s.floor.Load(),
		CompactRev: s.compactRev, TrimFloor: s.trimFloor}
	if h.Rev > 0 {
		hd.Time = exportTime(h.Time.UTC())
		first, _ := s.order.First()
		hd.First = exportTime(first.UTC())
	}
	if m := s.compaction.Load(); m != nil {
		hd.Compacted = exportTime(m.time.UTC())
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	hb, _ := json.Marshal(hd)
	bw.Write(append(hb, '\n'))
	ex := exporter[V]{s: s, w: bw, prefix: prefix, prevHad: true} // prevRev 0: D(0) is known
	d.chainMu.Lock()
	ex.digests = d.chain.Frozen()
	d.chainMu.Unlock()

	// The kept entries below the oldest revision the index of revisions
	// (s.revs) holds, found by looking at every key, then every revision
	// from there on.
	// From the revision before the oldest whose time is kept, which an
	// import keeps the same: not from the digests' own base, which need
	// not be.
	from := max(s.order.Base()-1, 1)
	lo := s.revs.base
	// Sealed entries above from are read from the segments in revision
	// order as their lines are written (sealedInOrder), in bounded memory;
	// those at or below from, what compactions kept below the floor (a
	// few a key at most), are gathered here with the entries memory keeps
	// below lo (each key's newest at a seal, for a sealed store).
	gather := max(lo, from)
	var stream exStream[V]
	if t := s.tierOrNil(); t != nil && from+1 < lo {
		gather = from + 1
		var stop func()
		stream.next, stop = iter.Pull2(ex.sealedInOrder(t, from+1, lo-1))
		defer stop()
	}
	var older []exEntry[V]
	var err error
	s.tree.Ascend(func(kl *keyLog[V]) bool {
		if older, err = ex.olderOf(kl, gather, older); err != nil {
			return false
		}
		for i, e := range kl.log.Entries() {
			if e.Rev >= max(lo, from) {
				break
			}
			older = append(older, ex.fromLog(kl, i))
		}
		return true
	})
	if err != nil {
		return err
	}
	slices.SortFunc(older, func(a, b exEntry[V]) int { return int(a.rev - b.rev) })
	for i := range older {
		if r := older[i].rev; r < from {
			if err := ex.line(r, older[i].kl, &older[i]); err != nil {
				return err
			}
		}
	}
	j := 0
	for r := max(from, 1); r <= h.Rev; r++ {
		var x *exEntry[V]
		var kl *keyLog[V]
		if r < lo {
			for j < len(older) && older[j].rev < r {
				j++
			}
			if j < len(older) && older[j].rev == r {
				x, kl = &older[j], older[j].kl
			} else if y, err := stream.at(r); err != nil {
				return err
			} else if y != nil {
				x, kl = y, y.kl
			}
		} else if kl = s.revs.at(r); kl != nil {
			one, ok, err := ex.at(kl, r)
			if err != nil {
				return err
			}
			if ok {
				x = &one
			}
		}
		if err := ex.line(r, kl, x); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// exEntry is an entry to export: from a key's log or the sealed tier.
type exEntry[V any] struct {
	kl    *keyLog[V]
	rev   int64
	e     Entry[V]
	first bool // the key's oldest retained entry: its line says how it was cut
}

// fromLog is the i-th entry of kl's log.
func (ex *exporter[V]) fromLog(kl *keyLog[V], i int) exEntry[V] {
	e := &kl.log.Entries()[i]
	return exEntry[V]{kl: kl, rev: e.Rev, e: entryOf(kl.key, e, &ex.s.zones), first: isFirst(kl, e.Rev)}
}

// olderOf appends kl's sealed entries below rev to out.
func (ex *exporter[V]) olderOf(kl *keyLog[V], rev int64, out []exEntry[V]) ([]exEntry[V], error) {
	sb, lo := kl.log.SealedBelow(), kl.log.SealedFrom()
	if sb == 0 || lo >= rev {
		return out, nil
	}
	for e, err := range ex.s.sealedRange(kl.key, lo, min(rev, sb)-1) {
		if err != nil {
			return out, err
		}
		out = append(out, exEntry[V]{kl: kl, rev: int64(e.Rev), e: e, first: isFirst(kl, int64(e.Rev))})
	}
	return out, nil
}

// sealedInOrder yields, in revision order, the entries of the tier's
// segments with lo <= Rev <= hi that the keys' logs count on and do not
// hold themselves (a key's newest at a seal is in its log too, and
// gathered from there): one segment at a time, through its locators.
func (ex *exporter[V]) sealedInOrder(t *sealed[V], lo, hi int64) iter.Seq2[exEntry[V], error] {
	s := ex.s
	return func(yield func(exEntry[V], error) bool) {
		for i, ref := range t.refs {
			if ref.Last < lo || ref.First > hi {
				continue
			}
			for x, err := range t.segs[i].Revisions(max(lo, ref.First), min(hi, ref.Last)) {
				if err != nil {
					yield(exEntry[V]{}, corruptSegment(ref.Name(), err))
					return
				}
				kl := s.lookupLocked(x.Key)
				if kl == nil || x.Rev < kl.log.SealedFrom() || x.Rev >= kl.log.SealedBelow() {
					continue
				}
				e, err := s.publicEntry(t, i, &x)
				if err != nil {
					yield(exEntry[V]{}, err)
					return
				}
				if !yield(exEntry[V]{kl: kl, rev: x.Rev, e: e, first: isFirst(kl, x.Rev)}, nil) {
					return
				}
			}
		}
	}
}

// exStream is sealedInOrder pulled a revision at a time.
type exStream[V any] struct {
	next func() (exEntry[V], error, bool) // nil: none, or done
	cur  exEntry[V]
	ok   bool // cur holds the next entry
}

// at returns the stream's entry of revision r, if it has one, moving past
// the revisions below r; r only grows from one call to the next.
func (st *exStream[V]) at(r int64) (*exEntry[V], error) {
	for st.next != nil && (!st.ok || st.cur.rev < r) {
		e, err, more := st.next()
		if !more {
			st.next, st.ok = nil, false
			break
		}
		if err != nil {
			return nil, err
		}
		st.cur, st.ok = e, true
	}
	if st.ok && st.cur.rev == r {
		return &st.cur, nil
	}
	return nil, nil
}

// at returns kl's entry of revision r, from its log or the tier.
func (ex *exporter[V]) at(kl *keyLog[V], r int64) (exEntry[V], bool, error) {
	if sb := kl.log.SealedBelow(); r < sb {
		e, ok, err := ex.s.sealedRead(kl.key, r)
		if err != nil || !ok || int64(e.Rev) != r || r < kl.log.SealedFrom() {
			return exEntry[V]{}, false, err
		}
		return exEntry[V]{kl: kl, rev: r, e: e, first: isFirst(kl, r)}, true, nil
	}
	if i := kl.log.Index(r); i >= 0 {
		return ex.fromLog(kl, i), true, nil
	}
	return exEntry[V]{}, false, nil
}

// isFirst reports whether r is the revision of kl's oldest retained
// entry: the log's first, or, for a sealed log, the sealed one it marks
// (which may be the log's first, if a compaction hid the rest).
func isFirst[V any](kl *keyLog[V], r int64) bool {
	if kl.log.SealedBelow() > 0 {
		return r == kl.log.SealedFrom()
	}
	es := kl.log.Entries()
	return len(es) > 0 && r == es[0].Rev
}

// exporter writes an export's lines, under the write lock.
type exporter[V any] struct {
	s       *state[V]
	w       *bufio.Writer
	prefix  string
	digests *chain.Seq
	prevRev int64        // the revision of the line before; 0 before the first
	prevHad bool         // whether that line had its digest
	prevD   chain.Digest // its digest, if it had one
	h       chain.Hasher
	link    chain.Rev
	l       lineOut
	buf     []byte // the value's bytes
	out     []byte // the line
	n       int64
}

// line writes the line of revision r: x, an entry of kl, or, for x nil,
// its time and digest alone (none with a prefix).
func (ex *exporter[V]) line(r int64, kl *keyLog[V], x *exEntry[V]) error {
	s := ex.s
	if ex.prefix != "" && (x == nil || !strings.HasPrefix(kl.key, ex.prefix)) {
		return nil
	}
	l := &ex.l
	*l = lineOut{rev: r}
	var err error
	if l.t, l.hasTime, err = s.revTime(r); err != nil {
		return err
	}
	if x != nil {
		e := &x.e
		l.entry, l.key, l.op, l.t, l.hasTime = true, kl.key, e.Op, e.Time, true
		if l.hasTTL = !e.ExpiresAt.IsZero(); l.hasTTL {
			l.expires = e.ExpiresAt.UnixNano()
		}
		if e.Op == OpPut {
			var err error
			if ex.buf, err = s.disk.codec.Encode(ex.buf[:0], e.Value); err != nil {
				return fmt.Errorf("revision %d: encoding the value: %w", r, err)
			}
			l.value = ex.buf
		}
		s.notes.mu.RLock()
		l.notes = s.notes.notesOf(r)
		s.notes.mu.RUnlock()
		if x.first {
			l.trimmed, l.dropped = kl.log.Lo() > 0, kl.log.Dropped()
		}
	}
	d, ok := ex.digests.At(r)
	if !ok && x != nil {
		// A sealed entry, whose digest the store let go of: its link from
		// the one before.
		p, pok, err := ex.digestAt(r - 1)
		if err != nil {
			return err
		}
		if pok {
			ex.link = chain.Rev{Rev: r, Key: kl.key, Op: uint8(l.op), Sec: l.t.Unix(), Nsec: int32(l.t.Nanosecond()),
				HasTTL: l.hasTTL, Expires: l.expires, Value: l.value, Notes: l.notes}
			d, ok = ex.h.Next(p, &ex.link), true
		}
	}
	switch {
	case !ok && x != nil:
		return fmt.Errorf("revision %d: no digest", r)
	case !ok && ex.prefix == "":
		// Only in a directory from before the chain: a revision before
		// its first snapshot whose entry is gone.
	}
	l.digest, l.hasDigest = d, ok
	if r-1 != ex.prevRev || !ex.prevHad {
		p, ok, err := ex.digestAt(r - 1)
		if err != nil {
			return err
		}
		if ok {
			l.prev = &p
		}
	}
	ex.prevRev, ex.prevHad, ex.prevD = r, ok, d
	ex.out = appendLine(ex.out[:0], l)
	_, err = ex.w.Write(ex.out)
	ex.n++
	if ex.n%progressEvery == 0 && s.opts.progress != nil {
		s.opts.progress(Revision(r))
	}
	return err
}

// digestAt returns D(r): the last line's, the chain's, or, for a sealed
// revision the store let go of, the tier's.
func (ex *exporter[V]) digestAt(r int64) (chain.Digest, bool, error) {
	if ex.prevHad && ex.prevRev == r {
		return ex.prevD, true, nil
	}
	if d, ok := ex.digests.At(r); ok {
		return d, true, nil
	}
	return ex.s.sealedDigest(r)
}

// progressEvery is how many revisions go by between WithProgress's calls.
const progressEvery = 1 << 16
