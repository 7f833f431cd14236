package revkv

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/wal"
)

// A snapshot's hash chain: its KindDigests records (the sequence from the
// chain's base to the snapshot's revision first, then the older digests
// its entries need) and its KindNotes records come before its keys, so
// that each key's builder checks every entry it builds:
// D(r) = SHA-256(D(r-1) || enc(r)), with both digests from the records.
// A snapshot without digests was written before the chain began: its
// chain starts at its revision, from zero.

// digests reads a KindDigests record.
func (ld *snapshotReader) digests(p []byte) error {
	g, err := wal.DecodeDigests(p)
	if err != nil {
		return err
	}
	switch {
	case ld.chainDone || ld.n > 0:
		return errors.New("digests after the keys")
	case len(g.Digests) == 0:
		return errors.New("an empty digests record")
	case g.First+int64(len(g.Digests))-1 > ld.last:
		return fmt.Errorf("digests up to revision %d, above the snapshot's %d", g.First+int64(len(g.Digests))-1, ld.last)
	}
	if ld.chain == nil {
		ld.chain = chain.NewSeq(g.First, g.Digests[0])
		g.Digests = g.Digests[1:]
		g.First++
	}
	if last, _ := ld.chain.Last(); g.First == last+1 {
		for _, d := range g.Digests {
			ld.chain.Push(d)
		}
		return nil
	}
	if g.First+int64(len(g.Digests)) > ld.chain.Base() {
		return fmt.Errorf("digests of revisions %d.. overlap the chain from %d", g.First, ld.chain.Base())
	}
	for i, d := range g.Digests {
		ld.chain.AddOld(g.First+int64(i), d)
	}
	return nil
}

// notes reads a KindNotes record.
func (ld *snapshotReader) notes(p []byte) error {
	n, err := wal.DecodeNotes(p)
	if err != nil {
		return err
	}
	if ld.n > 0 {
		return errors.New("annotations after the keys")
	}
	if k := len(ld.spans); k > 0 && n.First <= ld.spans[k-1].First+ld.spans[k-1].N-1 {
		return fmt.Errorf("annotations of revision %d out of order", n.First)
	}
	if n.First+n.N-1 > ld.last {
		return fmt.Errorf("annotations of revision %d, above the snapshot's %d", n.First+n.N-1, ld.last)
	}
	ld.spans = append(ld.spans, n)
	return nil
}

// endChain checks that the digests reach the snapshot's revision.
func (ld *snapshotReader) endChain() error {
	ld.chainDone = true
	if last, _ := ld.chain.Last(); last != ld.last {
		return fmt.Errorf("digests up to revision %d in a snapshot of %d", last, ld.last)
	}
	return nil
}

// notesOf returns the annotations of rev, sorted pairs, or nil.
func (ld *snapshotReader) notesOf(rev int64) []string {
	i := sort.Search(len(ld.spans), func(i int) bool { return ld.spans[i].First+ld.spans[i].N-1 >= rev })
	if i < len(ld.spans) && ld.spans[i].First <= rev {
		return ld.spans[i].Notes
	}
	return nil
}

// check checks x, an entry of a key record, against the snapshot's chain,
// and notes in r whether it is annotated.
func (b *snapshotBuilder[V]) check(r *restoredKey[V], x *wal.Entry) error {
	ld := b.chain
	notes := ld.notesOf(x.Rev)
	if notes != nil {
		r.noted = append(r.noted, x.Rev)
	}
	if ld.chain == nil {
		return nil
	}
	prev, ok1 := ld.chain.At(x.Rev - 1)
	want, ok2 := ld.chain.At(x.Rev)
	if (!ok1 || !ok2) && x.Rev <= ld.sealed {
		// An entry a segment holds too, whose digests the snapshot left
		// to the tier (olderNeeded): VerifySealed checks this copy
		// against the segment's, whose entries it re-hashes. Rehashing
		// it here would read sealed history at every Open.
		return nil
	}
	if !ok1 || !ok2 {
		return fmt.Errorf("revision %d: the snapshot has no digest for it", x.Rev)
	}
	linkOf(&b.link, x, notes)
	got := b.hasher.Next(prev, &b.link)
	b.link = chain.Rev{}
	if got != want {
		return fmt.Errorf("revision %d: the hash chain breaks: the snapshot says %s, the entry gives %s", x.Rev, want.Short(), got.Short())
	}
	return nil
}

// restoreChain takes a loaded snapshot's digests and annotations. Each
// annotated revision's key is the one whose entries hold it: restoreKeys
// found them.
func (s *state[V]) restoreChain(digests *chain.Seq, notes []wal.Notes, noted []notedRev[V]) error {
	if digests == nil { // a snapshot from before the chain
		var err error
		if digests, err = s.genesis(); err != nil {
			return err
		}
	}
	s.disk.chain = digests
	for _, n := range notes {
		s.notes.spans = append(s.notes.spans, noteSpan[V]{first: n.First, kls: make([]*keyLog[V], n.N), kv: n.Notes})
	}
	for _, n := range noted {
		if sp := s.notes.find(n.rev); sp != nil {
			sp.kls[n.rev-sp.first] = n.kl
		}
	}
	// The annotated revisions whose entries are sealed: the tier says
	// whose they are, when first asked (resolveLocked).
	if s.disk.tier.Load() != nil {
		for i := range s.notes.spans {
			sp := &s.notes.spans[i]
			sp.sealed = slices.Contains(sp.kls, nil)
		}
	}
	return nil
}

// genesis starts the chain of a store whose snapshot was written before
// the chain began: its kept entries, in revision order, each linked to the
// one kept before it (the first to D = 0, the zero digest), as if the
// revisions between had not been; the snapshot's revision links to the
// last of them. From there the chain goes on as for any store: so the
// digests of a directory upgraded from an older revkv are its own, and a
// revision before its first snapshot whose entry is gone has none.
func (s *state[V]) genesis() (*chain.Seq, error) {
	type ref struct {
		kl *keyLog[V]
		i  int
	}
	var refs []ref
	s.tree.Ascend(func(kl *keyLog[V]) bool {
		for i := range kl.log.Entries() {
			refs = append(refs, ref{kl, i})
		}
		return true
	})
	at := s.order.Last().Rev
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Compare(a.kl.log.Entries()[a.i].Rev, b.kl.log.Entries()[b.i].Rev) })
	var (
		h    chain.Hasher
		x    wal.Entry
		link chain.Rev
		prev chain.Digest
		val  []byte
		old  []revDigest
	)
	for _, r := range refs {
		e := &r.kl.log.Entries()[r.i]
		logEntry(&x, r.kl.key, e, e.Time(&s.zones))
		if e.Op == revlog.Put {
			var err error
			if val, err = s.disk.codec.Encode(val[:0], e.Value); err != nil {
				return nil, fmt.Errorf("revision %d: encoding the value: %w", e.Rev, err)
			}
			x.Value = val
		}
		linkOf(&link, &x, nil)
		old = append(old, revDigest{e.Rev - 1, prev})
		prev = h.Next(prev, &link)
		old = append(old, revDigest{e.Rev, prev})
	}
	seq := chain.NewSeq(at, prev)
	for _, o := range old {
		seq.AddOld(o.rev, o.d)
	}
	return seq, nil
}

// notedRev is an annotated revision of a snapshot and its key's log.
type notedRev[V any] struct {
	rev int64
	kl  *keyLog[V]
}
