package revkv

import (
	"fmt"
	"time"

	"github.com/revkv/revkv/vfs"
)

// Option configures a Store; pass options to New.
type Option func(*options)

type options struct {
	sync            SyncMode
	syncInterval    time.Duration
	checkpointBytes int64
	fs              vfs.FS
	repair          bool
	readOnly        bool
	clock           func() time.Time
	expiryInterval  time.Duration
	maxHistory      int
	retention       time.Duration
	trimInterval    time.Duration
	trimSample      int
	progress        func(Revision)
	memory          int64 // WithMemory (default 256 MiB)
	indexBytes      int64 // the bound on loaded indexes where tests set it apart from memory (withIndexBudget); 0: memory's
}

// WithClock sets the clock the store reads for the time of every revision and
// for expiry. The default is time.Now. The clock may stand still or go back:
// the store then keeps using the time of its latest revision. A nil clock
// makes New panic.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// WithExpiryInterval starts the expirer goroutine: every d it writes the
// expiries due into history, as PurgeExpired does, in batches of 256 so that
// other writes get in between. Without it, expiries are written by the next
// write or PurgeExpired (a key is invisible from its expiry time on either
// way). 0, the default, starts none. A negative d makes New panic.
func WithExpiryInterval(d time.Duration) Option {
	return func(o *options) { o.expiryInterval = d }
}

// WithMaxHistory caps each key's log at its newest n entries (see Trim). 0,
// the default, keeps everything. A negative n makes New panic.
func WithMaxHistory(n int) Option {
	return func(o *options) { o.maxHistory = n }
}

// WithRetention makes Trim compact away history older than d (see Trim). 0,
// the default, keeps everything. A negative d makes New panic.
func WithRetention(d time.Duration) Option {
	return func(o *options) { o.retention = d }
}

// WithTrimInterval starts the trimmer goroutine: every d it samples keys at
// random (WithTrimSample at a time, each in O(1)) and trims those over the
// caps (WithMaxHistory, WithRetention), as Trim does for every key; while more
// than a quarter of a sample needed work it samples again at once, for at
// most a quarter of d per tick, like Redis's active expiry cycle. It holds the
// write lock for one key's trim at a time. 0, the default, starts none. A
// negative d makes New panic.
func WithTrimInterval(d time.Duration) Option {
	return func(o *options) { o.trimInterval = d }
}

// WithTrimSample sets how many keys the trimmer goroutine samples at a time
// (see WithTrimInterval). The default, 20, is what Redis samples per loop of
// its active expiry cycle. A negative n makes New panic.
func WithTrimSample(n int) Option {
	return func(o *options) { o.trimSample = n }
}

// SyncMode says when a store on a directory (Open) makes its log durable.
type SyncMode int

const (
	// SyncAlways, the default: a write returns once its revision is on
	// stable storage, and no reader sees a revision before that. Writers
	// that arrive together share one write and one sync (group commit).
	// No crash loses an acknowledged write.
	SyncAlways SyncMode = iota
	// SyncInterval: a write returns, and is visible, once its record is
	// in the operating system's hands (written, not synced; writers that
	// arrive together share one write), and the log is synced every
	// WithSyncInterval (default 1 s). A crash of the process alone (a
	// panic, kill -9, the OOM killer) loses no acknowledged write; a
	// machine crash loses at most the writes of the last interval.
	SyncInterval
	// SyncNever: as SyncInterval, but nothing syncs the log except Sync,
	// Close and checkpoints. A crash of the process alone loses no
	// acknowledged write; a machine crash loses what the operating system
	// had not written back (any suffix of the writes since the last sync).
	SyncNever
)

// WithSync sets the SyncMode of a store on a directory; New ignores it.
func WithSync(m SyncMode) Option {
	return func(o *options) { o.sync = m }
}

