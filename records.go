package revkv

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/revkv/revkv/mvcc"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/wal"
)

// Every record a store on a directory logs is made here, from the store's
// own types, under the write lock (state.mu); package wal encodes it. A
// commit's records wait in the log's buffer for its drain's one write (see
// group.go); compactions and trims, which happen outside drains, are
// written at once. A checkpoint's snapshot records are made here too
// (stateRecord, keyRecorder).

// record buffers the batch record of cs, about to be committed as
// revisions first... at time t. A value the codec cannot encode is the
// commit's error, and nothing is buffered.
func (d *disk[V]) record(s *state[V], cs []change[V], first int64, t time.Time) error {
	d.batch = d.batch[:0]
	vals := d.payload[:0]
	size := recordBound(s.commitNotes)
	for i := range cs {
		d.batch = append(d.batch, wal.Entry{})
		x := &d.batch[i]
		e := cs[i].e
		e.Rev = first + int64(i)
		logEntry(x, cs[i].key, &e, t)
		if e.Op == revlog.Put {
			start := len(vals)
			var err error
			if vals, err = d.codec.Encode(vals, e.Value); err != nil {
				return &codecError{err}
			}
			if vals, err = d.settle(&cs[i].e, vals, start); err != nil {
				return &codecError{err}
			}
			x.Value = vals[start:len(vals):len(vals)]
		}
		if size += entryBound + len(x.Key) + len(x.Zone) + len(x.Value); size > maxLogRecord {
			d.payload = vals[:0]
			return fmt.Errorf("%w: its %d entries pass %d bytes at entry %d", ErrTooLarge, len(cs), maxLogRecord, i+1)
		}
	}
	d.payload = vals
	c := &d.chained
	c.Batch, c.Notes = d.batch, s.commitNotes
	d.chainMu.Lock()
	_, prev := d.chain.Last() // only writers, under state.mu, push
	d.chainMu.Unlock()
	d.digests = hashBatch(&d.hasher, &d.link, prev, d.batch, c.Notes, d.digests[:0])
	d.pushDigests(d.digests)
	c.Digest = d.digests[len(d.digests)-1]
	d.w.BufferChained(c)
	c.Batch, c.Notes = nil, nil
	return nil
}

// maxLogRecord is the most bytes a batch's record may hold (a variable
// for the tests), and entryBound the most an entry's encoding adds to its
// key, zone name and value: a bound record checks before it hashes, so
// that a write too large for the log is refused with nothing changed.
var maxLogRecord = wal.MaxRecord

const entryBound = 96

