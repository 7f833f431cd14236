package revkv

import (
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/revkv/revkv/mvcc"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/segment"
	"github.com/revkv/revkv/vfs"
)

// sealed is the sealed tier: the segments a manifest lists, open for
// reading, oldest first. It holds each segment's footer and decoded meta
// (zone table, digest marks) from the first read that needs it, and its
// index while the store's cache keeps it (options.indexBudget); nothing
// per entry. Safe for concurrent use: it never changes once
// opened.
//
// Invariant: segs[i] covers revisions [refs[i].First, refs[i].Last], the
// ranges follow one another in order, and each segment's footer agrees
// with its manifest entry (range, size, digest); where two segments touch
// (one ends at r-1, the next begins at r), the chain links them: the
// second's digest before its first revision is the first's at its last.
type sealed[V any] struct {
	refs  []segment.Ref
	segs  []*segment.Reader
	files []vfs.ReaderAt
	metas []*lazyMeta    // shared by the tiers made from this one (with)
	cache *segment.Cache // bounds the segments' loaded indexes; shared likewise
}

// openSealed opens the segments of dir's manifest m, their indexes
// bounded by cache. A segment that is missing, damaged or disagrees with
// the manifest is ErrCorrupt, naming the file.
func openSealed[V any](fsys vfs.FS, dir string, m segment.Manifest, cache *segment.Cache) (*sealed[V], error) {
	t := &sealed[V]{refs: m.Segments, cache: cache}
	for i, ref := range m.Segments {
		name := ref.Name()
		f, err := fsys.OpenReaderAt(filepath.Join(dir, name))
		if err != nil {
			t.close()
			return nil, corruptSegment(name, err)
		}
		t.files = append(t.files, f)
		// The footer only: the index and meta wait for the first read
		// that needs them, so that Open reads a few hundred bytes of
		// each segment, however many there are (contract §12.3).
		r, err := cache.Open(f, f.Size())
		if err == nil {
			err = agrees(r, ref, f.Size())
		}
		if err == nil && i > 0 && m.Segments[i-1].Last == ref.First-1 && r.Footer().Prev != m.Segments[i-1].Digest {
			err = fmt.Errorf("%w: its chain does not follow the segment before it", segment.ErrCorrupt)
		}
		if err != nil {
			t.close()
			return nil, corruptSegment(name, err)
		}
		t.segs, t.metas = append(t.segs, r), append(t.metas, new(lazyMeta))
	}
	return t, nil
}

// lazyMeta is a segment's meta, decoded the first time a read needs it.
type lazyMeta struct {
	once sync.Once
	m    segMeta
	err  error
}

// meta returns the i-th segment's meta, decoding it (and the segment's
// index) the first time; damage is ErrCorrupt naming the file, every
// time it is asked for.
func (t *sealed[V]) meta(i int) (*segMeta, error) {
	lm := t.metas[i]
	lm.once.Do(func() {
		raw, err := t.segs[i].Meta()
		if err == nil {
			if lm.m, err = decodeMeta(raw, t.refs[i].First, t.refs[i].Last); err != nil {
				err = fmt.Errorf("%w: %v", segment.ErrCorrupt, err)
			}
		}
		lm.err = corruptSegment(t.refs[i].Name(), err)
	})
	return &lm.m, lm.err
}

// with returns a tier holding t's segments (t may be nil) and the new one
// ref names, opened from dir in cache; t's files are shared, not reopened.
func (t *sealed[V]) with(fsys vfs.FS, dir string, ref segment.Ref, cache *segment.Cache) (*sealed[V], error) {
	n := &sealed[V]{cache: cache}
	if t != nil {
		n.refs, n.segs = slices.Clone(t.refs), slices.Clone(t.segs)
		n.files, n.metas = slices.Clone(t.files), slices.Clone(t.metas)
	}
	one, err := openSealed[V](fsys, dir, segment.Manifest{Segments: []segment.Ref{ref}}, cache)
	if err != nil {
		return nil, err
	}
	n.refs, n.segs = append(n.refs, ref), append(n.segs, one.segs...)
	n.files, n.metas = append(n.files, one.files...), append(n.metas, one.metas...)
	if k := len(n.refs); k > 1 && n.refs[k-2].Last == ref.First-1 && n.segs[k-1].Footer().Prev != n.refs[k-2].Digest {
		one.close()
		return nil, corruptSegment(ref.Name(), fmt.Errorf("%w: its chain does not follow the segment before it", segment.ErrCorrupt))
	}
	return n, nil
}

