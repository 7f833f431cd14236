package revkv

import (
	"errors"
	"iter"
	"time"

	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/ttl"
)

// alive reports whether a slot with the given deadline, just read from the
// index, holds a live value now: a value whose expiry time has come is
// missing, whether or not its OpExpire entry was written yet. The clock is
// read only for a value with a TTL (now is zero otherwise), after the index's
// lock was released: a head published since then can only move now later,
// and every expiry due by that head's time was written before it, so the
// answer is the one a read at some moment between the lookup and the return
// would give.
func (s *state[V]) alive(deadline int64) (now time.Time, ok bool) {
	switch deadline {
	case gone:
		return time.Time{}, false
	case never:
		return time.Time{}, true
	}
	now = s.order.Now(s.order.Head())
	return now, deadline > ttl.Nanos(now)
}

// Get returns key's live value. A missing, deleted or expired key is
// (zero, false). It costs one map lookup under a read lock; the clock is
// read only for a value with a TTL.
//
// It is kept small enough for the compiler to inline (the TTL case is a
// call): inlined, the cache misses of a caller's consecutive lookups
// overlap more (bench/README.md has the figures).
func (s *Store[V]) Get(key string) (V, bool) {
	s.indexMu.RLock()
	x, ok := s.index[key]
	s.indexMu.RUnlock()
	if ok && (x.deadline == never || x.deadline != gone && s.unexpired(x.deadline)) {
		return x.value, true
	}
	var zero V
	return zero, false
}

// unexpired reports whether a TTL deadline is still ahead of now: alive for
// a value with a TTL, without now.
func (s *state[V]) unexpired(deadline int64) bool {
	return deadline > ttl.Nanos(s.order.Now(s.order.Head()))
}

// GetEntry returns key's live entry (always an OpPut), with the revision and
// time that wrote it and its expiry time, if any.
func (s *Store[V]) GetEntry(key string) (Entry[V], bool) {
	e, _, ok := s.liveEntry(key)
	if !ok {
		return Entry[V]{}, false
	}
	return entryOf(key, &e, &s.zones), true
}

// currentRev returns the revision of key's live entry, 0 if there is none.
func (s *state[V]) currentRev(key string) Revision {
	e, _, ok := s.liveEntry(key)
	if !ok {
		return 0
	}
	return Revision(e.Rev)
}

// TTL returns the time key has left (> 0). A missing, deleted or expired key
// is ErrNotFound; a live key without a TTL is ErrNoTTL.
func (s *Store[V]) TTL(key string) (time.Duration, error) {
	e, now, ok := s.liveEntry(key)
	switch {
	case !ok:
		return 0, keyErr("ttl of", key, "", nil, ErrNotFound)
	case !e.HasTTL:
		return 0, keyErr("ttl of", key, "", nil, ErrNoTTL)
	}
	if now.IsZero() {
		now = s.order.Now(s.order.Head())
	}
	return e.ExpiresAt(&s.zones).Sub(now), nil
}

// liveEntry returns key's live entry, read from the key's log at the head
// loaded with the slot: the newest entry at or below that head is the slot's,
// since later appends take higher revisions. Should a trim or compaction have
// dropped it in between (the lookup answers Compacted or Absent), it reads
// again.
func (s *state[V]) liveEntry(key string) (revlog.Entry[V], time.Time, bool) {
	for {
		s.indexMu.RLock()
		x, ok := s.index[key]
		h := s.order.Head()
		s.indexMu.RUnlock()
		if !ok {
			return revlog.Entry[V]{}, time.Time{}, false
		}
		now, live := s.alive(x.deadline)
		if !live {
			return revlog.Entry[V]{}, now, false
		}
		x.kl.mu.RLock()
		e, st := x.kl.log.At(h.Rev)
		x.kl.mu.RUnlock()
		if st == revlog.Found {
			return e, now, true
		}
	}
}

