package revkv

import (
	"container/heap"
	"context"
	"errors"
	"iter"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/revkv/revkv/revlog"
)

// Changes yields every entry of every key with the prefix whose revision is
// in [from, to], in revision order, tombstones and expiries included: the
// auditor's "what changed between these two revisions", without a
// goroutine. from <= 0 means 1. to > Rev() yields ErrFutureRevision and
// ends. If an entry it must yield is no longer in history it yields
// ErrCompacted, in an *OpError whose Rev is the lowest revision it could
// start from instead, and ends: never a silent skip. Such cases: a key
// under the prefix whose log was trimmed at or above from, and one that a
// compaction removed whose last entry (its tombstone) was at or above from.
// The store remembers the last 16,384 keys compactions removed, and none
// from before Open: where it does not know, a compaction above from counts
// as such a case (a compaction removes only keys whose tombstone is below
// it). The error's text names the revision to restart from, too. A
// Changes or Watch from that revision, with nothing compacted or trimmed
// in between, does not fail again, and one from Floor does not fail.
//
// It pins nothing: entries trimmed while it runs are reported as
// ErrCompacted when it reaches them. Starting costs O(keys under the
// prefix); each entry costs O(log keys + log n). While watchers exist, a
// range that ends at the latest revision and lies among the last 65,536
// costs O(revisions in it) instead.
func (s *Store[V]) Changes(prefix string, from, to Revision) iter.Seq2[Entry[V], error] {
	return func(yield func(Entry[V], error) bool) {
		if h := s.Rev(); to > h {
			e := keyErr("changes under", prefix, "to", to, detail(ErrFutureRevision, "latest is", h))
			yield(Entry[V]{}, e)
			return
		}
		s.changes(prefix, max(int64(from), 1), int64(to), yield)
	}
}

// cursor is the next entry of one key that changes has to yield, and the
// revision of the entry after it when it was read (noNext: none). Entries
// written later take revisions above the range, so succ is all the range
// holds after e: if it is gone when the cursor moves on, it was trimmed.
type cursor[V any] struct {
	e    Entry[V]
	succ int64
	kl   *keyLog[V]
}

const noNext = math.MaxInt64

// at reads kl's entry at or after rev and the revision of the one after
// it, under kl's lock; below the log's sealed mark, from the tier. An
// error reading the tier is returned as such.
func (s *state[V]) at(kl *keyLog[V], rev int64) (c cursor[V], ok bool, dropped int64, err error) {
	kl.mu.RLock()
	c.kl, c.succ = kl, noNext
	var e revlog.Entry[V]
	sb, lo := kl.log.SealedBelow(), kl.log.SealedFrom()
	if rev >= sb {
		if e, ok = kl.log.From(rev); ok {
			c.e = entryOf(kl.key, &e, &s.zones)
			if n, more := kl.log.From(e.Rev + 1); more {
				c.succ = n.Rev
			}
		}
		dropped = kl.log.Dropped()
		kl.mu.RUnlock()
		return c, ok, dropped, nil
	}
	first, inLog := kl.log.From(sb)
	dropped = kl.log.Dropped()
	kl.mu.RUnlock()
	// Below the mark: the tier's first two entries from rev on, or its one
	// and the log's first.
	n := 0
	for x, xerr := range s.sealedRange(kl.key, max(rev, lo), sb-1) {
		if xerr != nil {
			return c, false, dropped, xerr
		}
		if n++; n == 1 {
			c.e, ok = x, true
			continue
		}
		c.succ = int64(x.Rev)
		return c, ok, dropped, nil
	}
	switch {
	case !inLog:
		return c, ok, dropped, nil // an emptied log: a compaction removed the key
	case !ok:
		c.e, ok = entryOf(kl.key, &first, &s.zones), true
		if n, more := s.fromLog(kl, first.Rev+1); more {
			c.succ = n
		}
		return c, ok, dropped, nil
	}
	c.succ = first.Rev
	return c, ok, dropped, nil
}

// fromLog returns the revision of kl's first entry in its log at or after
// rev, if any.
func (s *state[V]) fromLog(kl *keyLog[V], rev int64) (int64, bool) {
	kl.mu.RLock()
	defer kl.mu.RUnlock()
	e, ok := kl.log.From(rev)
	return e.Rev, ok
}