// replacing returns a tier holding t's segments but with [i, j] replaced
// by the one ref names (their merge), opened from dir; the others' files
// are shared, not reopened.
func (t *sealed[V]) replacing(fsys vfs.FS, dir string, i, j int, ref segment.Ref) (*sealed[V], error) {
	one, err := openSealed[V](fsys, dir, segment.Manifest{Segments: []segment.Ref{ref}}, t.cache)
	if err != nil {
		return nil, err
	}
	n := &sealed[V]{
		refs:  slices.Concat(t.refs[:i], one.refs, t.refs[j+1:]),
		segs:  slices.Concat(t.segs[:i], one.segs, t.segs[j+1:]),
		files: slices.Concat(t.files[:i], one.files, t.files[j+1:]),
		metas: slices.Concat(t.metas[:i], one.metas, t.metas[j+1:]),
		cache: t.cache,
	}
	if i > 0 && n.refs[i-1].Last == ref.First-1 && one.segs[0].Footer().Prev != n.refs[i-1].Digest {
		one.close()
		return nil, corruptSegment(ref.Name(), fmt.Errorf("%w: its chain does not follow the segment before it", segment.ErrCorrupt))
	}
	return n, nil
}

// agrees checks a segment's footer against its manifest entry.
func agrees(r *segment.Reader, ref segment.Ref, size int64) error {
	f := r.Footer()
	if f.First != ref.First || f.Last != ref.Last || size != ref.Size || f.Digest != ref.Digest {
		return fmt.Errorf("%w: its footer says [%d, %d], %d bytes, the manifest [%d, %d], %d bytes, or their digests differ",
			segment.ErrCorrupt, f.First, f.Last, size, ref.First, ref.Last, ref.Size)
	}
	return nil
}

// corruptSegment wraps a segment's or the manifest's error: damage is
// ErrCorrupt, naming the file; nil stays nil.
func corruptSegment(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, segment.ErrCorrupt), errors.Is(err, segment.ErrVersion):
		return detail(ErrCorrupt, "", fmt.Sprintf("%s: %v", name, err))
	}
	return fmt.Errorf("%s: %w", name, err)
}

// last returns the last revision the tier covers (0: none).
func (t *sealed[V]) last() int64 {
	if len(t.refs) == 0 {
		return 0
	}
	return t.refs[len(t.refs)-1].Last
}

func (t *sealed[V]) close() {
	for _, f := range t.files {
		f.Close()
	}
}

// covering returns the index of the segment covering rev, or of the last
// one below it (-1: none is at or below rev).
func (t *sealed[V]) covering(rev int64) int {
	return sort.Search(len(t.refs), func(i int) bool { return t.refs[i].First > rev }) - 1
}

// sealedAt returns key's newest sealed entry with Rev <= rev, looking back
// from the segment covering rev, one block read per segment looked at.
func (s *state[V]) sealedAt(t *sealed[V], key string, rev int64) (Entry[V], bool, error) {
	for i := t.covering(rev); i >= 0; i-- {
		x, ok, err := t.segs[i].Get(key, rev)
		if err != nil {
			return Entry[V]{}, false, corruptSegment(t.refs[i].Name(), err)
		}
		if ok {
			e, err := s.publicEntry(t, i, &x)
			return e, err == nil, err
		}
	}
	return Entry[V]{}, false, nil
}

// sealedHistory yields key's sealed entries with lo <= Rev <= hi, oldest
// first, reading only the blocks that hold them.
func (s *state[V]) sealedHistory(t *sealed[V], key string, lo, hi int64) iter.Seq2[Entry[V], error] {
	return func(yield func(Entry[V], error) bool) {
		for i := max(t.covering(lo), 0); i < len(t.refs) && t.refs[i].First <= hi; i++ {
			for x, err := range t.segs[i].History(key, lo, hi) {
				if err != nil {
					yield(Entry[V]{}, corruptSegment(t.refs[i].Name(), err))
					return
				}
				e, err := s.publicEntry(t, i, &x)
				if !yield(e, err) || err != nil {
					return
				}
			}
		}
	}
}