// recordBound is the most bytes a batch record's annotations and frame
// take, beside its entries.
func recordBound(notes []string) int {
	size := 128 + 16*len(notes)
	for _, s := range notes {
		size += len(s)
	}
	return size
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

// codecError is a value the codec could not encode.
type codecError struct{ err error }

func (e *codecError) Error() string { return "encoding the value: " + e.err.Error() }
func (e *codecError) Unwrap() error { return e.err }

// trimmed logs that kl's log now starts at its first entry (or that the
// key was removed); count says a count trim raised Floor with it.
func (d *disk[V]) trimmed(_ *state[V], kl *keyLog[V], removed, count bool) {
	t := wal.Trim{Key: kl.key, Count: count, Dropped: kl.log.Dropped()}
	if !removed {
		t.Lo = kl.log.Entries()[0].Rev
	}
	d.rec = wal.AppendTrim(d.rec[:0], t)
	d.writeNow(wal.KindTrim, d.rec)
}

// compacted logs a compaction at rev, whose time is t.
func (d *disk[V]) compacted(_ *state[V], rev int64, t time.Time) {
	d.rec = wal.AppendCompact(d.rec[:0], wal.Compact{Rev: rev, Sec: t.Unix(), Nsec: int64(t.Nanosecond())})
	d.writeNow(wal.KindCompact, d.rec)
}

// writeNow writes a record of upkeep at once: no drain runs (it holds the
// write lock from start to end), so the buffer holds nothing else.
func (d *disk[V]) writeNow(kind wal.Kind, payload []byte) {
	d.w.Buffer(kind, payload)
	n, err := d.w.Flush()
	d.logged.Add(int64(n))
	if err != nil {
		d.fail(err)
	}
}

// logDeferredTrimsLocked buffers the cuts cap counted, for the drain's own
// write, so that they are synced with the revisions that made them: a
// crash never keeps a drain's writes without its cuts. A view opened
// while the drain syncs may keep more in memory than the cut logged
// (applyDeferredTrimsLocked): memory then holds more than a replay would,
// never less.
func (d *disk[V]) logDeferredTrimsLocked() {
	for _, kl := range d.trims {
		es := kl.log.Entries()
		t := wal.Trim{Key: kl.key, Count: true, Lo: es[kl.drop].Rev, Dropped: max(kl.log.Dropped(), es[kl.drop-1].Rev)}
		d.rec = wal.AppendTrim(d.rec[:0], t)
		d.w.Buffer(wal.KindTrim, d.rec)
	}
}

// stateRecord is a snapshot's first record: the store's state at the head
// h, but for the revision times, which the checkpoint reads after it lets
// go of the write lock.
func stateRecord[V any](s *state[V], h mvcc.Stamp) wal.State {
	st := wal.State{
		Last: h.Rev, LastTime: instantOf(h.Time), Base: s.order.Base(), Held: s.order.Held(),
		CompactRev: s.compactRev, TrimFloor: s.trimFloor,
	}
	if first, ok := s.order.First(); ok {
		st.First = instantOf(first)
	}
	if m := s.compaction.Load(); m != nil {
		st.Compacted = instantOf(m.time)
	}
	return st
}

func instantOf(t time.Time) wal.Instant {
	return wal.Instant{Sec: t.Unix(), Nsec: int32(t.Nanosecond())}
}

// keyRecorder makes a snapshot's key records, reusing its buffers.
type keyRecorder[V any] struct {
	k    wal.Key
	vals []byte
	p    []byte
}

// record returns the key record of kl's entries up to revision last, read
// under the key's lock, or nil if it has none. The bytes are the
// recorder's until its next call.
func (r *keyRecorder[V]) record(codec Codec[V], zones *revlog.Zones, kl *keyLog[V], last int64) ([]byte, error) {
	r.k.Key, r.k.Entries, r.vals = kl.key, r.k.Entries[:0], r.vals[:0]
	var err error
	kl.mu.RLock()
	es := kl.log.Entries()
	r.k.Trimmed, r.k.Dropped = kl.log.Lo() > 0, kl.log.Dropped()
	r.k.Sealed, r.k.Lo = kl.log.SealedBelow() > 0, kl.log.SealedFrom()
	for i := range es {
		if es[i].Rev > last {
			break
		}
		r.k.Entries = append(r.k.Entries, wal.Entry{})
		x := &r.k.Entries[len(r.k.Entries)-1]
		logEntry(x, kl.key, &es[i], es[i].Time(zones))
		if es[i].Op == revlog.Put {
			start := len(r.vals)
			if r.vals, err = codec.Encode(r.vals, es[i].Value); err != nil {
				break
			}
			x.Value = r.vals[start:len(r.vals):len(r.vals)]
		}
	}
	kl.mu.RUnlock()
	if err != nil || len(r.k.Entries) == 0 {
		return nil, err
	}
	r.p = wal.AppendKey(r.p[:0], &r.k)
	return r.p, nil
}

// settle makes the value of e, whose bytes are vals[start:], the value a
// reopen would decode from them, and the bytes ones that encode it again
// to themselves, so that a checkpoint or an export, which encode the
// values held, give the bytes the chain covers. StringCodec's bytes are
// the value already; BytesCodec's value becomes a copy the caller can no
// longer change under the store; any other codec's value is decoded, and
// encoded again until it gives its own bytes back (once, for JSON's
// values that do not survive a round trip, such as a string that is not
// UTF-8), or the write fails.
func (d *disk[V]) settle(e *revlog.Entry[V], vals []byte, start int) ([]byte, error) {
	switch any(d.codec).(type) {
	case stringCodec:
		return vals, nil
	case bytesCodec:
		v, err := d.codec.Decode(vals[start:])
		e.Value = v
		return vals, err
	}
	for range 3 {
		v, err := d.codec.Decode(vals[start:])
		if err != nil {
			return vals, fmt.Errorf("decoding what it encoded: %w", err)
		}
		again, err := d.codec.Encode(d.settled[:0], v)
		if err != nil {
			return vals, err
		}
		d.settled = again
		if bytes.Equal(again, vals[start:]) {
			e.Value = v
			return vals, nil
		}
		vals = append(vals[:start], again...)
	}
	return vals, errors.New("the codec does not give back the bytes it decodes, so the hash chain cannot cover the value")
}
