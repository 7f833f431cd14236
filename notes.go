package revkv

import (
	"iter"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/revkv/revkv/revlog"
)

// Annotations are history (contract §11.1): an Update's annotations belong
// to each revision it commits, are logged in its batch record, and are
// answered while their revision keeps its entry. The store keeps them as
// spans, one per annotated commit, in revision order; a commit without
// annotations adds nothing, and the commit path pays one length check.

// noteSpan is one annotated commit: revisions first..first+len(kls)-1, the
// log of the key each wrote (to tell whether its entry is still kept), and
// the annotations, as key, value pairs sorted by key.
type noteSpan[V any] struct {
	first int64
	kls   []*keyLog[V]
	kv    []string
	// sealed says that the keys of some of its sealed revisions are not
	// looked up yet (nil in kls): Open leaves them to the first call that
	// needs them (resolveLocked), so that it reads no history for them.
	sealed bool
}

func (n *noteSpan[V]) last() int64 { return n.first + int64(len(n.kls)) - 1 }

// noteLog is the store's annotated commits.
type noteLog[V any] struct {
	// mu guards spans: commits append under state.mu and mu, readers
	// (Annotations) take mu alone, and write it to look up a span's
	// sealed keys (resolveLocked). Taken after state.mu, and before
	// indexMu or a keyLog's lock (one at a time).
	mu    sync.RWMutex
	spans []noteSpan[V] // in revision order, not overlapping
	// gone counts the times spans were let go (under mu): a rehash that
	// read annotations while it moved started again (sealedDigest).
	gone atomic.Int64
}

// Annotate attaches key and value (an actor, a reason, a ticket) to every
// revision the Update commits, whenever it is called inside fn; a later
// Annotate of the same key replaces the value. An Update that writes
// nothing, fails or panics leaves no annotations. The expiries Update
// writes before fn runs are the clock's doing and carry none.
func (t *Txn[V]) Annotate(key, value string) {
	tx := t.b
	if tx == nil {
		return
	}
	for i := 0; i < len(tx.notes); i += 2 {
		if tx.notes[i] == key {
			tx.notes[i+1] = value
			return
		}
	}
	tx.notes = append(tx.notes, key, value)
}

// sortedNotes returns the pairs kv sorted by key.
func sortedNotes(kv []string) []string {
	type pair struct{ k, v string }
	ps := make([]pair, len(kv)/2)
	for i := range ps {
		ps[i] = pair{kv[2*i], kv[2*i+1]}
	}
	slices.SortFunc(ps, func(a, b pair) int {
		switch {
		case a.k < b.k:
			return -1
		case a.k > b.k:
			return 1
		}
		return 0
	})
	out := make([]string, 0, len(kv))
	for _, p := range ps {
		out = append(out, p.k, p.v)
	}
	return out
}

// Annotations returns the annotations of revision rev, a new map the
// caller owns: nil for a revision written without any. It answers while
// revision rev keeps its entry in its key's log, even below Floor(); once
// that entry is trimmed or compacted away it is ErrCompacted; above Rev(),
// ErrFutureRevision.
func (s *Store[V]) Annotations(rev Revision) (map[string]string, error) {
	fail := func(err error) (map[string]string, error) {
		return nil, &OpError{Op: "annotations", Rev: rev, Err: err, keyless: true}
	}
	if h := s.order.Head().Rev; int64(rev) > h {
		return fail(detail(ErrFutureRevision, "latest is", h))
	}
	if rev < 1 {
		return fail(detail(ErrCompacted, "no revision", int64(rev)))
	}
	n := &s.notes
	n.mu.RLock()
	sp := n.find(int64(rev))
	if sp != nil && sp.sealed { // look its keys up, once
		n.mu.RUnlock()
		n.mu.Lock()
		var err error
		if sp := n.find(int64(rev)); sp != nil {
			err = s.resolveLocked(sp)
		}
		n.mu.Unlock()
		if err != nil {
			return fail(err)
		}
		n.mu.RLock()
		sp = n.find(int64(rev))
	}
	if sp == nil {
		n.mu.RUnlock()
		if int64(rev) <= s.floor.Load() && !s.keptAnywhere(int64(rev)) {
			return fail(detail(ErrCompacted, "floor is", s.floor.Load()))
		}
		return nil, nil
	}
	defer n.mu.RUnlock()
	if kl := sp.kls[int64(rev)-sp.first]; !kept(kl, int64(rev)) {
		return fail(detail(ErrCompacted, "its entry was dropped at floor", s.floor.Load()))
	}
	m := make(map[string]string, len(sp.kv)/2)
	for i := 0; i < len(sp.kv); i += 2 {
		m[sp.kv[i]] = sp.kv[i+1]
	}
	return m, nil
}