// publicEntry is a sealed entry as the API returns it: its time in its
// location, its value decoded.
func (s *state[V]) publicEntry(t *sealed[V], i int, x *segment.Entry) (Entry[V], error) {
	meta, err := t.meta(i)
	if err != nil {
		return Entry[V]{}, err
	}
	tm, err := s.locate(x, meta.zones)
	if err != nil {
		return Entry[V]{}, corruptSegment(t.refs[i].Name(), fmt.Errorf("%w: %v", segment.ErrCorrupt, err))
	}
	e := Entry[V]{Key: x.Key, Op: Op(x.Op), Rev: Revision(x.Rev), Time: tm}
	if x.HasTTL {
		e.ExpiresAt = time.Unix(0, x.Expires).In(tm.Location())
	}
	if x.Op == segment.Put {
		if e.Value, err = s.disk.codec.Decode(x.Value); err != nil {
			return Entry[V]{}, corruptSegment(t.refs[i].Name(), fmt.Errorf("%w: revision %d: the codec cannot decode its value: %v", segment.ErrCorrupt, x.Rev, err))
		}
	}
	return e, nil
}

// sealedRead answers a read of key at rev that the key's log answered
// Sealed: the tier's newest entry of the key at or below rev. The tier is
// loaded after the log was read, so it holds every segment the log's mark
// counts on.
func (s *state[V]) sealedRead(key string, rev int64) (Entry[V], bool, error) {
	t := s.disk.tier.Load()
	if t == nil {
		return Entry[V]{}, false, detail(ErrCorrupt, "", fmt.Sprintf("key %q: its history is sealed, and no segment holds it", key))
	}
	return s.sealedAt(t, key, rev)
}

// sealedRange yields key's sealed entries with lo <= Rev <= hi.
func (s *state[V]) sealedRange(key string, lo, hi int64) iter.Seq2[Entry[V], error] {
	t := s.disk.tier.Load()
	if t == nil {
		return func(yield func(Entry[V], error) bool) {
			yield(Entry[V]{}, detail(ErrCorrupt, "", fmt.Sprintf("key %q: its history is sealed, and no segment holds it", key)))
		}
	}
	return s.sealedHistory(t, key, lo, hi)
}

// liveAt reports whether a sealed entry holds a value live at t (Unix
// nanoseconds): revlog.Entry.Live for a public entry.
func liveAt[V any](e *Entry[V], t int64) bool {
	return e.Op == OpPut && (e.ExpiresAt.IsZero() || e.ExpiresAt.UnixNano() > t)
}

// sealedKeysLocked calls fn with the log of the key of each sealed
// revision lo..hi, in revision order, whose entry the key's log still
// counts on (a compaction did not hide it). The caller holds state.mu.
func (s *state[V]) sealedKeysLocked(lo, hi int64, fn func(kl *keyLog[V])) error {
	t := s.tierOrNil()
	if t == nil {
		return nil
	}
	set := func(e segment.Entry) {
		if e.Rev < lo || e.Rev > hi {
			return
		}
		// Every entry from the key's oldest retained one on: below it a
		// compaction hid them; the newest at the seal is in memory too.
		if kl := s.lookupLocked(e.Key); kl != nil && e.Rev >= kl.log.SealedFrom() {
			fn(kl)
		}
	}
	for i, r := range t.refs {
		if r.Last < lo || r.First > hi {
			continue
		}
		if from := t.segs[i].Footer().TimesFrom; from > max(lo, r.First) {
			// The revisions without locators: the few entries below the
			// segment's times, in key order.
			for e, err := range t.segs[i].All() {
				if err != nil {
					return corruptSegment(r.Name(), err)
				}
				if e.Rev < from {
					set(e)
				}
			}
		}
		for e, err := range t.segs[i].Revisions(max(lo, r.First), min(hi, r.Last)) {
			if err != nil {
				return corruptSegment(r.Name(), err)
			}
			set(e)
		}
	}
	return nil
}

// entryAt returns key's entry visible at rev, from its log or the tier: a
// read at a revision for GetAsOf, whose log answered Sealed at a time.
func (s *state[V]) entryAt(key string, rev int64) (Entry[V], bool, error) {
	kl := s.lookup(key)
	if kl == nil {
		return Entry[V]{}, false, nil
	}
	kl.mu.RLock()
	e, st := kl.log.At(rev)
	kl.mu.RUnlock()
	switch st {
	case revlog.Found:
		return entryOf(key, &e, &s.zones), true, nil
	case revlog.Sealed:
		return s.sealedRead(key, rev)
	case revlog.Compacted:
		return Entry[V]{}, false, ErrCompacted
	}
	return Entry[V]{}, false, nil
}

// sealedKept reports whether revision rev is a sealed entry the store
// still keeps: one a compaction did not hide.
func (s *state[V]) sealedKept(rev int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tierOrNil() != nil && s.sealedKeyOf(rev) != nil
}

