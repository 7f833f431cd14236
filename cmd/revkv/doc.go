// Command revkv is the offline tool for a revkv data directory (one that
// revkv.Open writes, with BytesCodec or StringCodec), in the spirit of
// bbolt's and etcdutl's command-line tools: it inspects a store's
// history, checks its hash chain, exports and imports it, and runs its
// upkeep, with no server running.
//
//	revkv [--dir DIR] COMMAND [flags] [args]
//
// # The directory
//
// DIR is --dir, else the environment variable REVKV_DIR, else the current
// directory. Every command but import needs a directory a store was opened
// on (one holding a LOCK, log or snapshot file): "no revkv directory at
// DIR" otherwise, and nothing is created. A directory another process
// holds open (a running revkv-server, say) is refused with a one-line
// error, as is a damaged one ("DIR is corrupt: ..." naming the file and
// offset, or the revision).
//
// Only import, repair, checkpoint and compact change the directory. Every other
// command (serve too) opens it with revkv.WithReadOnly, which leaves every byte of it
// as it was (expiries that fell due are not written; reads treat those
// keys as missing all the same).
//
// # Commands
//
//	info
//	    The directory, the latest revision and its time, the floor, the
//	    number of live keys, the digest ("-" for a store that keeps no hash
//	    chain), bytes at the end of the log that are not whole records (if
//	    any: how many, from which offset, and the first revision they could
//	    have held), and every file with its size.
//	    e.g. revkv --dir data info
//	get KEY [--rev N | --at TIME]
//	    KEY's live entry (now, just after revision N, or at TIME) with its
//	    revision's annotations.
//	    e.g. revkv --dir data get config/db/pool --rev 120
//	history KEY
//	    Every retained entry of KEY, oldest first, with annotations.
//	    e.g. revkv --dir data history config/db/pool
//	scan [PREFIX] [--rev N | --at TIME]
//	    The live keys with PREFIX (every key without one), now or then.
//	    e.g. revkv --dir data scan config/ --at 2024-03-01T12:00:00Z
//	diff FROM TO [PREFIX]
//	    The keys whose live entry differs between revisions FROM and TO:
//	    each with its entry before and after, or "absent".
//	    e.g. revkv --dir data diff 100 120 config/
//	changes [FROM TO [PREFIX]]
//	    Every entry of the keys with PREFIX made in the revisions from
//	    FROM to TO, in revision order, with annotations (default: from
//	    the floor to the latest revision).
//	    e.g. revkv --dir data changes 100 120 config/
//
//	diff and changes take one range form: FROM TO [PREFIX], or [PREFIX]
//	with --from N and --to N (changes may leave either out; a single
//	argument of changes is PREFIX). FROM after TO is a usage error.
//	verify [--rev N --digest HEX]
//	    Check the hash chain of every revision; print the latest revision,
//	    its digest and "ok". With both flags, also check that revision N's
//	    digest is HEX (64 hex digits). Bytes at the end of the log that are
//	    not whole records fail it, as redis-check-aof fails a short AOF.
//	    e.g. revkv --dir data verify --rev 120 --digest 3f0c...
//	export [PREFIX]
//	    The history as JSON lines on stdout, one revision each, with its
//	    time, op, expiry, annotations and digest: Store.Export's output
//	    ('revkv help export' names every field).
//	    e.g. revkv --dir data export > data.jsonl
//	import
//	    An export from stdin into DIR, which must be empty or absent: the
//	    same revisions, times, expiries, annotations, digests and floor.
//	    e.g. revkv --dir copy import < data.jsonl
//	repair
//	    Cut from the log what is not whole records (a torn tail, or a
//	    damaged record with whole records after it), moving the cut bytes
//	    to *.damaged files, and say what it moved where.
//	    e.g. revkv --dir data repair
//	checkpoint
//	    Write a snapshot and delete the log it covers.
//	    e.g. revkv --dir data checkpoint
//	compact REV
//	    Forget the history below REV: the floor becomes REV. A REV below
//	    the floor, or after the latest revision, is refused.
//	    e.g. revkv --dir data compact 100
//	serve [--addr HOST:PORT] [--token TOKEN]
//	    Serve a read-only page over the directory, and its JSON API under
//	    /api/: the keys, a key's timeline, the state at a revision or time,
//	    a diff, the digest and its verification (package web). It listens
//	    on 127.0.0.1:8380 by default; elsewhere only with a token (--token
//	    or $REVKV_TOKEN). Ctrl-C stops it.
//	    e.g. revkv --dir data serve
//	help [COMMAND]
//	    The tool's usage, or COMMAND's (also: --help, -h, COMMAND --help).
//	--version
//	    The tool's version.
//
// TIME is RFC 3339, its fraction of a second and its offset kept
// (2024-03-01T12:00:00.25+01:00), or Unix milliseconds (1709290800250).
// REV and N are revisions: whole numbers, 0 or more. Flags may come before
// or after the arguments ("get KEY --rev 3"); after "--" every argument is
// an argument ("get -- -key" reads the key "-key").
//
// # Output
//
// Text output is aligned and deterministic. A value that is a JSON object
// or array (what JSONCodec writes for a struct, a map or a slice) is shown
// as compact JSON, found by looking at it; other values are shown quoted
// (Go syntax: "multi\nline") when they are UTF-8, else as base64:... ; a key
// is quoted only when it holds a space, a quote, an "=" or anything
// unprintable, or is empty or "-". Times are RFC 3339 with all nine digits
// of the nanoseconds, in the zone the store gave them. "-" is an absent
// cell. Listings print a header with their first row (nothing when empty)
// and stream: their columns are aligned in blocks of 1,000 rows.
//
// --json, on every read command, gives machine output with stable field
// names: one JSON object for info, get and verify; JSON lines, one object
// per entry, key or diff, for history, scan, diff and changes, so that
// they stream. An entry is
//
//	{"key": "config/a", "rev": 8, "op": "put", "time": "2024-03-01T12:00:15.000000000Z",
//	 "value": "v3", "expires_at": "...", "annotations": {"who": "alice"}}
//
// with op "put", "delete" or "expire"; value_json (the JSON itself)
// instead of value for a JSON object or array, value_base64 when the
// value is not UTF-8 (and key_base64 instead of key); no value for a
// delete or an expiry; expires_at and annotations only when there are
// some. A diff line is {"key", "before", "after"}, each side an entry
// without key and op, or null where the key was absent. export writes
// JSON lines with or without --json.
//
// Long runs report their progress on stderr while it is a terminal: every
// command while it reads the directory (verify's whole run), export and
// import while they write. It is one line, rewritten at most every 200 ms
// and erased at the end (for export, only when stdout is not the terminal
// too). Errors are one line on stderr, beginning "revkv: ".
//
// # Exit status
//
//	0  success, and --help, -h, help
//	1  verify failed (a broken chain, a digest that differs, bytes that are
//	   not whole records); repair of what it cannot cut; what was asked
//	   for is not there (get of a key absent, deleted or expired there;
//	   history of a key never written); any other failure: a directory
//	   missing, in use, corrupt; import into a directory not empty; I/O
//	2  the command line: an unknown command or flag, a missing or extra
//	   argument, a REV, TIME or HEX that does not parse, --rev with --at,
//	   --rev without --digest or the other way round, FROM after TO
package main