type cursors[V any] []cursor[V]

func (c cursors[V]) Len() int           { return len(c) }
func (c cursors[V]) Less(i, j int) bool { return c[i].e.Rev < c[j].e.Rev }
func (c cursors[V]) Swap(i, j int)      { c[i], c[j] = c[j], c[i] }
func (c *cursors[V]) Push(x any)        { *c = append(*c, x.(cursor[V])) }
func (c *cursors[V]) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// changes yields the entries of keys under prefix with from <= Rev <= to,
// merging the keys' logs by revision, and reports whether it yielded them
// all (false: the consumer stopped, or an error was yielded).
func (s *state[V]) changes(prefix string, from, to int64, yield func(Entry[V], error) bool) bool {
	if from > to {
		return true
	}
	if from >= s.floor.Load() && from <= s.sealedLast() {
		next, ok := s.changesSealed(prefix, from, to, yield)
		if !ok || next > to {
			return ok
		}
		from = next
	}
	// While the recent ring holds a range that ends at the head (every
	// wake-up of a watcher), read it revision by revision: first a pass
	// that checks every entry is still there (a loss is reported before
	// anything is yielded, as the merge does), then one that yields. A
	// range ending below the head goes to the merge, which also reports a
	// key trimmed above the range (see Changes); so do keys a compaction
	// removed, which only the merge knows.
	if to != s.order.Head().Rev || s.removedUnder(prefix, from) || !s.recentWhole(prefix, from, to) {
		return s.changesMerge(prefix, from, to, yield)
	}
	var buf [recentChunk]*keyLog[V]
	for from <= to {
		end := min(to, from+recentChunk-1)
		kls, ok := s.recent.get(buf[:0], from, end)
		if !ok {
			return s.changesMerge(prefix, from, to, yield)
		}
		if !s.changesRecent(prefix, from, to, kls, yield) {
			return false
		}
		from = end + 1
	}
	return true
}

// recentWhole reports whether the recent ring holds from..to and every
// entry of the prefix's keys in it is still in its key's log.
func (s *state[V]) recentWhole(prefix string, from, to int64) bool {
	var buf [recentChunk]*keyLog[V]
	for from <= to {
		end := min(to, from+recentChunk-1)
		kls, ok := s.recent.get(buf[:0], from, end)
		if !ok {
			return false
		}
		for i, kl := range kls {
			if !strings.HasPrefix(kl.key, prefix) {
				continue
			}
			if _, ok := entryAt(kl, from+int64(i)); !ok {
				return false
			}
		}
		from = end + 1
	}
	return true
}

// entryAt returns kl's entry at revision r, if its log still holds it.
func entryAt[V any](kl *keyLog[V], r int64) (revlog.Entry[V], bool) {
	kl.mu.RLock()
	defer kl.mu.RUnlock()
	e, ok := kl.log.From(r)
	return e, ok && e.Rev == r
}

// recentChunk is how many revisions changes takes from the ring at once.
const recentChunk = 128

// changesRecent yields the entries of the prefix's keys among kls, the keys
// of revisions from, from+1, ... (at most to). An entry trimmed since
// recentWhole looked hands the rest of the range to changesMerge, which
// reports exactly what was lost.
func (s *state[V]) changesRecent(prefix string, from, to int64, kls []*keyLog[V], yield func(Entry[V], error) bool) bool {
	for i, kl := range kls {
		if !strings.HasPrefix(kl.key, prefix) {
			continue
		}
		r := from + int64(i)
		e, ok := entryAt(kl, r)
		if !ok {
			return s.changesMerge(prefix, r, to, yield)
		}
		if !yield(entryOf(kl.key, &e, &s.zones), nil) {
			return false
		}
	}
	return true
}