// sealedKeyOf returns the log of the key whose sealed entry is revision
// rev, if the tier holds it and the key's log counts on it; nil
// otherwise (a segment it cannot read too).
func (s *state[V]) sealedKeyOf(rev int64) *keyLog[V] {
	var kl [1]*keyLog[V]
	s.sealedKeysOf(rev, kl[:])
	return kl[0]
}

// sealedKeysOf sets kls[r-first], for each revision r of [first,
// first+len(kls)) whose key is not set yet, to the log of the key whose
// sealed entry r is, if that log counts on it, reading each segment's
// part of the range once. It takes the index's lock and the keys' own, not
// the write lock: Annotations calls it, which a transaction's fn may. A
// segment it cannot read is its error, ErrCorrupt.
func (s *state[V]) sealedKeysOf(first int64, kls []*keyLog[V]) error {
	t := s.disk.tier.Load()
	if t == nil || len(kls) == 0 {
		return nil
	}
	last := first + int64(len(kls)) - 1
	for i := max(t.covering(first), 0); i < len(t.refs) && t.refs[i].First <= last; i++ {
		lo, hi := max(first, t.refs[i].First), min(last, t.refs[i].Last)
		if lo > hi {
			continue
		}
		seq := t.segs[i].Revisions(lo, hi)
		if lo < t.segs[i].Footer().TimesFrom {
			seq = t.segs[i].All()
		}
		for e, err := range seq {
			if err != nil {
				return corruptSegment(t.refs[i].Name(), err)
			}
			if e.Rev < lo || e.Rev > hi || kls[e.Rev-first] != nil {
				continue
			}
			if kl := s.lookup(e.Key); kl != nil {
				kl.mu.RLock()
				sealed := e.Rev >= kl.log.SealedFrom() && e.Rev < kl.log.SealedBelow()
				kl.mu.RUnlock()
				if sealed {
					kls[e.Rev-first] = kl
				}
			}
		}
	}
	return nil
}

// timeOf returns the time of a sealed revision, in UTC, if the tier
// covers it: what the order shed after the seal.
func (t *sealed[V]) timeOf(rev int64) (time.Time, bool, error) {
	if t == nil {
		return time.Time{}, false, nil
	}
	i := t.covering(rev)
	if i < 0 || rev > t.refs[i].Last || rev < t.segs[i].Footer().TimesFrom {
		return time.Time{}, false, nil
	}
	sec, nsec, err := t.segs[i].TimeOf(rev)
	if err != nil {
		return time.Time{}, false, corruptSegment(t.refs[i].Name(), err)
	}
	return time.Unix(sec, int64(nsec)).UTC(), true, nil
}

// revAt returns the last sealed revision whose time is at or before tm,
// and whether the tier covers that question: false when tm falls outside
// every segment's times, or in a gap between two segments.
func (t *sealed[V]) revAt(tm time.Time) (int64, bool, error) {
	if t == nil {
		return 0, false, nil
	}
	sec, nsec := tm.Unix(), int32(tm.Nanosecond())
	for i := len(t.segs) - 1; i >= 0; i-- {
		r, known, err := t.segs[i].RevAt(sec, nsec)
		if err != nil {
			return 0, false, corruptSegment(t.refs[i].Name(), err)
		}
		if !known {
			return 0, false, nil // before the oldest time it holds
		}
		if r >= t.refs[i].First {
			return r, true, nil
		}
	}
	return 0, false, nil
}

// revTime returns the time of rev, if it is known: from the order, or,
// for a revision whose time the order shed once a seal held it, from the
// tier. The caller holds state.mu.
func (s *state[V]) revTime(rev int64) (time.Time, bool, error) {
	if t, ok := s.order.TimeOf(rev); ok || rev < s.order.Base() || rev >= s.order.Held() {
		return t, ok, nil
	}
	return s.tierOrNil().timeOf(rev)
}

// revAt returns the last revision whose time is at or before t, and
// whether that revision's number is still known (false: it is below the
// floor of known times), asking the tier where the order shed the times.
// The caller holds state.mu.
func (s *state[V]) revAt(t time.Time) (int64, bool, error) {
	r, a := s.order.RevAt(t)
	if a != mvcc.Below {
		return r, a == mvcc.Known, nil
	}
	r, ok, err := s.tierOrNil().revAt(t)
	if err != nil || !ok {
		return 0, false, err
	}
	return r, r >= s.order.Base(), nil
}

// tierOrNil is the sealed tier, nil for a store that never sealed (whose
// order never sheds, so that its tier is never asked).
func (s *state[V]) tierOrNil() *sealed[V] {
	if s.disk == nil {
		return nil
	}
	return s.disk.tier.Load()
}