// find returns the span holding rev, or nil; the caller holds mu.
func (n *noteLog[V]) find(rev int64) *noteSpan[V] {
	i := sort.Search(len(n.spans), func(i int) bool { return n.spans[i].last() >= rev })
	if i < len(n.spans) && n.spans[i].first <= rev {
		return &n.spans[i]
	}
	return nil
}

// HistoryNotes is History with each entry's annotations: key's retained
// entries, oldest first, each with the annotations of its revision (nil
// for a revision written without any; a new map for each entry), read
// together, where History and one Annotations call per entry would take
// the annotations' lock once each. It yields the entries History returns
// when it starts; breaking the loop ends it.
//
// This is how an audit program reads who changed a key and why. Writing an
// annotated change is an Update that calls Txn.Annotate: annotations
// belong to a commit, and Update is the one way to commit several things
// together.
func (s *Store[V]) HistoryNotes(key string) iter.Seq2[Entry[V], map[string]string] {
	return func(yield func(Entry[V], map[string]string) bool) {
		es := s.History(key)
		notes := make([]map[string]string, len(es))
		n := &s.notes
		n.mu.RLock()
		for i, e := range es {
			if kv := n.notesOf(int64(e.Rev)); len(kv) > 0 {
				m := make(map[string]string, len(kv)/2)
				for j := 0; j < len(kv); j += 2 {
					m[kv[j]] = kv[j+1]
				}
				notes[i] = m
			}
		}
		n.mu.RUnlock()
		for i, e := range es {
			if !yield(e, notes[i]) {
				return
			}
		}
	}
}

// notesOf returns the annotations of rev (sorted pairs), or nil; the
// caller holds mu.
func (n *noteLog[V]) notesOf(rev int64) []string {
	if sp := n.find(rev); sp != nil {
		return sp.kv
	}
	return nil
}

// kept reports whether kl's log still holds its entry of revision rev,
// which kl made: in memory, or sealed and not hidden by a trim since (a
// key's retained history has no holes: what trims and compactions drop is
// its oldest entries).
func kept[V any](kl *keyLog[V], rev int64) bool {
	if kl == nil {
		return false
	}
	kl.mu.RLock()
	e, st := kl.log.At(rev)
	kl.mu.RUnlock()
	return st == revlog.Found && e.Rev == rev || st == revlog.Sealed
}

// keptAnywhere reports whether some key still holds its entry of revision
// rev, for a revision at or below the floor without annotations: every
// revision above the floor keeps its entry, and below it the store does
// not know which key made a revision, so it looks at every key's log
// (O(keys); an audit call, not a hot one), on a copy of the tree, so that
// writers do not wait for it.
func (s *state[V]) keptAnywhere(rev int64) bool {
	s.mu.Lock()
	keys := s.tree.Clone()
	s.mu.Unlock()
	found := false
	keys.Ascend(func(kl *keyLog[V]) bool {
		kl.mu.RLock()
		e, st := kl.log.At(rev)
		kl.mu.RUnlock()
		switch st {
		case revlog.Found:
			found = e.Rev == rev
		case revlog.Sealed: // kept if the tier's entry at rev is this key's
			pub, ok, err := s.sealedRead(kl.key, rev)
			found = err == nil && ok && int64(pub.Rev) == rev
		}
		return !found
	})
	return found
}