// removedUnder reports whether a compaction may have removed a key under
// prefix whose last entry is at or above from. removedMax lets the common
// case (nothing removed since from) skip the write lock.
func (s *state[V]) removedUnder(prefix string, from int64) bool {
	if s.removedMax.Load() < from {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removedFloor >= from {
		return true
	}
	for _, r := range s.removals {
		if r.rev >= from && strings.HasPrefix(r.key, prefix) {
			return true
		}
	}
	return false
}

// changesMerge is changes by a k-way merge of the logs of the keys under
// prefix.
func (s *state[V]) changesMerge(prefix string, from, to int64, yield func(Entry[V], error) bool) bool {
	var (
		cs      cursors[V]
		restart int64 // > 0: entries from restart-1 down were lost
		readErr error // a read of the sealed tier failed
	)
	lost := func(dropped int64) { restart = max(restart, dropped+1) }
	s.mu.Lock()
	keys := s.tree.Clone()
	// Keys a compaction removed are gone from the tree: those under the
	// prefix whose last entry it had yet to yield are lost.
	if s.removedFloor >= from {
		lost(s.removedFloor)
	}
	for _, r := range s.removals {
		if r.rev >= from && strings.HasPrefix(r.key, prefix) {
			lost(r.rev)
		}
	}
	s.mu.Unlock()
	keys.AscendGreaterOrEqual(&keyLog[V]{key: prefix}, func(kl *keyLog[V]) bool {
		if !strings.HasPrefix(kl.key, prefix) {
			return false
		}
		c, ok, dropped, err := s.at(kl, from)
		if err != nil {
			readErr = err
			return false
		}
		if dropped >= from {
			lost(dropped)
		}
		if ok && int64(c.e.Rev) <= to {
			cs = append(cs, c)
		}
		return true
	})
	if readErr != nil {
		yield(Entry[V]{}, keyErr("changes under", prefix, "from", Revision(from), readErr))
		return false
	}
	heap.Init(&cs)
	for restart == 0 && len(cs) > 0 {
		c := heap.Pop(&cs).(cursor[V])
		if !yield(c.e, nil) {
			return false
		}
		if c.succ > to {
			continue // nothing more of this key in range
		}
		n, ok, dropped, err := s.at(c.kl, int64(c.e.Rev)+1)
		if err != nil {
			readErr = err
			break
		}
		if !ok || int64(n.e.Rev) != c.succ { // trimmed (or removed) past this reader meanwhile
			lost(dropped)
			continue
		}
		heap.Push(&cs, n)
	}
	if readErr != nil {
		yield(Entry[V]{}, keyErr("changes under", prefix, "from", Revision(from), readErr))
		return false
	}
	if restart > 0 {
		// The advice covers every key under the prefix, not only the one
		// that noticed: a compaction while this ran may have taken more
		// from another key, and a watch from restart must not fail again.
		restart = max(restart, s.lostUnder(prefix, restart))
		err := keyErr("changes under", prefix, "from", Revision(from), detail(ErrCompacted, "restart from revision", restart))
		err.Rev = Revision(restart)
		yield(Entry[V]{}, err)
		return false
	}
	return true
}

// lostUnder returns the lowest revision from which changes under prefix
// would find nothing lost, at least from: one past the highest revision
// any key under prefix dropped, or a compaction removed. It costs O(keys
// under the prefix), once, when a loss is reported.
func (s *state[V]) lostUnder(prefix string, from int64) int64 {
	restart := from
	s.mu.Lock()
	keys := s.tree.Clone()
	if s.removedFloor >= restart {
		restart = s.removedFloor + 1
	}
	for _, r := range s.removals {
		if r.rev >= restart && strings.HasPrefix(r.key, prefix) {
			restart = r.rev + 1
		}
	}
	s.mu.Unlock()
	keys.AscendGreaterOrEqual(&keyLog[V]{key: prefix}, func(kl *keyLog[V]) bool {
		if !strings.HasPrefix(kl.key, prefix) {
			return false
		}
		kl.mu.RLock()
		dropped := kl.log.Dropped()
		kl.mu.RUnlock()
		restart = max(restart, dropped+1)
		return true
	})
	return restart
}

// Watch yields, in revision order, every entry of every key with the
// prefix from revision from on: first from history, then each new revision
// as it becomes visible (after its sync, for a store on a directory), with
// no gap and nothing twice between the two. from <= 0 means Rev()+1: only
// what comes next. An Update's entries come together, in one wake-up.
// Expiries are entries when they are written (with WithExpiryInterval(d),
// within about d of their time).
//
// from above Rev()+1 waits for that revision: it yields entries from it on.
// On a closed store it yields what history holds from from, then ErrClosed.
// A nil ctx yields an error and ends.
//
// It ends when the loop breaks, yielding ctx.Err() when ctx is done,
// ErrClosed when the store closes, and ErrCompacted (see Changes) when an
// entry it must yield is gone; resuming from the revision after the last
// entry seen gives exactly the rest. It starts no goroutine and keeps no
// buffer: a consumer that falls behind reads history at its own pace and
// holds writers back not at all, and loses nothing unless history is
// trimmed past it. A wake-up costs O(new revisions) while they are among the
// last 65,536 (the store keeps their keys while watchers exist), and
// O(keys under the prefix) for a watcher further behind.
func (s *Store[V]) Watch(ctx context.Context, prefix string, from Revision) iter.Seq2[Entry[V], error] {
	return func(yield func(Entry[V], error) bool) {
		if ctx == nil {
			yield(Entry[V]{}, keyErr("watch", prefix, "", nil, errNilContext))
			return
		}
		next := int64(from)
		if next <= 0 {
			next = int64(s.Rev()) + 1
		}
		g := s.watch.join(prefix)
		defer s.watch.leave(prefix, g)
		for {
			head := int64(s.Rev())
			if next <= head {
				if !s.changes(prefix, next, head, yield) {
					return
				}
				next = head + 1
				continue
			}
			wake := s.watch.wait(g)
			if int64(s.Rev()) > head {
				continue // published between the read of the head and wait
			}
			select {
			case <-wake.ch:
				next = max(next, wake.rev)
			case <-ctx.Done():
				yield(Entry[V]{}, ctx.Err())
				return
			case <-s.stop:
				yield(Entry[V]{}, keyErr("watch", prefix, "", nil, ErrClosed))
				return
			}
		}
	}
}

var errNilContext = errors.New("nil context")

// watchers wakes the watchers of the prefixes a publication touches. It
// costs a write one atomic load while no watcher exists; with watchers,
// a map lookup per changed key and distinct prefix length, and a closed
// channel per group woken: nothing for watchers of other prefixes.
type watchers struct {
	n      atomic.Int64 // watchers joined
	mu     sync.Mutex   // guards groups, perLen and lens; taken alone, or after state.mu
	groups map[string]*watchGroup
	perLen map[int]int // prefix length → how many groups have it
	lens   []int       // the keys of perLen: the distinct lengths of the prefixes
}

// watchGroup is the watchers of one prefix. cur is closed, and replaced,
// at each publication that touches the prefix.
type watchGroup struct {
	cur     *wake
	members int
}

// wake is one wait of a group's watchers: ch closes at the first
// publication that touches the prefix after it began, and rev is then a
// revision at or below the first it touched. A watcher that waited on it
// therefore knows the prefix has no entry from where it stood up to rev,
// and moves there: a compaction below rev cannot have taken anything from
// it, however long it slept while other prefixes were written.
type wake struct {
	ch  chan struct{}
	rev int64 // set before ch closes
}

func (w *watchers) join(prefix string) *watchGroup {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.groups == nil {
		w.groups, w.perLen = map[string]*watchGroup{}, map[int]int{}
	}
	g := w.groups[prefix]
	if g == nil {
		g = &watchGroup{cur: &wake{ch: make(chan struct{})}}
		w.groups[prefix] = g
		if w.perLen[len(prefix)]++; w.perLen[len(prefix)] == 1 {
			w.lens = append(w.lens, len(prefix))
		}
	}
	g.members++
	w.n.Add(1)
	return g
}

func (w *watchers) leave(prefix string, g *watchGroup) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n.Add(-1)
	if g.members--; g.members == 0 {
		delete(w.groups, prefix)
		if w.perLen[len(prefix)]--; w.perLen[len(prefix)] == 0 {
			delete(w.perLen, len(prefix))
			w.lens = slices.DeleteFunc(w.lens, func(n int) bool { return n == len(prefix) })
		}
	}
}

func (w *watchers) wait(g *watchGroup) *wake {
	w.mu.Lock()
	defer w.mu.Unlock()
	return g.cur
}

// notifyKey wakes the groups whose prefix key has; rev is at or below the
// revision that wrote key.
func (w *watchers) notifyKey(key string, rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.lens {
		if n > len(key) {
			continue
		}
		if g := w.groups[key[:n]]; g != nil {
			g.cur.rev = rev
			close(g.cur.ch)
			g.cur = &wake{ch: make(chan struct{})}
		}
	}
}
