package revkv

import (
	"iter"

	"github.com/revkv/revkv/revlog"
)

// historyChunk is how many entries HistoryRange copies out of a key's log
// per lock: enough that the lock is taken rarely on a long history, few
// enough that the stream's memory does not grow with the history and a
// writer never waits long behind it.
const historyChunk = 256

// HistoryRange yields key's entries with from <= Rev <= to, oldest first,
// tombstones (OpDelete, OpExpire) included. from <= 0 means 1; to <= 0
// means the revision current when the iteration begins; to > Rev() yields
// ErrFutureRevision and ends. from > to yields nothing.
//
// It never skips silently. Where history that the range covers is no
// longer kept (a trim or compaction dropped it), it yields ErrCompacted, in
// an *OpError whose Rev is the revision from which the rest of the range is
// whole, and goes on with the entries that are kept: so a range starting
// below the key's oldest retained entry yields ErrCompacted first, as GetAt
// at from would, and code that must know a history is whole stops at the
// first error. Entries trimmed while the loop runs are reported the same
// way when the loop reaches them.
//
// Unlike History, it holds bounded memory however long the key's history
// is: it copies a few hundred entries at a time under the key's lock, pins
// nothing, and the loop body may read and write the store.
func (s *Store[V]) HistoryRange(key string, from, to Revision) iter.Seq2[Entry[V], error] {
	return func(yield func(Entry[V], error) bool) {
		h := s.order.Head().Rev
		switch {
		case int64(to) > h:
			yield(Entry[V]{}, keyErr("history of", key, "to", to, detail(ErrFutureRevision, "latest is", h)))
			return
		case to <= 0:
			to = Revision(h)
		}
		lo := max(int64(from), 1)
		if lo > int64(to) {
			return
		}
		s.historyRange(key, lo, int64(to), yield)
	}
}

// historyRange streams key's entries in [lo, hi], hi <= the head.
func (s *state[V]) historyRange(key string, lo, hi int64, yield func(Entry[V], error) bool) {
	kl := s.lookup(key)
	var buf []revlog.Entry[V]
	// next is the lowest revision not yet yielded. Each chunk is copied
	// with the entry after it, whose revision is want: the next chunk must
	// begin with it, so that a trim between two chunks shows as that entry
	// gone. want is 0 where no chunk of the log came before.
	next, want := lo, int64(0)
	for first := true; next <= hi; first = false {
		var c chunk
		buf, c = s.historyChunk(kl, next, hi, buf[:0])
		if first && c.known > next {
			// Where GetAt stops answering ErrCompacted.
			if !yield(Entry[V]{}, s.compactedFrom(key, Revision(c.known))) {
				return
			}
		}
		if c.sealed > next {
			// Sealed history first (never a loss: a seal moved it).
			end := min(hi, c.sealed-1)
			for e, err := range s.sealedRange(key, max(next, c.from), end) {
				if !yield(e, err) || err != nil {
					return
				}
			}
			next, want = end+1, 0
			continue
		}
		if want > 0 && (len(buf) == 0 || buf[0].Rev != want) {
			restart := next
			if len(buf) > 0 {
				restart = buf[0].Rev
			}
			if !yield(Entry[V]{}, s.compactedFrom(key, Revision(restart))) {
				return
			}
		}
		for i := range buf[:min(len(buf), historyChunk)] {
			if !yield(entryOf(key, &buf[i], &s.zones), nil) {
				return
			}
		}
		if len(buf) <= historyChunk {
			return
		}
		want = buf[historyChunk].Rev
		buf = buf[:historyChunk]
		next = buf[historyChunk-1].Rev + 1
	}
}

// chunk is what historyChunk read of a key's log besides its entries.
type chunk struct {
	lo     int64 // the log's Lo: reads below it are Compacted
	from   int64 // the log's SealedFrom: its oldest sealed entry
	known  int64 // the revision below which GetAt answers ErrCompacted (0: none)
	sealed int64 // the log's SealedBelow
}

// historyChunk copies up to historyChunk+1 of kl's entries in [rev, hi]
// into buf, and returns them with what the log says of its bounds. kl nil
// is a key not in the store.
func (s *state[V]) historyChunk(kl *keyLog[V], rev, hi int64, buf []revlog.Entry[V]) ([]revlog.Entry[V], chunk) {
	var c chunk
	if kl != nil {
		kl.mu.RLock()
		buf = kl.log.AppendRange(buf, rev, hi, historyChunk+1)
		c.lo, c.sealed, c.from = kl.log.Lo(), kl.log.SealedBelow(), kl.log.SealedFrom()
		kl.mu.RUnlock()
	}
	c.known = c.lo
	// Checked after the read, as GetAt does: a Compact during it may have
	// removed the key.
	if m := s.compaction.Load(); m != nil {
		c.known = max(c.known, m.rev)
	}
	return buf, c
}

// compactedFrom is HistoryRange's ErrCompacted: Rev names the revision
// from which the rest of the range is whole.
func (s *state[V]) compactedFrom(key string, restart Revision) error {
	e := keyErr("history of", key, "from", restart, detail(ErrCompacted, "whole from revision", restart))
	e.Rev = restart
	return e
}
