package revkv

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The errors revkv returns. They are sentinels: test for them with errors.Is.
// A call returns them inside an *OpError, which names the call and the key.
var (
	// ErrNotFound is returned by Delete, Expire, Persist and TTL when the key
	// is missing, deleted or expired.
	ErrNotFound = errors.New("revkv: key not found")

	// ErrNoTTL is returned by Persist and TTL for a live key without a TTL.
	ErrNoTTL = errors.New("revkv: key has no TTL")

	// ErrInvalidTTL is returned by PutTTL and Expire for a TTL <= 0, or one
	// whose expiry time Unix nanoseconds cannot hold (after the year 2262).
	ErrInvalidTTL = errors.New("revkv: invalid TTL")

	// ErrCompacted is returned by GetAt, GetAsOf, At and AsOf when the history
	// that decides the answer was trimmed or compacted away.
	ErrCompacted = errors.New("revkv: required revision has been compacted")

	// ErrFutureRevision is returned for a revision above Rev(), or a time after
	// now, by GetAt, GetAsOf, At, AsOf and Compact.
	ErrFutureRevision = errors.New("revkv: required revision is a future revision")

	// ErrConflict is returned by CompareAndPut when the key's live entry was
	// not made at the expected revision.
	ErrConflict = errors.New("revkv: revision conflict")

	// ErrClosed is returned by writes and Compact after Close.
	ErrClosed = errors.New("revkv: store is closed")

	// ErrTxnDone is returned by a Txn's writes after its Update returned:
	// the transaction is over, whether it committed or not, and the store
	// may well be open. It wraps ErrClosed, which such calls returned
	// before it, so errors.Is(err, ErrClosed) holds for it too.
	ErrTxnDone error = &txnDone{}

	// ErrCorrupt is returned by Open for a directory whose files are
	// damaged (anything but a torn tail of the last log segment, with no
	// whole record after it, which Open cuts), of an unknown format
	// version, or holding a value the codec cannot decode. The error names
	// the file and the offset; nothing on disk is changed.
	ErrCorrupt = errors.New("revkv: corrupt data")

	// ErrNewerFormat is returned by Open for a directory holding a file of
	// a newer format than this build reads (its header says so): upgrade
	// revkv to read it. It is not damage; it wraps ErrCorrupt, which Open
	// returned for it before, so errors.Is(err, ErrCorrupt) holds too.
	ErrNewerFormat error = &newerFormat{}

	// ErrLocked is returned by Open for a directory another open store
	// holds, in this process or another.
	ErrLocked = errors.New("revkv: directory is locked by another store")

	// ErrReadOnly is returned by every write, Compact and Checkpoint of a
	// store opened WithReadOnly.
	ErrReadOnly = errors.New("revkv: store is read-only")

	// ErrTooLarge is returned by a write of a store on a directory whose
	// log record (one Update's entries, values and annotations) would
	// pass the log's limit of 1 GiB, which Open would take for damage:
	// nothing is written. Split the Update.
	ErrTooLarge = errors.New("revkv: write too large for one log record")
)

type newerFormat struct{}

func (*newerFormat) Error() string { return "revkv: written by a newer revkv" }
func (*newerFormat) Unwrap() error { return ErrCorrupt }

type txnDone struct{}

func (*txnDone) Error() string { return "revkv: transaction is over: its Update has returned" }
func (*txnDone) Unwrap() error { return ErrClosed }

// OpError is the error a call returns: what it did, the key it did it to,
// and the cause, so that it reads as one sentence, as os.PathError does:
//
//	revkv: delete "missing": key not found
//	revkv: compare-and-put "k": revision conflict (key is at revision 3, expected 2)
//
// Err is one of the sentinels above, possibly with detail; errors.Is sees
// through OpError to it. Use errors.As to read Rev.
type OpError struct {
	Op  string // the call: "put", "get at", "compact", ...
	Key string // the key, if the call has one
	// Rev is the revision the error is about: for ErrConflict the key's
	// current revision (0: missing or expired), for reads at a revision and
	// for Compact the revision asked for, for the ErrCompacted of Changes,
	// Watch and HistoryRange the revision from which the rest is whole;
	// 0 otherwise.
	Rev Revision
	Err error

	keyless bool   // the call has no key (Compact, At, AsOf): Key is not printed
	arg     string // what the call's argument is, printed after the key ("at", "as of")
	val     any    // the argument itself, formatted only when the text is asked for
}

func (e *OpError) Error() string {
	var b strings.Builder
	b.WriteString("revkv: ")
	b.WriteString(e.Op)
	if !e.keyless {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(e.Key))
	}
	if e.arg != "" {
		b.WriteByte(' ')
		b.WriteString(e.arg)
		fmt.Fprint(&b, " ", shown(e.val))
	}
	if e.Err != nil {
		b.WriteString(": ")
		// The sentinels say "revkv:" for when they stand alone; said once here.
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "revkv: "))
	}
	return b.String()
}

func (e *OpError) Unwrap() error { return e.Err }

// keyErr returns the OpError of a call on key; arg and val, if arg is not
// empty, are printed after the key ("at" 12). Nothing is formatted until
// Error is called: a read that answers ErrCompacted costs no formatting.
func keyErr(op, key, arg string, val any, err error) *OpError {
	return &OpError{Op: op, Key: key, Err: err, arg: arg, val: val}
}

// revErr returns the OpError of a call without a key, about revision rev.
func revErr(op string, rev Revision, arg string, val any, err error) *OpError {
	return &OpError{Op: op, Rev: rev, Err: err, keyless: true, arg: arg, val: val}
}

// detail adds "why val" to a sentinel, in parentheses after its text, when
// the text is asked for; errors.Is still finds the sentinel.
func detail(err error, why string, val any) error { return &detailed{err, why, val} }

type detailed struct {
	err error
	why string
	val any
}

func (d *detailed) Error() string {
	if d.why == "" {
		return fmt.Sprint(d.err.Error(), " (", shown(d.val), ")")
	}
	return fmt.Sprint(d.err.Error(), " (", d.why, " ", shown(d.val), ")")
}

// shown is val as an error's text shows it: a time in RFC 3339, with its
// nanoseconds and offset and without Go's monotonic clock reading
// ("m=+3600.000362448"), which is no part of the instant; anything else as
// fmt prints it.
func shown(val any) any {
	if t, ok := val.(time.Time); ok {
		return t.Round(0).Format(time.RFC3339Nano)
	}
	return val
}
func (d *detailed) Unwrap() error { return d.err }
