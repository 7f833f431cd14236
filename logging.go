package revkv

import (
	"time"

	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/wal"
)

// A store on a directory turns each change into a log record here, under
// the write lock (state.mu): the drain writes what these buffer (see
// durable.go).

// logLocked logs a record: buffered for the drain's write during a drain;
// written at once otherwise (compactions and trims). Nothing is logged while Open
// replays the log.
func (s *state[V]) logLocked(kind wal.Kind, payload []byte) {
	d := s.d
	if d.replaying {
		return
	}
	d.w.Buffer(kind, payload)
	s.writeBufferedLocked()
}

// slotsLaterLocked is the end of commitLocked for a store on a directory
// that runs a drain or replays its log: cs's revisions are assigned, and
// their index slots set later.
//   - In a drain they are published, with the slots, once the drain's log
//     is synced.
//   - In a replay no reader can look yet: a key's slot is set at its first
//     write of the replay (so that lookupLocked finds a new key), and again
//     at the replay's end (replayLog).
func (s *state[V]) slotsLaterLocked(cs []change[V], t time.Time) {
	d := s.d
	if d.draining {
		s.order.Assign(len(cs), t)
		for i := range cs {
			d.pending = append(d.pending, slotUpdate[V]{cs[i].key, indexedOf(cs[i].kl, &cs[i].e)})
			d.touched = append(d.touched, cs[i].key)
		}
		return
	}
	s.indexMu.Lock()
	for i := range cs {
		if kl := cs[i].kl; !kl.stale {
			kl.stale = true
			d.stale = append(d.stale, kl)
			s.index[cs[i].key] = indexedOf(kl, &cs[i].e)
		}
	}
	s.order.CommitN(len(cs), t)
	s.indexMu.Unlock()
}

// logBatchRecordLocked is logLocked of a batch record, encoded straight
// into the log's buffer.
func (s *state[V]) logBatchRecordLocked(b wal.Batch) {
	if s.d.replaying {
		return
	}
	s.d.w.BufferBatch(b)
	s.writeBufferedLocked()
}

// writeBufferedLocked writes the records just buffered, unless a drain
// runs (it writes them with the rest of its batch): see logLocked.
func (s *state[V]) writeBufferedLocked() {
	d := s.d
	if d.draining {
		return // the drain writes it
	}
	n, err := d.w.Flush()
	d.logged.Add(int64(n))
	if err != nil {
		d.fail(err)
	}
}

// logEntry fills x with e, of key, at time t; the caller sets the value.
func logEntry[V any](x *wal.Entry, key string, e *revlog.Entry[V], t time.Time) {
	_, off := t.Zone()
	name := t.Location().String()
	switch t.Location() {
	case time.UTC:
		name = ""
	case time.Local:
		name = "Local"
	}
	*x = wal.Entry{Key: key, Op: uint8(e.Op), Rev: e.Rev, Sec: t.Unix(), Nsec: int32(t.Nanosecond()),
		Zone: name, Offset: int32(off), HasTTL: e.HasTTL, Expires: e.Expires}
}

// logBatchLocked logs the changes a commit is about to write, at the
// revisions and time commitLocked will give them. A value the codec cannot
// encode is the commit's error, and nothing is logged.
func (s *state[V]) logBatchLocked(cs []change[V], t time.Time) error {
	d := s.d
	if d.replaying {
		return nil
	}
	d.batch = d.batch[:0]
	rev := s.order.Next()
	vals := d.payload[:0]
	for i := range cs {
		d.batch = append(d.batch, wal.Entry{})
		x := &d.batch[i]
		e := cs[i].e
		e.Rev = rev + int64(i)
		logEntry(x, cs[i].key, &e, t)
		if e.Op == revlog.Put {
			start := len(vals)
			var err error
			if vals, err = d.codec.Encode(vals, e.Value); err != nil {
				return &codecError{err}
			}
			x.Value = vals[start:len(vals):len(vals)]
		}
	}
	d.payload = vals
	s.logBatchRecordLocked(d.batch)
	return nil
}

// codecError is a value the codec could not encode.
type codecError struct{ err error }

func (e *codecError) Error() string { return "encoding the value: " + e.err.Error() }
func (e *codecError) Unwrap() error { return e.err }

// logExpireLocked logs the expiry of key, written as revision e.Rev at t.
func (s *state[V]) logExpireLocked(key string, e *revlog.Entry[V], t time.Time) {
	if s.d.replaying {
		return
	}
	d := s.d
	d.batch = append(d.batch[:0], wal.Entry{})
	logEntry(&d.batch[0], key, e, t)
	s.logBatchRecordLocked(d.batch)
}

// logTrimLocked logs that kl's log now starts at its first entry (or that
// the key was removed); count says a count trim raised Floor with it.
func (s *state[V]) logTrimLocked(kl *keyLog[V], removed, count bool) {
	if s.d == nil || s.d.replaying {
		return
	}
	t := wal.Trim{Key: kl.key, Count: count, Dropped: kl.log.Dropped()}
	if !removed {
		t.Lo = kl.log.Entries()[0].Rev
	}
	s.d.rec = wal.AppendTrim(s.d.rec[:0], t)
	s.logLocked(wal.KindTrim, s.d.rec)
}
