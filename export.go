package revkv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/revlog"
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
	var older []keyEntry[V]
	s.tree.Ascend(func(kl *keyLog[V]) bool {
		for i, e := range kl.log.Entries() {
			if e.Rev >= max(lo, from) {
				break
			}
			older = append(older, keyEntry[V]{kl, i})
		}
		return true
	})
	slices.SortFunc(older, func(a, b keyEntry[V]) int { return int(a.rev() - b.rev()) })
	for _, ke := range older {
		if r := ke.rev(); r < from {
			if err := ex.line(r, ke.kl, ke.i); err != nil {
				return err
			}
		}
	}
	j := 0
	for r := max(from, 1); r <= h.Rev; r++ {
		var kl *keyLog[V]
		i := -1
		if r < lo {
			for j < len(older) && older[j].rev() < r {
				j++
			}
			if j < len(older) && older[j].rev() == r {
				kl, i = older[j].kl, older[j].i
			}
		} else if kl = s.revs.at(r); kl != nil {
			i = kl.log.Index(r)
		}
		if err := ex.line(r, kl, i); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// keyEntry is the i-th entry of a key's log.
type keyEntry[V any] struct {
	kl *keyLog[V]
	i  int
}

func (k keyEntry[V]) rev() int64 { return k.kl.log.Entries()[k.i].Rev }

// exporter writes an export's lines, under the write lock.
type exporter[V any] struct {
	s       *state[V]
	w       *bufio.Writer
	prefix  string
	digests *chain.Seq
	prevRev int64 // the revision of the line before; 0 before the first
	prevHad bool  // whether that line had its digest
	l       lineOut
	buf     []byte // the value's bytes
	out     []byte // the line
	n       int64
}

// line writes the line of revision r: the i-th entry of kl's log, or, for
// i < 0, its time and digest alone (none with a prefix).
func (ex *exporter[V]) line(r int64, kl *keyLog[V], i int) error {
	s := ex.s
	if ex.prefix != "" && (i < 0 || !strings.HasPrefix(kl.key, ex.prefix)) {
		return nil
	}
	l := &ex.l
	*l = lineOut{rev: r}
	d, ok := ex.digests.At(r)
	switch {
	case !ok && i >= 0:
		return fmt.Errorf("revision %d: no digest", r)
	case !ok && ex.prefix == "":
		// Only in a directory from before the chain: a revision before
		// its first snapshot whose entry is gone.
	}
	l.digest, l.hasDigest = d, ok
	if r-1 != ex.prevRev || !ex.prevHad {
		if p, ok := ex.digests.At(r - 1); ok {
			l.prev = &p
		}
	}
	l.t, l.hasTime = s.order.TimeOf(r)
	if i >= 0 {
		e := &kl.log.Entries()[i]
		l.entry, l.key, l.op, l.t, l.hasTime = true, kl.key, Op(e.Op), e.Time(&s.zones), true
		l.hasTTL, l.expires = e.HasTTL, e.Expires
		if e.Op == revlog.Put {
			var err error
			if ex.buf, err = s.disk.codec.Encode(ex.buf[:0], e.Value); err != nil {
				return fmt.Errorf("revision %d: encoding the value: %w", r, err)
			}
			l.value = ex.buf
		}
		s.notes.mu.RLock()
		l.notes = s.notes.notesOf(r)
		s.notes.mu.RUnlock()
		if i == 0 {
			l.trimmed, l.dropped = kl.log.Lo() > 0, kl.log.Dropped()
		}
	}
	ex.prevRev, ex.prevHad = r, ok
	ex.out = appendLine(ex.out[:0], l)
	_, err := ex.w.Write(ex.out)
	ex.n++
	if ex.n%progressEvery == 0 && s.opts.progress != nil {
		s.opts.progress(Revision(r))
	}
	return err
}

// progressEvery is how many revisions go by between WithProgress's calls.
const progressEvery = 1 << 16