// WithSyncInterval sets how often SyncInterval syncs (default 1 s); New
// and the other modes ignore it. A negative d makes Open panic.
func WithSyncInterval(d time.Duration) Option {
	return func(o *options) { o.syncInterval = d }
}

// WithCheckpointBytes makes a store on a directory write a snapshot, and
// delete the log it covers, once n bytes (default 64 MiB), and at least as
// many as the last snapshot holds, were logged since the last one. The
// second rule is Redis's for rewriting its append-only file: a snapshot
// holds every retained revision, so without it a store that keeps a long
// history would rewrite all of it every n bytes; with it, the bytes
// checkpoints write stay at most those logged, and the directory at most
// about three times what the store retains. New ignores it. A negative n
// makes Open panic.
func WithCheckpointBytes(n int64) Option {
	return func(o *options) { o.checkpointBytes = n }
}

// DefaultMemory is WithMemory's bound when the option is not given.
const DefaultMemory = 256 << 20

// WithMemory bounds the history a store on a directory holds in memory
// beyond each key's newest entry to about bytes (default DefaultMemory,
// 256 MiB): once a third of that has been logged since the last
// checkpoint (or WithCheckpointBytes, whichever comes first), a
// checkpoint seals it, moving it into an immutable segment file that
// reads open as they need it, and keeps only each key's newest entry in
// memory and in the snapshot. Close seals what was logged since, so that
// the next Open reads each key's newest entry and the segments' footers
// and replays nothing. The segments' indexes a store keeps loaded for
// point reads are bounded too, by as many bytes again (indexBudget).
// Every answer is the same with any bound (contract §12). bytes < 0
// means no bound: nothing is sealed, every retained revision stays in
// memory and in each snapshot, and the indexes of a directory sealed
// before stay once read.
//
// A store does not seal under WithMaxHistory or WithRetention, whose caps
// bound memory already, nor WithReadOnly. A directory that was sealed is
// read whole by every Open, whatever this option says. New ignores it.
func WithMemory(bytes int64) Option {
	return func(o *options) { o.memory = bytes }
}

// indexBudget is the bound on the sealed segments' indexes a store keeps
// loaded together: WithMemory's bound (none without one). The index of a
// segment is what its point reads need beside the block that answers
// (about a third of a byte a revision, so the default holds the indexes
// of about 750 M revisions); past the bound, the segments asked least
// lately let theirs go and read it again when next asked, which costs a
// point read the read and decoding of the whole index (hundreds of KB
// for a segment of W: about 0.7 ms where a read with the index loaded
// takes 5 µs). A smaller bound would bring that cliff nearer; an index
// in blocks of its own, read one block at a time, would remove it.
// Streams through sealed history (Changes, Watch from an old revision,
// Export, verify) read each segment's index for themselves and keep
// none, so they neither grow memory nor push out what point reads use.
func (o *options) indexBudget() int64 {
	if o.indexBytes != 0 {
		return o.indexBytes
	}
	if o.memory < 0 {
		return -1
	}
	return o.memory
}

// withIndexBudget bounds the loaded indexes to n bytes whatever
// WithMemory says, for tests that read many segments through a small
// bound without sealing at each write.
func withIndexBudget(n int64) Option {
	return func(o *options) { o.indexBytes = n }
}

// seals reports whether a store on a directory with these options seals
// its history (WithMemory).
func (o *options) seals() bool {
	return o.memory >= 0 && o.maxHistory == 0 && o.retention == 0 && !o.readOnly
}

// WithFS makes Open keep the store's files in fs instead of the operating
// system's file system; New ignores it. vfs.NewMem gives one in memory that
// can crash as a power cut would (what was not synced may or may not
// survive, as a prefix of each file's bytes and entry by entry in each
// directory), and fail on demand: for tests of
// code that uses a durable store, and of the store itself. A nil fs makes
// Open panic.
func WithFS(fs vfs.FS) Option {
	return func(o *options) { o.fs = fs }
}