// Len returns the number of live keys. O(log n + keys expired but not yet
// materialised); it takes the write lock briefly.
func (s *Store[V]) Len() int {
	if err := s.dur.err(); err != nil && !errors.Is(err, ErrReadOnly) {
		// The failed drain's writes are in memory but were never published:
		// count what readers see. (A read-only store's writes were not
		// stopped by a failure: its counts are whole.)
		v, err := s.At(s.Rev())
		if err != nil {
			return 0
		}
		defer v.Close()
		return v.Len()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := ttl.Nanos(s.order.Now(s.order.Head()))
	live, due := s.dur.unpublishedLocked(s.state, now) // a drain syncing: not yet readers'
	return s.liveKeys - live - (s.expiry.CountDue(now) - due)
}

// History returns key's retained entries, oldest first, tombstones (OpDelete,
// OpExpire) included; nil for a key never written or wholly compacted away.
// Entries an open View still needs are kept, and listed, until the first trim
// after it closes. It takes the key's log lock.
func (s *Store[V]) History(key string) []Entry[V] {
	kl := s.lookup(key)
	if kl == nil {
		return nil
	}
	kl.mu.RLock()
	defer kl.mu.RUnlock()
	h := s.order.Head()
	var out []Entry[V]
	if sb := kl.log.SealedBelow(); sb > 0 {
		// The sealed entries first: what the tier gives, up to an error.
		for e, err := range s.sealedRange(key, kl.log.SealedFrom(), sb-1) {
			if err != nil {
				break
			}
			out = append(out, e)
		}
	}
	for i, es := 0, kl.log.Entries(); i < len(es) && es[i].Rev <= h.Rev; i++ {
		if out == nil {
			out = make([]Entry[V], 0, len(es))
		}
		out = append(out, entryOf(key, &es[i], &s.zones))
	}
	return out
}

// GetAt returns key's value just after revision rev committed. rev <= 0 is
// (zero, false, nil): the empty state is always known. rev > Rev() is
// ErrFutureRevision. If the entries that decide the answer were trimmed or
// compacted, ErrCompacted: never a wrong value. O(log n) in the key's history.
func (s *Store[V]) GetAt(key string, rev Revision) (V, bool, error) {
	var zero V
	r := int64(rev)
	if r <= 0 {
		return zero, false, nil
	}
	if h := s.order.Head(); r > h.Rev {
		return zero, false, readErr(key, rev, detail(ErrFutureRevision, "latest is", h.Rev))
	}
	e, st := revlog.Entry[V]{}, revlog.Absent
	kl := s.lookup(key)
	if kl != nil {
		kl.mu.RLock()
		e, st = kl.log.At(r)
		kl.mu.RUnlock()
	}
	if st == revlog.Sealed {
		return s.getSealed(key, rev)
	}
	// The compaction is checked after the read: a Compact that ran during it
	// may have removed the key, and then the answer is no longer known.
	if m := s.compaction.Load(); st == revlog.Compacted || (m != nil && r < m.rev) {
		return zero, false, readErr(key, rev, detail(ErrCompacted, "oldest readable is", s.oldestOf(kl)))
	}
	if st != revlog.Found || e.Op != revlog.Put {
		return zero, false, nil
	}
	return e.Value, true, nil
}

// getSealed is GetAt of a revision below the key's sealed mark.
func (s *state[V]) getSealed(key string, rev Revision) (V, bool, error) {
	var zero V
	e, ok, err := s.sealedRead(key, int64(rev))
	if m := s.compaction.Load(); err == nil && m != nil && int64(rev) < m.rev {
		err = ErrCompacted
	}
	if err != nil {
		return zero, false, readErr(key, rev, err)
	}
	if !ok || e.Op != OpPut {
		return zero, false, nil
	}
	return e.Value, true, nil
}

// GetAsOf returns the value of key's last entry with Time <= t, unless that
// entry had expired by t (ExpiresAt <= t). t after now is ErrFutureRevision; t
// before the first revision is (zero, false, nil). The ErrCompacted rule of
// GetAt applies, by time. O(log n) in the key's history.
func (s *Store[V]) GetAsOf(key string, t time.Time) (V, bool, error) {
	var zero V
	if now := s.order.Now(s.order.Head()); t.After(now) {
		return zero, false, keyErr("get", key, "as of", t, detail(ErrFutureRevision, "now is", now))
	}
	if first, ok := s.order.First(); !ok || t.Before(first) {
		return zero, false, nil
	}
	e, st := revlog.Entry[V]{}, revlog.Absent
	kl := s.lookup(key)
	if kl != nil {
		kl.mu.RLock()
		e, st = kl.log.AsOf(t, s.order.Head().Rev)
		kl.mu.RUnlock()
	}
	if st == revlog.Sealed {
		return s.getSealedAsOf(key, t)
	}
	if m := s.compaction.Load(); st == revlog.Compacted || (m != nil && t.Before(m.time)) {
		return zero, false, keyErr("get", key, "as of", t, detail(ErrCompacted, "oldest readable is", s.oldestOf(kl)))
	}
	if st != revlog.Found || !e.Live(ttl.Nanos(t)) {
		return zero, false, nil
	}
	return e.Value, true, nil
}

// getSealedAsOf is GetAsOf of a time below the key's sealed mark: the
// revision at t, then the tier's entry there.
func (s *state[V]) getSealedAsOf(key string, t time.Time) (V, bool, error) {
	var zero V
	s.mu.Lock()
	r, known, err := s.revAt(t)
	s.mu.Unlock()
	var e Entry[V]
	ok := false
	if known && err == nil {
		e, ok, err = s.entryAt(key, r)
	}
	if m := s.compaction.Load(); err == nil && (!known || m != nil && t.Before(m.time)) {
		err = ErrCompacted
	}
	if err != nil {
		return zero, false, keyErr("get", key, "as of", t, err)
	}
	if !ok || !liveAt(&e, ttl.Nanos(t)) {
		return zero, false, nil
	}
	return e.Value, true, nil
}

// readErr is the error of GetAt(key, rev).
// oldestOf returns the oldest revision at which a read of kl's key (nil:
// a key not in the store) is not ErrCompacted: the last compaction, or the
// key's oldest kept entry if its own history was trimmed above it (which
// may be below Floor, a bound for every key). An error names it, so that a
// caller knows what to ask for instead.
func (s *state[V]) oldestOf(kl *keyLog[V]) int64 {
	oldest := int64(1)
	if m := s.compaction.Load(); m != nil {
		oldest = max(oldest, m.rev)
	}
	if kl != nil {
		kl.mu.RLock()
		oldest = max(oldest, kl.log.Lo())
		kl.mu.RUnlock()
	}
	return max(oldest, 1)
}

func readErr(key string, rev Revision, err error) error {
	e := keyErr("get", key, "at", rev, err)
	e.Rev = rev
	return e
}

// Scan yields the live keys with the given prefix and their values, in
// byte-wise key order. It is a consistent snapshot as of the revision current
// when the iteration began (expiry judged at that moment); the loop body may
// read and write the store, which never changes what the loop yields. The
// revision is pinned, as by a View, until the loop ends. Each step is
// O(log n) in the key's history; starting costs O(log keys).
func (s *Store[V]) Scan(prefix string) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		s.mu.Lock()
		h := s.order.Head()
		v := s.openLocked(h.Rev, s.order.Now(h))
		keys := s.tree.Clone()
		s.mu.Unlock()
		defer v.Close()
		v.scan(keys, prefix, yield)
	}
}