// addNotesLocked records the commit's annotations (state.commitNotes) for
// cs, just applied at revisions first... The caller holds state.mu.
func (s *state[V]) addNotesLocked(cs []change[V]) {
	sp := noteSpan[V]{first: cs[0].e.Rev, kls: make([]*keyLog[V], len(cs)), kv: s.commitNotes}
	for i := range cs {
		sp.kls[i] = cs[i].kl
	}
	s.notes.mu.Lock()
	s.notes.spans = append(s.notes.spans, sp)
	s.notes.mu.Unlock()
}

// forgetNotesLocked lets go of the spans at the front whose revisions are
// all at or below floor and none kept (compaction sweeps them all:
// sweepNotesLocked). The caller holds state.mu.
func (s *state[V]) forgetNotesLocked(floor int64) {
	if len(s.notes.spans) == 0 {
		return
	}
	n := &s.notes
	n.mu.Lock()
	defer n.mu.Unlock()
	i := 0
	for i < len(n.spans) && n.spans[i].last() <= floor {
		if s.resolveLocked(&n.spans[i]); n.spans[i].anyKept() { // kept too where it failed
			break
		}
		i++
	}
	if i > 0 {
		clear(n.spans[:i])
		n.spans = n.spans[i:]
		n.gone.Add(1)
	}
}

// sweepNotes lets go of every span none of whose revisions is kept, after
// a compaction or trim pass, and has durability do the same for the
// chain's digests.
func (s *state[V]) sweepNotes() {
	s.lockQuiet()
	defer s.unlockQuiet()
	s.dur.swept(s)
	s.sweepNotesLocked()
	s.sweepsDue--
}

// sweepNotesLocked lets go of every span none of whose revisions is kept;
// the caller holds state.mu.
func (s *state[V]) sweepNotesLocked() {
	n := &s.notes
	if len(n.spans) == 0 {
		return
	}
	floor := s.floor.Load()
	n.mu.Lock()
	for i := range n.spans {
		if n.spans[i].last() <= floor { // above the floor, a span not looked up yet is kept
			s.resolveLocked(&n.spans[i]) // where it fails, the span stays, kept
		}
	}
	was := len(n.spans)
	n.spans = slices.DeleteFunc(n.spans, func(sp noteSpan[V]) bool { return !sp.anyKept() })
	if len(n.spans) < was {
		n.gone.Add(1)
	}
	n.mu.Unlock()
}

// resolveLocked looks up the keys of sp's sealed revisions that Open left
// (noteSpan.sealed), into a new kls: a snapshot being written may be
// reading the old one. Where a segment cannot be read, sp stays as it
// was, counted kept, and the error is returned: a passing fault must not
// lose annotations. The caller holds notes.mu (and may hold state.mu).
func (s *state[V]) resolveLocked(sp *noteSpan[V]) error {
	if !sp.sealed {
		return nil
	}
	kls := slices.Clone(sp.kls)
	if err := s.sealedKeysOf(sp.first, kls); err != nil {
		return err
	}
	sp.kls, sp.sealed = kls, false
	return nil
}

// anyKept reports whether a revision of sp keeps its entry; a span whose
// keys are not looked up yet counts as kept.
func (sp *noteSpan[V]) anyKept() bool {
	if sp.sealed {
		return true
	}
	for i, kl := range sp.kls {
		if kl != nil && kept(kl, sp.first+int64(i)) {
			return true
		}
	}
	return false
}

// notesNear is notesOf, with the revisions around rev that have the same
// answer: the span that holds rev, or the gap between two spans. A span's
// pairs never change, so a rehash in revision order takes mu once a span
// or gap, not once a revision. The caller holds mu.
func (n *noteLog[V]) notesNear(rev int64) (kv []string, lo, hi int64) {
	i := sort.Search(len(n.spans), func(i int) bool { return n.spans[i].last() >= rev })
	lo, hi = math.MinInt64, math.MaxInt64
	if i > 0 {
		lo = n.spans[i-1].last() + 1
	}
	if i < len(n.spans) {
		if sp := &n.spans[i]; sp.first <= rev {
			return sp.kv, sp.first, sp.last()
		}
		hi = n.spans[i].first - 1
	}
	return nil, lo, hi
}
