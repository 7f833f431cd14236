package revkv

import "errors"

// The errors revkv returns. They are sentinels: test for them with errors.Is,
// since most are wrapped with the call and the key that caused them.
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
)
