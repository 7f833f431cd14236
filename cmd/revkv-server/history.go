package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/revkv/revkv"
)

// The REVKV.* commands reach what Redis has no words for: revisions,
// history, reads as of a revision or a time, compaction, and watching.
func init() {
	register(
		&command{name: "revkv.rev", arity: 1, conn: func(s *server, c *client, _ [][]byte) { c.w.Int(int64(s.store.Rev())) }},
		&command{name: "revkv.floor", arity: 1, conn: func(s *server, c *client, _ [][]byte) { c.w.Int(int64(s.store.Floor())) }},
		&command{name: "revkv.getat", arity: 3, conn: cmdGetAt},
		&command{name: "revkv.getasof", arity: 3, conn: cmdGetAsOf},
		&command{name: "revkv.history", arity: -2, conn: cmdHistory},
		&command{name: "revkv.changes", arity: -3, conn: cmdChanges},
		&command{name: "revkv.diff", arity: -3, conn: cmdDiff},
		&command{name: "revkv.compact", arity: 2, conn: cmdCompact},
		&command{name: "revkv.watch", arity: 3, conn: cmdWatchPrefix},
		&command{name: "revkv.digest", arity: -1, conn: cmdDigest},
		&command{name: "revkv.annotate", arity: 3, conn: cmdAnnotateAlone, write: cmdAnnotate},
	)
}

// historyError maps the store's errors to replies with their own codes.
func historyError(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, revkv.ErrCompacted):
		return "COMPACTED " + msg
	case errors.Is(err, revkv.ErrFutureRevision):
		return "FUTUREREV " + msg
	}
	return "ERR " + msg
}

// errRevision answers a revision that is not a whole number, 0 or more,
// as the tool refuses it.
const errRevision = "ERR revision is not a whole number, 0 or more"

// revArg parses a revision: a whole number, 0 or more. A bad one is
// answered and ok is false.
func revArg(c *client, b []byte) (revkv.Revision, bool) {
	n, ok := parseInt(b)
	if !ok || n < 0 {
		c.w.Error(errRevision)
		return 0, false
	}
	return revkv.Revision(n), true
}

// revRange parses a command's from and to revisions; a bad one is
// answered and ok is false.
func revRange(c *client, from, to []byte) (f, t revkv.Revision, ok bool) {
	if f, ok = revArg(c, from); ok {
		t, ok = revArg(c, to)
	}
	return f, t, ok
}

func cmdGetAt(s *server, c *client, a [][]byte) {
	rev, ok := revArg(c, a[2])
	if !ok {
		return
	}
	v, found, err := s.store.GetAt(string(a[1]), rev)
	getReply(c, v, found, err)
}

