package etcdstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/revkv/revkv"
)

// opTrimmed marks a key whose older entries a count trim removed. It sits at
// the oldest end of the key's history (as if at revision 0), so a read below
// the key's oldest remaining entry finds it and answers ErrCompacted. Its
// rev field is that oldest remaining revision.
const opTrimmed revkv.Op = 0xff

// record is one history entry as stored in etcd: in the key's history, and
// again as its latest entry.
//
//	op (1) | flags (1) | rev (8) | time ns (8) | expires ns (8) | value
//
// flags bit 0: the entry has an expiry time (ExpiresAt is not zero).
type record struct {
	op      revkv.Op
	rev     int64
	time    int64
	expires int64 // valid only if hasTTL
	hasTTL  bool
	value   []byte // the codec's encoding; nil unless op is OpPut
}

const recordHeader = 26

func (r record) encode() []byte {
	b := make([]byte, recordHeader, recordHeader+len(r.value))
	b[0] = byte(r.op)
	if r.hasTTL {
		b[1] = 1
	}
	binary.BigEndian.PutUint64(b[2:], uint64(r.rev))
	binary.BigEndian.PutUint64(b[10:], uint64(r.time))
	binary.BigEndian.PutUint64(b[18:], uint64(r.expires))
	return append(b, r.value...)
}

var errBadRecord = errors.New("etcdstore: malformed record")

func decodeRecord(b []byte) (record, error) {
	if len(b) < recordHeader {
		return record{}, fmt.Errorf("%w: %d bytes", errBadRecord, len(b))
	}
	r := record{
		op:      revkv.Op(b[0]),
		hasTTL:  b[1]&1 != 0,
		rev:     int64(binary.BigEndian.Uint64(b[2:])),
		time:    int64(binary.BigEndian.Uint64(b[10:])),
		expires: int64(binary.BigEndian.Uint64(b[18:])),
	}
	if len(b) > recordHeader {
		r.value = b[recordHeader:]
	}
	return r, nil
}

// live reports whether r is a value still visible at now (Unix ns).
func (r record) live(now int64) bool {
	return r.op == revkv.OpPut && (!r.hasTTL || r.expires > now)
}

// entry turns r into the key's revkv entry, decoding the value.
func entry[V any](codec revkv.Codec[V], key string, r record) (revkv.Entry[V], error) {
	e := revkv.Entry[V]{Key: key, Op: r.op, Rev: revkv.Revision(r.rev), Time: time.Unix(0, r.time)}
	if r.hasTTL {
		e.ExpiresAt = time.Unix(0, r.expires)
	}
	if r.op == revkv.OpPut {
		v, err := codec.Decode(r.value)
		if err != nil {
			return e, fmt.Errorf("etcdstore: decoding the value of %q at %d: %w", key, r.rev, err)
		}
		e.Value = v
	}
	return e, nil
}

// headState is the value of the head key: the last revision, its time, and
// the time of revision 1 (reads before it are "not found", never compacted).
type headState struct {
	seq   int64
	time  int64
	first int64
	mod   int64 // the head key's etcd ModRevision: 0 if never written
}

func (h headState) encode() []byte {
	b := make([]byte, 24)
	binary.BigEndian.PutUint64(b, uint64(h.seq))
	binary.BigEndian.PutUint64(b[8:], uint64(h.time))
	binary.BigEndian.PutUint64(b[16:], uint64(h.first))
	return b
}

func decodeHead(b []byte, mod int64) (headState, error) {
	if len(b) != 24 {
		return headState{}, fmt.Errorf("%w: head of %d bytes", errBadRecord, len(b))
	}
	return headState{
		seq:   int64(binary.BigEndian.Uint64(b)),
		time:  int64(binary.BigEndian.Uint64(b[8:])),
		first: int64(binary.BigEndian.Uint64(b[16:])),
		mod:   mod,
	}, nil
}

// floorState is the value of the floor key: reads below rev (below time)
// are ErrCompacted.
type floorState struct {
	rev  int64
	time int64
	trim int64 // the highest oldest remaining revision of a trimmed key
	mod  int64
}

func (f floorState) encode() []byte {
	b := make([]byte, 24)
	binary.BigEndian.PutUint64(b, uint64(f.rev))
	binary.BigEndian.PutUint64(b[8:], uint64(f.time))
	binary.BigEndian.PutUint64(b[16:], uint64(f.trim))
	return b
}

func decodeFloor(b []byte, mod int64) (floorState, error) {
	if len(b) != 24 {
		return floorState{}, fmt.Errorf("%w: floor of %d bytes", errBadRecord, len(b))
	}
	return floorState{
		rev:  int64(binary.BigEndian.Uint64(b)),
		time: int64(binary.BigEndian.Uint64(b[8:])),
		trim: int64(binary.BigEndian.Uint64(b[16:])),
		mod:  mod,
	}, nil
}

// rowEntry is one entry of a commit, as its commit row lists it.
type rowEntry struct {
	rev    int64
	time   int64
	key    string
	expiry bool // an expiry the commit materialised (not encoded)
}

// encodeCommitRow is the value of a commit's row, root+"r/"+hex(last
// revision): each entry's revision, time and key, in revision order.
//
//	(rev (8) | time (8) | key length (uvarint) | key)...
func encodeCommitRow(es []rowEntry) []byte {
	var b []byte
	for _, e := range es {
		b = binary.BigEndian.AppendUint64(b, uint64(e.rev))
		b = binary.BigEndian.AppendUint64(b, uint64(e.time))
		b = binary.AppendUvarint(b, uint64(len(e.key)))
		b = append(b, e.key...)
	}
	return b
}

func decodeCommitRow(b []byte) ([]rowEntry, error) {
	var es []rowEntry
	for len(b) > 0 {
		if len(b) < 17 {
			return nil, fmt.Errorf("%w: commit row", errBadRecord)
		}
		e := rowEntry{rev: int64(binary.BigEndian.Uint64(b)), time: int64(binary.BigEndian.Uint64(b[8:]))}
		n, w := binary.Uvarint(b[16:])
		if w <= 0 || uint64(len(b)-16-w) < n {
			return nil, fmt.Errorf("%w: commit row", errBadRecord)
		}
		e.key = string(b[16+w : 16+w+int(n)])
		es = append(es, e)
		b = b[16+w+int(n):]
	}
	return es, nil
}
