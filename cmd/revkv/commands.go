package main

import "strings"

// command is one of the tool's commands: its usage, its flags, and what
// it runs.
type command struct {
	name     string
	args     string   // the synopsis after the name
	need     []string // the required positional arguments' names, in order
	min, max int      // how many positional arguments it takes, at least and at most
	flags    []string // its own flags (besides --dir, and --json if json): rev, at, from, to, digest
	json     bool     // it takes --json
	summary  string   // one line, for 'revkv --help'
	doc      string   // its help, for 'revkv COMMAND --help'
	jsonDoc  string   // what --json prints
	example  string
	run      func(c *cli, args []string) error
}

// commands, in the order 'revkv --help' lists them.
var commands = []*command{
	{
		name: "info", max: 0, json: true, run: cmdInfo,
		summary: "show the latest revision, floor, live keys, digest and files",
		doc: `Info shows the directory, its latest revision and that revision's time, the
floor (the lowest revision still readable), the number of live keys, the
digest of the hash chain at the latest revision, and every file with its
size.`,
		jsonDoc: `one object: dir, rev, time, floor, live_keys, digest, files ({name, kind, bytes}), total_bytes`,
		example: "revkv --dir data info",
	},
	{
		name: "get", args: "KEY [--rev N | --at TIME]", need: []string{"KEY"}, min: 1, max: 1,
		flags: []string{"rev", "at"}, json: true, run: cmdGet,
		summary: "show a key's live entry, now or at a revision or time",
		doc: `Get shows KEY's live entry: its revision, time, value, expiry and the
annotations of its revision. A key that is absent, deleted or expired
there is exit status 1.

  --rev N     as it was just after revision N
  --at TIME   as it was at TIME: RFC 3339 (2024-03-01T12:00:00.5+01:00) or
              Unix milliseconds (1709294400500)`,
		jsonDoc: `one object: key, rev, op, time, value, value_json or value_base64, expires_at, annotations`,
		example: "revkv --dir data get config/db/pool --at 2024-03-01T12:00:00Z",
	},
	{
		name: "history", args: "KEY", need: []string{"KEY"}, min: 1, max: 1, json: true, run: cmdHistory,
		summary: "list every retained entry of a key, with annotations",
		doc: `History lists KEY's retained entries, oldest first: puts, deletes and
expiries, each with its revision's annotations. A key never written (or
wholly compacted away) is exit status 1.`,
		jsonDoc: `JSON lines, one entry each: key, rev, op, time, value, value_json or value_base64, expires_at, annotations`,
		example: "revkv --dir data history config/db/pool",
	},
	{
		name: "scan", args: "[PREFIX] [--rev N | --at TIME]", max: 1,
		flags: []string{"rev", "at"}, json: true, run: cmdScan,
		summary: "list the live keys under a prefix, now or at a revision or time",
		doc: `Scan lists the live keys with PREFIX (every key without one), in byte
order, with the entry that wrote each.

  --rev N     as they were just after revision N
  --at TIME   as they were at TIME (RFC 3339 or Unix milliseconds)`,
		jsonDoc: `JSON lines, one key each: key, rev, op, time, value, value_json or value_base64, expires_at`,
		example: "revkv --dir data scan config/ --rev 120",
	},
	{
		name: "diff", args: "FROM TO [PREFIX]", max: 3,
		flags: []string{"from", "to"}, json: true, run: cmdDiff,
		summary: "list the keys whose live entry differs between two revisions",
		doc: `Diff lists, in key order, every key with PREFIX whose live entry just
after revision TO is not the one just after revision FROM: written, deleted
or expired in between (a put of the same value is a new entry, so it
counts). Each line shows the entry before and after, or "absent".

The range is FROM TO [PREFIX], as for changes; "[PREFIX] --from N --to N"
is the same. FROM after TO is a usage error.`,
		jsonDoc: `JSON lines, one key each: key, before and after ({rev, time, value, value_json or value_base64, expires_at}, or null when absent)`,
		example: "revkv --dir data diff 100 120 config/",
	},
	{
		name: "changes", args: "[FROM TO [PREFIX]]", max: 3,
		flags: []string{"from", "to"}, json: true, run: cmdChanges,
		summary: "list every entry under a prefix between two revisions",
		doc: `Changes lists every entry of the keys with PREFIX whose revision is in
[FROM, TO], in revision order: puts, deletes and expiries, each with its
revision's annotations.

The range is FROM TO [PREFIX], as for diff; "[PREFIX] [--from N] [--to N]"
is the same, and lets either end default: FROM to the floor (or 1), TO to
the latest revision. A single argument is PREFIX. FROM after TO is a usage
error.`,
		jsonDoc: `JSON lines, one entry each: key, rev, op, time, value, value_json or value_base64, expires_at, annotations`,
		example: "revkv --dir data changes 100 120 config/",
	},
	{
		name: "verify", args: "[--rev N --digest HEX]", max: 0,
		flags: []string{"rev", "digest"}, json: true, run: cmdVerify,
		summary: "check the hash chain, and a revision's digest",
		doc: `Verify reads the whole directory, checking the hash chain of every
revision, and prints the latest revision, its digest and "ok". With --rev
and --digest (given together) it also checks that revision N's digest is
HEX, 64 hex digits: one recorded earlier, or read from another copy. A
broken chain or a digest that differs is exit status 1.`,
		jsonDoc: `one object: rev, digest, checked_rev, expected, actual, ok`,
		example: "revkv --dir data verify --rev 120 --digest 3f0c...(64 hex digits)",
	},
	{
		name: "export", args: "[PREFIX]", max: 1, json: true, run: cmdExport,
		summary: "write the history as JSON lines, one revision each",
		doc: `Export writes the history of the keys with PREFIX (every key without one)
to standard output as JSON lines, the input of import (Store.Export's
output). The first line is a header:

  revkv_export 1; prefix; rev (the latest revision); time and first (its
  time and the first's); base (the oldest revision whose time is kept);
  floor; compact_rev and compacted (the last compaction and its time);
  trim_floor

then one line a revision, in revision order, from base-1 up to rev, and
before them every older revision a key still keeps:

  rev; time, with zone (the location's name, when not UTC) and offset
  (seconds east of UTC, when the time is written in UTC because its
  offset is not whole minutes); key, or key_base64 when it is not UTF-8;
  op (put, delete, expire); value, or value_base64 when the value's bytes
  are not UTF-8 (puts only); expires_at (UTC); annotations, or
  annotations_base64 when one is not UTF-8; trimmed and dropped (on a
  key's oldest kept entry, when older ones were dropped); prev (the
  digest of revision rev-1, where the line before is not rev-1); digest
  (the hash chain's digest of rev, 64 hex digits). A revision whose entry
  is gone has only rev, time and digest.

Times are RFC 3339 with nanoseconds, or "@SECONDS.NANOSECONDS" (Unix)
for a year outside 1-9999. Each digest is SHA-256 of the one before and
the revision's canonical encoding: 'go doc github.com/revkv/revkv' (the
"Export format" section) and 'go doc github.com/revkv/revkv/chain' say
how to recompute it from the lines.`,
		jsonDoc: `the same JSON lines: export's output is JSON with or without it`,
		example: "revkv --dir data export > data.jsonl",
	},
	{
		name: "import", max: 0, run: cmdImport,
		summary: "read an export from standard input into an empty directory",
		doc: `Import reads an export from standard input into DIR, which must be empty
or absent: the same revisions, times, expiries, annotations and digests,
and the same floor. A directory that is not empty is exit status 1, and
nothing in it changes.`,
		example: "revkv --dir copy import < data.jsonl",
	},
	{
		name: "repair", max: 0, json: true, run: cmdRepair,
		summary: "cut a torn or damaged log tail, keeping the cut bytes aside",
		doc: `Repair cuts from the log what is not whole records, so that the store
opens with every revision before them. A torn tail (a crash in the middle
of a write, or damage to the last record) and a damaged record with whole
records after it (what Open refuses as corrupt) are cut there: the bytes
from it on, and every later segment, go to files named after their segment
with ".damaged" appended, which no revkv reads or removes. It says what it
moved where and which revisions the cut bytes could have held. A
directory with nothing to cut is left as it is (exit status 0); a damaged
snapshot or file header is not repaired (exit status 1).`,
		jsonDoc: `one object: rev (the latest revision after it) and cut ({file, offset, bytes, rev: the first revision they could have held, damaged, why, cut, moved}, or null when there was nothing to cut)`,
		example: "revkv --dir data repair",
	},
	{
		name: "checkpoint", max: 0, run: cmdCheckpoint,
		summary: "write a snapshot and delete the log it covers",
		doc: `Checkpoint writes a snapshot of the retained state and deletes the log
segments and older snapshots it covers.`,
		example: "revkv --dir data checkpoint",
	},
	{
		name: "compact", args: "REV", need: []string{"REV"}, min: 1, max: 1, run: cmdCompact,
		summary: "forget the history below a revision",
		doc: `Compact forgets the history below revision REV for every key: afterwards
the floor is REV, and reads below it are refused. REV below the floor,
or after the latest revision, is exit status 1.`,
		example: "revkv --dir data compact 100",
	},
}

// synopsis is how the command is written: "revkv [--dir DIR] get KEY ...".
func (cmd *command) synopsis() string {
	return strings.TrimSpace("revkv [--dir DIR] " + cmd.name + " " + cmd.args)
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}
