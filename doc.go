// Package revkv is an embeddable, in-memory, multi-version key-value store:
// every key keeps its revision history, may carry a TTL, and can be read as it
// was at any retained revision or time.
//
// # Data model
//
// Every change is one revision: a put, a delete, a TTL set or removed, an
// expiry. Revisions start at 1 and grow by exactly 1; Rev returns the latest.
// Every revision has a time from the store's clock (WithClock); times never
// decrease along revisions: if the clock goes back, the store keeps using its
// last time. Times are stored without their monotonic clock reading, and
// come back in the clock's location (Entry.Time; ExpiresAt and an expiry's
// Time in the location of the write that set the TTL). A store numbers the
// locations its clock uses, 2 bytes an entry instead of a pointer; a clock
// that hands out more than 65,535 distinct *time.Location values (a new
// time.FixedZone per call, say) gets its later ones' times back as the same
// instants in UTC.
//
//	rev:   1          2          3            4          5
//	time:  14:00      14:02      14:04        14:05      14:10
//	       put a=1    put b=x    put a=2      put s=..   expire s
//	                                          ttl 5m     (at exactly 14:10)
//
// A key with a TTL is invisible to every read of the latest state from its
// ExpiresAt on, with nothing running. Its expiry is written into history as an
// OpExpire entry whose Time is exactly ExpiresAt, at the start of the next
// write call (before that write takes its revision), inside PurgeExpired, or
// by the expirer goroutine (WithExpiryInterval). Reads never write. Several
// expiries are written in order of expiry time, ties in key order. A newer
// write to the key cancels its pending expiry. So revision numbers are a pure
// function of the calls made and the clock's answers (with no background
// goroutine running).
//
// History shrinks three ways: Compact(rev) for every key; WithRetention, a
// rolling compaction applied by Trim; and WithMaxHistory, a per-key cap
// applied by Trim and by any write that takes a key over twice the cap. What
// they drop is answered with ErrCompacted, never a wrong value. Floor is the
// lowest revision at which a View can open. Open Views (and running Scans)
// pin their revision: nothing they need is dropped until they close.
//
// # Background goroutines
//
// New starts none unless asked. WithExpiryInterval starts the expirer, which
// writes the expiries due every tick, in batches of 256 per hold of the write
// lock. WithTrimInterval starts the trimmer, which sweeps and samples keys
// (each in O(1)) and trims those over the caps, one key per hold of the write
// lock, for at most a quarter of each tick. Close stops both and waits; a
// Store dropped without Close has them stopped by runtime.AddCleanup. With
// either running, revision numbers also depend on when they tick.
//
// # Concurrency
//
// Every method is safe for concurrent use, and the store is linearizable.
// Writes are serialised by one write lock (that is what gives revisions one
// order). A read of the latest state (Get, GetEntry, TTL) is one map lookup
// under the index's read lock, which a write holds only to swap the key's
// slot and publish its revision: the short global step after which every
// reader sees the write, and before which none does. Reads of history
// (GetAt, GetAsOf, History, Views) take the key's own log lock, which only
// writes to that key hold. So a read never waits on a write to another key
// beyond that step, and no reader sees revision r before every revision below
// r. Scan and Len take the write lock for a short step. Values are stored as
// given and never copied: do not mutate a value after writing or reading it.
//
// Inside, every write the store makes (Put and its variants, Update, and the
// expiries that a write, PurgeExpired or the expirer materialises) goes
// through one function, commitLocked in commit.go: it numbers the write's
// revisions, hands them to durability (nothing for New; the log for Open),
// applies them to the index and publishes them; watchers and the ring of
// recent revisions learn of them there (publishLocked), and nowhere else.
//
// # Transactions
//
// Update runs a function that reads and writes several keys as one atomic,
// serializable step, as bbolt's db.Update does:
//
//	_, err := s.Update(func(tx *revkv.Txn[int]) error {
//		a, _ := tx.Get("acct/a")
//		b, _ := tx.Get("acct/b")
//		if a < 10 {
//			return errInsufficient // nothing is written
//		}
//		tx.Put("acct/a", a-10)
//		return tx.Put("acct/b", b+10)
//	})
//
// Its writes take consecutive revisions with one time and are published
// together: no Get, Scan or View of the latest state sees half of them. A
// read at a revision inside the batch (GetAt, At) sees its prefix, since
// every revision is still one change; a read by time sees all of it. The
// function runs under the write lock: it must not call the store's own
// write methods (Put, Update, Compact, ...), nor Len, Scan, At or AsOf,
// which take that lock too; that deadlocks.
//
// # A store on a directory
//
// Open gives the same store on a directory, whose history survives a
// restart and a crash:
//
//	s, err := revkv.Open("data", revkv.JSONCodec[Config]())
//
// Every revision, compaction and trim goes to a log (package wal: records
// with a length and a CRC-32C, in segment files named by their first
// revision); checkpoints write the retained state to a snapshot and delete
// the log it covers. Under SyncAlways, the default, a write returns once
// its revision is synced, no reader sees it before, and writers that arrive
// together share one sync: the first of them runs everyone's writes under
// the write lock, writes their records at once, syncs, and publishes them.
// Under SyncInterval and SyncNever the same path writes the records
// without syncing: a write returns, and is visible, once its record is in
// the operating system's hands, so a crash of the process alone (a panic,
// kill -9, the OOM killer) loses no acknowledged write in any mode. Only a
// machine crash loses unsynced writes: at most the last WithSyncInterval
// under SyncInterval, whatever the operating system had not written back
// under SyncNever.
// Checkpoints run every WithCheckpointBytes of log, and no sooner than the
// log has grown as large as the last snapshot. What survives a crash is always revisions 1..r for some r, an Update
// whole or not at all. A failed write or sync stops the store's writes for
// good (reads go on; Close returns it). Open on a directory in use is
// ErrLocked. Only the end of the last log segment may be torn by a crash:
// a bad record there not followed by whole records running to the end of
// the file, which Open cuts back. Any other damage (a bad record followed
// by whole records to the end, as a flipped bit in a length field in the
// middle leaves it; anything wrong in an earlier segment
// or a snapshot) is ErrCorrupt, naming the file and offset, and Open
// changes nothing on disk. WithReadOnly opens a directory to inspect it
// and changes nothing in it at all (a torn tail is left as it is); every
// write of such a store is ErrReadOnly.
// WithFS(vfs.NewMem()) keeps the directory in memory, on a file system
// that can crash as a power cut would and fail on demand: for tests.
// docs/contract.md section 8 has every rule.
//
// # Following changes
//
// Changes(prefix, from, to) lists every entry of the keys under a prefix
// between two revisions, in revision order; Watch(ctx, prefix, from) does
// the same from a revision on, forever: history first, then each revision
// as it becomes visible, with no gap and nothing twice. Both are pull-based
// iterators: no goroutine, no buffer; a slow consumer reads history at its
// own pace and never holds writers back. An entry no longer in history is
// ErrCompacted, naming where to start instead, never a silent skip; a watch
// from there does not fail again, and one from Floor does not fail, also
// right after Open.
// Expiries are entries too: with WithExpiryInterval(d) they arrive within
// about d of their time. Each wake-up of a watch costs O(keys under its
// prefix).
//
// # Audit
//
// An Update's Txn.Annotate attaches who and why (any keys and values) to
// the revisions it commits; Annotations(rev) answers them as long as the
// revision keeps its entry. Diff(prefix, from, to) lists the keys whose
// value changed between two revisions, at a cost that follows the
// changes. A store on a directory keeps a SHA-256 hash chain over its
// revisions, D(r) = SHA-256(D(r-1) || enc(r)), with enc, and a worked
// example, defined in package chain so that anyone can recompute it:
// every batch record carries its digest, Open checks the chain of what it
// reads (damage is ErrCorrupt naming the revision), checkpoints keep it
// across compaction, and Digest and DigestAt answer it. Keep Digest's
// answer somewhere else, and later check the directory against it
// (DigestAt, or the offline tool's verify --rev N --digest HEX): a
// history rewritten since gives another digest. Export and Import move a
// directory's whole history, chain included, as JSON lines. cmd/revkv is
// the offline tool for a directory.
//
// # The contract
//
// docs/contract.md, in the repository, states every promise section by
// section; the tests cite it. The choices made where a promise could be
// read more than one way:
//
//   - GetAt and At answer by revisions alone: the state after revision r is
//     exactly what the entries up to r say. GetAsOf and AsOf answer by time
//     and also hide values whose ExpiresAt <= t. The two differ only when
//     several expiries fall on the same instant (they take consecutive
//     revisions) and inside an Update's batch.
//   - The empty state is always known: GetAt at rev <= 0, GetAsOf before the
//     first revision's time, At(rev <= 0) and AsOf before the first revision
//     answer "not found" or an empty View, never ErrCompacted, whatever Floor
//     is. An empty View pins nothing.
//   - A trim keeps, for every key, the entry visible at the oldest open
//     View's revision and every entry after that revision (also when the key
//     has no entry at or below it).
//   - History lists the entries held in memory, oldest first: entries an open
//     View needs are listed until the first trim after it closes (Trim, the
//     trimmer, or a Compact to a higher revision), which frees them. The
//     ErrCompacted rules of GetAt and GetAsOf do not depend on views.
//   - The store keeps revision times only from Floor on (with WithRetention,
//     from the last compaction on), so memory stays flat under WithMaxHistory.
//     A Compact below that, whose revision's time is gone, takes as its time
//     the newest time among every key's entry visible at that revision (never
//     before the last compaction's): GetAsOf before it is ErrCompacted, and
//     every read after it is exact. Such a Compact walks every key under the
//     write lock to find that time.
//   - Argument checks come before any expiry is written: a TTL <= 0 or past
//     the year 2262 (ErrInvalidTTL, checked against now) and a negative
//     modRev in CompareAndPut (ErrConflict) write nothing at all. Expire with
//     a TTL <= 0 is ErrInvalidTTL, not a delete as in Redis.
//   - Delete, Expire and Persist of a missing, deleted or expired key return
//     ErrNotFound and take no revision.
//   - Compact at or below the last compaction, or at rev <= 0, is a no-op.
//   - Compact(rev) removes a deleted or expired key when its tombstone is
//     below rev; a tombstone at rev itself stays until a compaction above
//     it, so that a watch from Floor (rev) can still yield it.
//   - PutExpiresAt and ExpireAt take the instant itself (Redis's EXAT,
//     PXAT, EXPIREAT, PEXPIREAT): ExpiresAt is exactly it. One not after
//     the write's time is ErrInvalidTTL, not a delete as in Redis.
//   - Any string is a key, the empty string included.
//   - An Update whose function writes nothing takes no revision and returns
//     Rev(); the expiries due are written before it all the same.
//
// # Edge inputs
//
// Every input gets a defined answer, never a panic, and a failed call
// changes nothing already stored (TestHostileInput checks each line, and
// TestExpiryAtTheLastInstant the expiry at the last instant):
//
//	input                                    answer
//	key "", 1 MiB long, or not UTF-8         an ordinary key; Scan orders keys byte-wise
//	Scan prefix "" / matching nothing        every live key / an empty sequence
//	GetAt, At: rev <= 0 (MinInt64 too)       not found / an empty View at revision 0, no error
//	GetAt, At, Compact: rev > Rev()          ErrFutureRevision (math.MaxInt64 too)
//	Compact: rev <= last compaction, <= 0    nil, a no-op
//	GetAsOf, AsOf: t before revision 1       not found / an empty View (zero time.Time too)
//	GetAsOf, AsOf: t after now               ErrFutureRevision (year 9999 too)
//	PutTTL, Expire: ttl <= 0                 ErrInvalidTTL, nothing written
//	PutTTL, Expire: expiry after 2262        ErrInvalidTTL (ttl math.MaxInt64 from today)
//	PutTTL, Expire: expiry exactly at        valid: live until that instant
//	  time.Unix(0, math.MaxInt64)
//	PutTTL: ttl 1ns                          valid: gone from the next nanosecond of the clock
//	a clock before 1678 or after 2262        writes work; every TTL is ErrInvalidTTL
//	Trim, PurgeExpired on an empty store     0
//	writes and Compact after Close           ErrClosed
//	PurgeExpired, Trim after Close           0
//	reads, At, AsOf, Views after Close       answer as before
//	View methods after View.Close            zero, false, an empty sequence, 0
//	negative option, nil clock               New panics naming the option
//
// # Errors
//
// Every error is an *OpError naming the call, its key and its argument, and
// wrapping one of the sentinels of errors.go, so that it reads as one
// sentence (revkv: delete "missing": key not found); test it with errors.Is,
// and read OpError.Rev with errors.As (for ErrConflict, the key's current
// revision). A negative option value or a nil clock is a programming error:
// New panics with a message naming the option.
package revkv