// WithRepair makes Open keep what it can of a damaged log instead of
// returning ErrCorrupt: it keeps the records before the first damaged one
// and cuts the log there, as it cuts a torn tail, so that the store opens
// without every revision after the damage (acknowledged ones included).
// Nothing is deleted: the bytes cut, and every later segment, are moved
// into files named after their segment with ".damaged" appended, which
// the store neither reads nor removes. Only a damaged record is cut: a
// damaged snapshot, a segment of an unknown format and a whole record the
// store refuses (a value the codec cannot decode) are ErrCorrupt still,
// since cutting there would lose every later revision for what may be a
// codec's or a version's mistake. It is for an operator who has chosen to
// lose those revisions:
// without it damage is never cut silently. New ignores it.
func WithRepair() Option {
	return func(o *options) { o.repair = true }
}

// WithReadOnly makes Open read the directory and change nothing in it, for
// a tool that inspects a store: the directory must exist, a torn last
// record is left on disk (and not read), no log is opened for writing, and
// no goroutine syncs or checkpoints. The directory is still locked, so
// Open of a directory another store holds is ErrLocked. Every write,
// Update, Compact and Checkpoint returns ErrReadOnly, and PurgeExpired
// and Trim return 0: expiries that fell due are not written, but reads
// treat the expired keys as missing, as always. Reads answer as on any
// store. Open refuses it with WithRepair, which writes. New ignores it.
func WithReadOnly() Option {
	return func(o *options) { o.readOnly = true }
}

// build applies opts over the defaults and panics, naming the option, on a
// value no store can honour: that is a programming error, not bad input.
func build(opts []Option) options {
	o := options{clock: time.Now, trimSample: 20, syncInterval: time.Second, checkpointBytes: 64 << 20, memory: DefaultMemory, fs: vfs.OS}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.clock == nil:
		panic("revkv: WithClock: nil clock")
	case o.fs == nil:
		panic("revkv: WithFS: nil file system")
	case o.expiryInterval < 0:
		panic(fmt.Sprintf("revkv: WithExpiryInterval: negative interval %v", o.expiryInterval))
	case o.maxHistory < 0:
		panic(fmt.Sprintf("revkv: WithMaxHistory: negative count %d", o.maxHistory))
	case o.retention < 0:
		panic(fmt.Sprintf("revkv: WithRetention: negative duration %v", o.retention))
	case o.trimInterval < 0:
		panic(fmt.Sprintf("revkv: WithTrimInterval: negative interval %v", o.trimInterval))
	case o.trimSample < 0:
		panic(fmt.Sprintf("revkv: WithTrimSample: negative count %d", o.trimSample))
	case o.syncInterval < 0:
		panic(fmt.Sprintf("revkv: WithSyncInterval: negative interval %v", o.syncInterval))
	case o.checkpointBytes < 0:
		panic(fmt.Sprintf("revkv: WithCheckpointBytes: negative size %d", o.checkpointBytes))
	case o.sync < SyncAlways || o.sync > SyncNever:
		panic(fmt.Sprintf("revkv: WithSync: unknown mode %d", o.sync))
	}
	if o.syncInterval == 0 {
		o.syncInterval = time.Second
	}
	if o.checkpointBytes == 0 {
		o.checkpointBytes = 64 << 20
	}
	if o.seals() {
		// History in memory costs about three times its logged bytes (an
		// entry's 56 bytes and its value's allocation, against a record
		// that shares its batch's frame): seal at a third of the budget.
		o.checkpointBytes = min(o.checkpointBytes, max(o.memory/3, 1<<10))
	}
	if o.trimSample == 0 {
		o.trimSample = 20
	}
	return o
}

// WithProgress makes Open (as it replays its log), Export and Import call
// fn with the revision they have reached, every 65,536 revisions or so,
// for a tool that shows how far a long run has gone. fn runs on their own
// goroutine and must be quick.
func WithProgress(fn func(rev Revision)) Option { return func(o *options) { o.progress = fn } }
