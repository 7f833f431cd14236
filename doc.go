// Package revkv is an embeddable multi-version key-value store: every key
// keeps its revision history, may carry a TTL whose expiry is written into
// that history at its exact time, and can be read as it was at any retained
// revision or time. A store lives in memory (New) or on a directory that
// survives restarts and crashes (Open).
//
//	s := revkv.New[string]()
//	defer s.Close()
//	rev, _ := s.Put("config/limits", "100")
//	s.Put("config/limits", "250")
//	old, _, _ := s.GetAt("config/limits", rev)           // "100"
//	then, _, _ := s.GetAsOf("config/limits", yesterday) // by time
//	s.PutTTL("session/42", "alice", 30*time.Minute)      // its expiry goes into History
//
// # Data model
//
// Every change is one revision: a put, a delete, a TTL set or removed, an
// expiry. Revisions start at 1 and grow by exactly 1; Rev returns the latest.
// Every revision has a time from the store's clock (WithClock, default
// time.Now); times never decrease along revisions: if the clock goes back,
// the store keeps using its last time (and a clock before year 1 gives
// 0001-01-01T00:00:00Z, where the store's times start). Times are kept
// without their monotonic clock reading, and come back in the clock's
// location (Entry.Time; ExpiresAt and an expiry's Time in the location of
// the write that set the TTL).
//
//	rev:   1          2          3            4          5
//	time:  14:00      14:02      14:04        14:05      14:10
//	       put a=1    put b=x    put a=2      put s=..   expire s
//	                                          ttl 5m     (at exactly 14:10)
//
// A key with a TTL is invisible to every read of the latest state from its
// ExpiresAt on, with nothing running. Its expiry is written into history as
// an OpExpire entry whose Time is exactly ExpiresAt, at the start of the next
// write (before that write takes its revision), inside PurgeExpired, or by
// the expirer goroutine (WithExpiryInterval). Reads never write. Several
// expiries are written in order of expiry time, ties in key order. A newer
// write to the key cancels its pending expiry. So revision numbers are a
// pure function of the calls made and the clock's answers (with no
// background goroutine running).
//
// History shrinks three ways: Compact(rev) for every key; WithRetention, a
// rolling compaction applied by Trim; and WithMaxHistory, a per-key cap
// applied by Trim and by any write that takes a key over twice the cap.
// What they drop is answered with ErrCompacted, naming the oldest revision
// to ask for instead, never a wrong value. Floor is the lowest revision at
// which a View can open. Open Views (and running Scans) pin their
// revision: nothing they need is dropped until they close.
//
// # Background goroutines
//
// New starts none unless asked. WithExpiryInterval starts the expirer,
// which writes the expiries due every tick; WithTrimInterval starts the
// trimmer, which samples keys and trims those over the caps, for at most a
// quarter of each tick. Close stops both and waits; a Store dropped without
// Close has them stopped by runtime.AddCleanup. With either running,
// revision numbers also depend on when they tick. Without them,
// PurgeExpired and Trim are how an application bounds memory.
//
// # Concurrency
//
// Every method is safe for concurrent use, and the store is linearizable:
// once a write returns, every later read sees it, and no reader sees
// revision r before every revision below it. Writes are serialised by one
// write lock; a read of the latest state (Get, GetEntry, TTL) is one map
// lookup and never waits on a write to another key. Scan is a snapshot as of
// the revision current when it began, and its loop body may write. Values
// are stored as given and never copied: do not mutate a value after writing
// or reading it.
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
// which take that lock too; that deadlocks. A Txn kept past its Update
// answers ErrTxnDone.
//
// # A store on a directory
//
// Open gives the same store on a directory, whose history survives a
// restart and a crash:
//
//	s, err := revkv.Open("data", revkv.JSONCodec[Config]())
//
// Under SyncAlways, the default, a write returns once its revision is
// synced, and writers that arrive together share one sync. Under
// SyncInterval and SyncNever a write returns once its record is in the
// operating system's hands (in its page cache: on Linux the log is written
// through a shared mapping of its file, elsewhere with write(2)), so a
// crash of the process alone (a panic, kill -9, the OOM killer) loses no
// acknowledged write in any mode; a machine
// crash loses at most the last WithSyncInterval under SyncInterval, and
// what the operating system had not written back under SyncNever. What
// survives a crash is always revisions 1..r for some r, an Update whole or
// not at all. Checkpoints (Checkpoint, and every WithCheckpointBytes) write
// a snapshot and delete the log it covers. A failed write or sync stops the
// store's writes for good (reads go on; Close returns it).
//
// A directory another store holds is ErrLocked. Only the end of the last
// log segment may be torn by a crash: a bad record there with no whole
// record after it, to the end of the file. Open cuts such a tail, never in
// silence: Store.Recovery reports the file, the offset, how many bytes and
// from which revision on they could have held (revkv-server logs it at
// WARN; the offline tool's info and verify report it, verify failing on
// it). Any other damage is ErrCorrupt naming the file and offset, and Open
// changes nothing on disk; WithRepair cuts the log at the damage instead,
// moving what it cut to files ending in ".damaged" (the tool's repair does
// the same, and keeps a torn tail too). A file header is told apart three
// ways: damaged (ErrCorrupt), of a newer format (ErrNewerFormat, which
// wraps ErrCorrupt: upgrade revkv to read it), or not revkv's at all. WithReadOnly opens a directory to inspect it and changes
// nothing in it (a torn tail is reported and left as it is); every write of
// such a store is ErrReadOnly. WithFS(vfs.NewMem()) keeps the directory in
// memory, on a file system that can crash as a power cut would: for tests.
//
// # History beyond memory
//
// A store on a directory keeps only each key's newest entry and the
// latest history in memory (WithMemory: 256 MiB of it by default; -1
// keeps everything): every so often, and at Close, a checkpoint seals the
// history written since the last one into an immutable segment file, and
// reads of older revisions read the block of the segment that holds the
// answer. Every answer is the same whatever the bound. Open after Close
// reads each key's newest entry and the segments' footers, and replays no
// log. Checkpoints also merge runs of small segments into one, so that
// a store opened and closed often keeps few of them, and leave out of the
// merged segment what a compaction hid: Compact gives back the disk space
// of sealed history at the checkpoints after it. HistoryRange streams a
// key's history in a range in bounded memory;
// a View whose read met a damaged segment answers the key as missing and
// says why in View.Err.
//
// # Following changes
//
// Changes(prefix, from, to) lists every entry of the keys under a prefix
// between two revisions, in revision order; Watch(ctx, prefix, from) does
// the same from a revision on, forever: history first, then each revision
// as it becomes visible, with no gap and nothing twice. Both are pull-based
// iterators: no goroutine, no buffer; a slow consumer reads history at its
// own pace and never holds writers back. An entry no longer in history is
// ErrCompacted, naming the revision to start again from (OpError.Rev): one
// from which a watch, with nothing compacted or trimmed in between, does
// not fail again, whichever keys under the prefix lost what; a watch from
// Floor does not fail, also right after Open. Expiries are entries too:
// with WithExpiryInterval(d) they arrive within about d of their time.
//
// # Audit
//
// An Update's Txn.Annotate attaches who and why (any keys and values) to
// the revisions it commits; Annotations(rev) answers them as long as the
// revision keeps its entry, and HistoryNotes(key) gives a key's history
// with each entry's annotations, in one pass. An annotated write is an
// Update: annotations belong to a commit. Diff(prefix, from, to) lists the
// keys whose live entry changed between two revisions (a put of the same
// value is a new entry, so it counts), at a cost that follows the changes.
//
// A store on a directory keeps a SHA-256 hash chain over its revisions:
// D(0) is 32 zero bytes and D(r) = SHA-256(D(r-1) || enc(r)), where enc(r)
// is revision r's canonical encoding, defined with a worked example in
// package chain. Open checks the chain of what it reads, checkpoints keep
// it across compaction, and Digest and DigestAt answer it. Keep Digest's
// answer somewhere else, and later check the directory against it
// (DigestAt, or the tool's verify --rev N --digest HEX): a history
// rewritten since gives another digest. Export and Import move a
// directory's whole history, chain included, as JSON lines (see Export
// format). cmd/revkv is the offline tool for a directory, and
// cmd/revkv-server serves a store over the Redis protocol.
//
// # Export format
//
// Store.Export writes JSON lines, and Import reads them. The first line is
// a header, the store's state:
//
//	{"revkv_export":1,"rev":3,"time":"...","first":"...","base":1,"floor":0}
//
//	revkv_export  the format, 1
//	prefix        the prefix exported, if any (Import refuses such an export)
//	rev           the latest revision
//	time, first   the latest revision's time and the first's
//	base          the oldest revision whose time the store keeps
//	floor         Floor()
//	compact_rev   the last Compact's revision, and compacted its time (absent: none)
//	trim_floor    the floor WithMaxHistory raised, if any
//
// Then one line a revision, in revision order: every revision from
// base-1 (at least 1) up to rev and, before them, every older revision
// whose entry some key still keeps. A revision whose entry is kept has its
// entry; one whose entry was compacted or trimmed away has only its time
// (if kept) and digest:
//
//	{"rev":3,"time":"2026-11-21T15:04:00+01:00","zone":"Europe/Paris","key":"config/api","op":"put","value":"500","annotations":{"who":"sam"},"digest":"..."}
//	{"rev":5,"time":"2026-11-21T14:05:00Z","digest":"..."}
//
//	rev           the revision
//	time          its time (see below); zone, the location's name when not UTC,
//	              and offset, its offset in seconds east of UTC when time is
//	              written in UTC because that offset is not whole minutes
//	key           the entry's key, or key_base64 (standard base64) when it is not UTF-8
//	op            put, delete or expire
//	value         for a put: the codec's bytes of the value as a JSON string when
//	              they are UTF-8, else value_base64
//	expires_at    the entry's expiry, if it has a TTL, in UTC
//	annotations   the revision's annotations, an object; annotations_base64 (keys
//	              and values in base64) when one of them is not UTF-8
//	trimmed       true on a key's oldest kept entry when older ones were dropped,
//	              and dropped the newest revision dropped from it
//	prev          D(rev-1), where the line before is not revision rev-1
//	digest        D(rev); digests are 64 lower-case hex digits
//
// A time is RFC 3339 with its nanoseconds, in its own offset when that is
// whole minutes, else in UTC (with "offset"); when its year is not 1 to
// 9999, which RFC 3339 cannot write, it is "@" Unix seconds "." nine digits
// of nanoseconds ("@317278814400.000000009"). Either way it is the instant
// to the nanosecond. A compacted store's export starts below its floor
// only with the revisions some key still keeps: each such line carries
// "prev" unless it follows its predecessor, so the chain can be recomputed
// from it even where the revisions between are gone.
//
// To recompute D(r) from the lines: start from D(0), 32 zero bytes, or
// from a line's "prev"; for each line with an entry, build enc(r) as
// package chain gives it from rev, key, op, the time's Unix seconds and
// nanoseconds, expires_at in Unix nanoseconds (0 and a zero flag without
// one), the value's bytes (none but for a put) and the annotations in byte
// order of their keys; D(r) is SHA-256 of D(r-1) followed by enc(r), and
// must equal "digest". A line without an entry gives D(r) itself. The
// tool's "revkv verify" does this for a directory; TestExportEveryTime
// does it from the lines alone.
//
// # Readings
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
//   - GetAt's and GetAsOf's ErrCompacted name the oldest revision at which
//     the key can be read: the last compaction, or the key's oldest kept
//     entry when its own history was trimmed above that (which may be below
//     Floor, a bound for every key).
//   - A trim keeps, for every key, the entry visible at the oldest open
//     View's revision and every entry after that revision.
//   - History lists the entries held in memory, oldest first: entries an open
//     View needs are listed until the first trim after it closes.
//   - The store keeps revision times only from Floor on (with WithRetention,
//     from the last compaction on), so memory stays flat under WithMaxHistory.
//     A Compact below that takes as its time the newest time among every
//     key's entry visible at that revision (never before the last
//     compaction's): GetAsOf before it is ErrCompacted, and every read after
//     it is exact. Such a Compact walks every key under the write lock.
//   - Argument checks come before any expiry is written: a TTL <= 0 or past
//     the year 2262 (ErrInvalidTTL) and a negative modRev in CompareAndPut
//     (ErrConflict) write nothing at all. Expire with a TTL <= 0 is
//     ErrInvalidTTL, not a delete as in Redis.
//   - Delete, Expire and Persist of a missing, deleted or expired key return
//     ErrNotFound and take no revision.
//   - Compact at or below the last compaction, or at rev <= 0, is a no-op.
//     Compact(rev) removes a deleted or expired key when its tombstone is
//     below rev; a tombstone at rev itself stays until a compaction above
//     it, so that a watch from Floor (rev) can still yield it.
//   - PutExpiresAt and ExpireAt take the instant itself (Redis's EXAT,
//     PXAT, EXPIREAT, PEXPIREAT): ExpiresAt is exactly it. One not after
//     the write's time is ErrInvalidTTL, not a delete as in Redis.
//   - Any string is a key, the empty string included.
//   - An Update whose function writes nothing takes no revision and returns
//     Rev(); the expiries due are written before it all the same.
//   - A store numbers the locations its clock uses; a clock that hands out
//     more than 65,535 distinct *time.Location values (a new
//     time.FixedZone per call, say) gets its later ones' times back as the
//     same instants in UTC.
//   - Open reports what it cut (Store.Recovery) rather than failing: a torn
//     tail is what a crash leaves, and the revisions before it are whole.
//     How many revisions the cut bytes held is not known; Recovery names
//     the first they could have held.
//   - A file header carries a check of its version (0 for version 1, the
//     version's complement for later ones): a version above this build's
//     with its check is a newer format (ErrNewerFormat); anything else is
//     damage (ErrCorrupt).
//   - A Txn used after its Update returned is ErrTxnDone, which wraps
//     ErrClosed: errors.Is(err, ErrClosed) holds as it did before.
//   - An error's text shows times in RFC 3339 with their nanoseconds and
//     offset, without the monotonic clock reading.
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
//	a clock before year 1                    times held at 0001-01-01T00:00:00Z
//	Trim, PurgeExpired on an empty store     0
//	writes and Compact after Close           ErrClosed
//	a Txn's writes after its Update          ErrTxnDone
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
// revision; for a read at a revision, the revision asked for, the oldest
// readable one being in the message; for the ErrCompacted of Changes,
// Watch and HistoryRange, the revision from which the rest is whole, to
// ask for instead). A negative
// option value or a nil clock is a programming error: New panics with a
// message naming the option.
package revkv