func cmdGetAsOf(s *server, c *client, a [][]byte) {
	ms, ok := parseInt(a[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	v, found, err := s.store.GetAsOf(string(a[1]), time.UnixMilli(ms))
	getReply(c, v, found, err)
}

// getReply answers GETAT and GETASOF: a string's value, nil, or WRONGTYPE
// for a collection, as GET answers (REVKV.HISTORY shows its elements).
func getReply(c *client, v []byte, found bool, err error) {
	switch {
	case err != nil:
		c.w.Error(historyError(err))
	case !found:
		c.w.Null()
	case isMeta(v):
		c.w.Error(errWrongType)
	default:
		c.w.Bulk(v)
	}
}

// entryLen is how many elements an entry has in every REVKV reply that
// holds entries (HISTORY, CHANGES, DIFF, WATCH): key, op, revision, time
// (Unix ms), expires-at (Unix ms, nil without a TTL), value (nil unless a
// put), and the revision's annotations (a flat array of key, value pairs
// in key order; empty for none).
const entryLen = 7

// notesOf reads revisions' annotations for entries, remembering the last
// revision's: an Update's revisions come together.
type notesOf struct {
	store *revkv.Store[[]byte]
	rev   revkv.Revision
	flat  []string
}

// get returns rev's annotations as key, value pairs in key order. A
// revision whose annotations are gone (trimmed since its entry was read)
// or a store that keeps none has none to show.
func (n *notesOf) get(rev revkv.Revision) []string {
	if rev == n.rev && rev != 0 {
		return n.flat
	}
	notes, _ := n.store.Annotations(rev)
	keys := make([]string, 0, len(notes))
	for k := range notes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	n.rev, n.flat = rev, n.flat[:0]
	for _, k := range keys {
		n.flat = append(n.flat, k, notes[k])
	}
	return n.flat
}

// entry writes e in the one entry shape (see entryLen).
func entry(c *client, e revkv.Entry[[]byte], notes *notesOf) {
	c.w.Array(entryLen)
	c.w.BulkString(e.Key)
	c.w.BulkString(e.Op.String())
	c.w.Int(int64(e.Rev))
	c.w.Int(e.Time.UnixMilli())
	if e.ExpiresAt.IsZero() {
		c.w.Null()
	} else {
		c.w.Int(e.ExpiresAt.UnixMilli())
	}
	if e.Op == revkv.OpPut {
		c.w.Bulk(e.Value)
	} else {
		c.w.Null()
	}
	flat := notes.get(e.Rev)
	c.w.Array(len(flat))
	for _, x := range flat {
		c.w.BulkString(x)
	}
}

// cmdHistory: REVKV.HISTORY key [COUNT n] — the key's kept entries, oldest
// first; with COUNT, the newest n of them; each an entry (see entryLen).
func cmdHistory(s *server, c *client, a [][]byte) {
	count := int64(-1)
	if len(a) == 4 && strings.EqualFold(string(a[2]), "COUNT") {
		n, ok := parseInt(a[3])
		if !ok || n < 0 {
			c.w.Error(errNotInt)
			return
		}
		count = n
	} else if len(a) != 2 {
		c.w.Error(errSyntax)
		return
	}
	key := string(a[1])
	es, ok := s.keyHistory(c, key, count)
	if !ok {
		return
	}
	if hasCollection(es) {
		var err error
		switch es, err = s.collectionHistory(es); {
		case errors.Is(err, errTooMany):
			s.replyTooMany(c, "REVKV.HISTORY")
			return
		case err != nil:
			c.w.Error(historyError(err))
			return
		}
	}
	if count >= 0 && int64(len(es)) > count {
		es = es[int64(len(es))-count:]
	}
	notes := &notesOf{store: s.store}
	c.w.Array(len(es))
	for _, e := range es {
		entryUnder(c, e, key, notes)
	}
}

// keyHistory gathers key's kept entries, oldest first, streaming them
// from the store (HistoryRange) so that what it holds stays bounded: up to
// revkv-max-reply-entries of them, and past that, where COUNT asks for the
// newest count of a key that is not a collection (whose elements' history
// needs all of its own), only the newest count. The history no longer kept
// below the oldest entry is passed over, as HISTORY shows what is kept;
// damage is the reply's error. false: the error is answered.
func (s *server) keyHistory(c *client, key string, count int64) ([]revkv.Entry[[]byte], bool) {
	// HistoryRange reads a few hundred entries at a time, so a trim or
	// compaction between two reads can cut the history the loop is in: it
	// says so (ErrCompacted after an entry), and the loop reads it again,
	// as History, which read it whole under the key's lock, showed no hole.
	for range 3 {
		es, again, ok := s.keyHistoryOnce(c, key, count)
		if !again {
			return es, ok
		}
	}
	c.w.Error("ERR REVKV.HISTORY: the key's history was cut while it was read, three times: try again")
	return nil, false
}

// keyHistoryOnce is one reading of keyHistory: again when the history was
// cut under it.
func (s *server) keyHistoryOnce(c *client, key string, count int64) (es []revkv.Entry[[]byte], again, ok bool) {
	limit := s.limits.replyEntries.Load()
	newest := false // es holds the newest count entries and maybe more, not all
	coll, seen := false, false
	for e, err := range s.store.HistoryRange(key, 0, 0) {
		switch {
		case errors.Is(err, revkv.ErrCompacted) && !seen:
			continue
		case errors.Is(err, revkv.ErrCompacted):
			return nil, true, false
		case err != nil:
			c.w.Error(historyError(err))
			return nil, false, false
		}
		seen = true
		if hook := s.historyHook.Load(); hook != nil {
			(*hook)(len(es) + 1)
		}
		coll = coll || e.Op == revkv.OpPut && isMeta(e.Value)
		switch {
		case newest && coll: // a collection after all: its older entries are gone
			c.w.Error(fmt.Sprintf("ERR REVKV.HISTORY of a collection shows all of the key's own history, more than %d entries (revkv-max-reply-entries): raise the bound", limit))
			return nil, false, false
		case newest:
			if int64(len(es)) >= 2*count+1 { // keep the newest count, now and then
				es = append(es[:0], es[int64(len(es))-count:]...)
			}
		case limit > 0 && int64(len(es)) >= limit && count >= 0 && count <= limit && !coll:
			newest = true
			es = append(es[:0], es[int64(len(es))-count:]...)
		case s.tooMany(c, "REVKV.HISTORY", len(es)):
			return nil, false, false
		}
		es = append(es, e)
	}
	if newest {
		es = es[int64(len(es))-min(count, int64(len(es))):]
	}
	return es, false, true
}

// cmdDigest: REVKV.DIGEST [rev] — [revision, digest in hex] of the hash
// chain at the latest revision, or at rev. A server without --dir keeps no
// chain: an error.
func cmdDigest(s *server, c *client, a [][]byte) {
	if len(a) > 2 {
		c.w.Error(errSyntax)
		return
	}
	rev, d, err := s.store.Digest()
	if err == nil && len(a) == 2 {
		var ok bool
		if rev, ok = revArg(c, a[1]); !ok {
			return
		}
		d, err = s.store.DigestAt(rev)
	}
	if errors.Is(err, errors.ErrUnsupported) {
		c.w.Error("ERR this server keeps no hash chain: start it with --dir")
		return
	}
	if err != nil {
		c.w.Error(historyError(err))
		return
	}
	c.w.Array(2)
	c.w.Int(int64(rev))
	c.w.BulkString(hex.EncodeToString(d[:]))
}

// cmdAnnotate: REVKV.ANNOTATE key value, queued in a MULTI — the EXEC's
// revisions carry the annotation (who, why, a ticket), as Txn.Annotate
// does.
func cmdAnnotate(c *client, tx *revkv.Txn[[]byte], a [][]byte) {
	tx.Annotate(string(a[1]), string(a[2]))
	c.w.Simple("OK")
}

// cmdAnnotateAlone answers REVKV.ANNOTATE outside a MULTI, where there is no
// write for it to annotate.
func cmdAnnotateAlone(_ *server, c *client, _ [][]byte) {
	c.w.Error("ERR REVKV.ANNOTATE annotates a transaction: use it between MULTI and EXEC")
}

// entries writes es as an array of entries, a collection's own as its
// type (entryUnder).
func entries(c *client, s *server, es []revkv.Entry[[]byte]) {
	notes := &notesOf{store: s.store}
	c.w.Array(len(es))
	for _, e := range es {
		entryUnder(c, e, e.Key, notes)
	}
}

// cmdChanges: REVKV.CHANGES from to [prefix] — every entry of the prefix's
// keys with from <= rev <= to, in revision order. Its range is DIFF's:
// from, to, then the prefix.
func cmdChanges(s *server, c *client, a [][]byte) {
	if len(a) > 4 {
		c.w.Error(errSyntax)
		return
	}
	from, to, ok := revRange(c, a[1], a[2])
	if !ok {
		return
	}
	prefix := ""
	if len(a) == 4 {
		prefix = string(a[3])
	}
	mark := c.w.Len()
	var es []revkv.Entry[[]byte]
	for e, err := range s.store.Changes(prefix, from, to) {
		if err != nil {
			c.w.Truncate(mark)
			c.w.Error(historyError(err))
			return
		}
		if !strings.HasPrefix(e.Key, internal) { // elements: see REVKV.HISTORY of their key
			if s.tooMany(c, "REVKV.CHANGES", len(es)) {
				return
			}
			es = append(es, e)
		}
	}
	entries(c, s, es)
}

// tooMany answers an error, and reports true, when a reply that holds n
// entries may not take another (revkv-max-reply-entries): the client asks
// again for a narrower range, and the server never holds an unbounded
// reply.
func (s *server) tooMany(c *client, cmd string, n int) bool {
	if !s.over(n + 1) {
		return false
	}
	s.replyTooMany(c, cmd)
	return true
}

// over reports whether a reply of n entries passes revkv-max-reply-entries.
func (s *server) over(n int) bool {
	limit := s.limits.replyEntries.Load()
	return limit > 0 && int64(n) > limit
}

// replyTooMany answers that cmd's reply would pass the bound.
func (s *server) replyTooMany(c *client, cmd string) {
	c.w.Error(fmt.Sprintf("ERR %s would reply more than %d entries (revkv-max-reply-entries): ask for a narrower range", cmd, s.limits.replyEntries.Load()))
}

// errTooMany is what the gatherers of a collection's history and of its
// elements' changes return when the reply would pass the bound (over).
var errTooMany = errors.New("the reply would pass revkv-max-reply-entries")

// cmdDiff: REVKV.DIFF from to [prefix] — every key of the prefix whose
// live entry at to is not the one at from, in key order: an array of
// [key, before, after] with each an entry (see entryLen), or nil where
// the key was absent.
func cmdDiff(s *server, c *client, a [][]byte) {
	if len(a) > 4 {
		c.w.Error(errSyntax)
		return
	}
	from, to, ok := revRange(c, a[1], a[2])
	if !ok {
		return
	}
	prefix := ""
	if len(a) == 4 {
		prefix = string(a[3])
	}
	var ds []revkv.KeyDiff[[]byte]
	for d, err := range s.store.Diff(prefix, from, to) {
		if err != nil {
			c.w.Error(historyError(err))
			return
		}
		if strings.HasPrefix(d.Key, internal) { // elements come under their keys, below
			continue
		}
		if s.tooMany(c, "REVKV.DIFF", len(ds)) {
			return
		}
		ds = append(ds, d)
	}
	// A collection's key is followed by a row per changed element, under
	// the same key (see collhist.go).
	var rows []revkv.KeyDiff[[]byte]
	var keys []string
	for _, d := range ds {
		if s.tooMany(c, "REVKV.DIFF", len(rows)) { // the element rows before count too
			return
		}
		rows, keys = append(rows, d), append(keys, d.Key)
		if isMeta(d.Before.Value) || isMeta(d.After.Value) {
			els, err := s.elementDiffs(d, from, to, len(rows))
			switch {
			case errors.Is(err, errTooMany):
				s.replyTooMany(c, "REVKV.DIFF")
				return
			case err != nil:
				c.w.Error(historyError(err))
				return
			}
			for _, x := range els {
				rows, keys = append(rows, x), append(keys, d.Key)
			}
		}
	}
	notes := &notesOf{store: s.store}
	c.w.Array(len(rows))
	for i, d := range rows {
		c.w.Array(3)
		c.w.BulkString(keys[i])
		for _, e := range []revkv.Entry[[]byte]{d.Before, d.After} {
			if e.Rev == 0 {
				c.w.Null()
			} else {
				entryUnder(c, e, keys[i], notes)
			}
		}
	}
}

func cmdCompact(s *server, c *client, a [][]byte) {
	rev, ok := revArg(c, a[1])
	if !ok {
		return
	}
	if err := s.store.Compact(rev); err != nil {
		c.w.Error(historyError(err))
		return
	}
	c.w.Simple("OK")
}

// cmdWatchPrefix: REVKV.WATCH prefix from. The connection becomes the
// watch's: it receives +OK, then each entry as a push-style array
// ["entry", prefix, <entry>] (see entryLen) as it happens, from revision from
// (0: from the next one). It ends, and the connection closes, when the
// client closes it or sends anything, when the server shuts down, or with
// an error reply (-COMPACTED: history was trimmed past it).
func cmdWatchPrefix(s *server, c *client, a [][]byte) {
	from, ok := revArg(c, a[2])
	if !ok {
		return
	}
	if c.inMulti {
		c.w.Error("ERR REVKV.WATCH inside MULTI is not allowed")
		return
	}
	c.quit = true // the connection is the watch's until it ends
	c.w.Simple("OK")
	if c.w.Flush() != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // any input, the connection's end or shutdown's deadline ends the watch
		var b [1]byte
		c.conn.Read(b[:])
		cancel()
	}()
	prefix := string(a[1])
	notes := &notesOf{store: s.store}
	for e, err := range s.store.Watch(ctx, prefix, from) {
		if err != nil {
			if ctx.Err() == nil {
				c.w.Error(historyError(err))
			}
			return
		}
		if strings.HasPrefix(e.Key, internal) { // elements: see REVKV.HISTORY of their key
			continue
		}
		c.w.Array(3)
		c.w.BulkString("entry")
		c.w.BulkString(prefix)
		entryUnder(c, e, e.Key, notes)
		if err := c.w.Flush(); err != nil {
			return
		}
	}
}
