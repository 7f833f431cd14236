package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/segment"
	"github.com/revkv/revkv/vfs"
	"github.com/revkv/revkv/wal"
)

// The read commands: each opens the directory read-only.

type jsonInfo struct {
	Dir        string         `json:"dir"`
	Rev        revkv.Revision `json:"rev"`
	Time       string         `json:"time,omitempty"`
	Floor      revkv.Revision `json:"floor"`
	LiveKeys   int            `json:"live_keys"`
	Digest     string         `json:"digest,omitempty"`
	Files      []jsonFile     `json:"files"`
	TotalBytes int64          `json:"total_bytes"`
	// NotRead is what the log holds that is not whole records, if anything.
	NotRead *jsonRecovery `json:"not_read,omitempty"`
	Tiers   jsonTiers     `json:"tiers"`
}

// jsonTiers is where the history is: sealed in segments up to a revision,
// and in memory (and the log) after it.
type jsonTiers struct {
	MemoryFrom revkv.Revision `json:"memory_from"` // the first revision held in memory and the log
	LogBytes   int64          `json:"log_bytes"`   // the log written since the last seal
	Segments   []jsonSegment  `json:"segments"`
}

type jsonSegment struct {
	Name  string         `json:"name"`
	First revkv.Revision `json:"first"`
	Last  revkv.Revision `json:"last"`
	Bytes int64          `json:"bytes"`
}

// tiers reads the directory's manifest and the size of its log.
func tiers(dir string) (jsonTiers, error) {
	t := jsonTiers{MemoryFrom: 1, Segments: []jsonSegment{}}
	m, _, err := segment.ReadManifest(vfs.OS, dir)
	if err != nil {
		return t, err
	}
	for _, r := range m.Segments {
		t.Segments = append(t.Segments, jsonSegment{r.Name(), revkv.Revision(r.First), revkv.Revision(r.Last), r.Size})
		t.MemoryFrom = revkv.Revision(r.Last + 1)
	}
	t.LogBytes, err = wal.LogBytes(vfs.OS, dir, 0)
	return t, err
}

type jsonFile struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
}

func cmdInfo(c *cli, _ []string) error {
	s, err := c.openRead()
	if err != nil {
		return err
	}
	defer s.Close()
	abs, err := filepath.Abs(c.dir)
	if err != nil {
		return err
	}
	info := jsonInfo{Dir: abs, Rev: s.Rev(), Floor: s.Floor(), LiveKeys: liveKeys(s), Files: []jsonFile{}}
	if info.Rev > 0 {
		for e, err := range s.Changes("", info.Rev, info.Rev) {
			if err != nil {
				return err
			}
			info.Time = showTime(e.Time)
		}
	}
	if info.Digest, err = digest(s); err != nil {
		return err
	}
	info.NotRead = c.recovery(s)
	if info.Tiers, err = tiers(c.dir); err != nil {
		return err
	}
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			info.Files = append(info.Files, jsonFile{e.Name(), fileKind(e.Name()), fi.Size()})
			info.TotalBytes += fi.Size()
		}
	}
	if c.json {
		return c.writeJSON(info)
	}
	dig := info.Digest
	if dig == "" {
		dig = "- (the store keeps no hash chain)"
	}
	err = fields(c.out, "directory", info.Dir, "revision", strconv.FormatInt(int64(info.Rev), 10),
		"time", orDash(info.Time), "floor", strconv.FormatInt(int64(info.Floor), 10),
		"live keys", strconv.Itoa(info.LiveKeys), "digest", dig,
		"total bytes", strconv.FormatInt(info.TotalBytes, 10))
	if err != nil {
		return err
	}
	if info.NotRead != nil {
		fmt.Fprintf(c.out, "not read     %s (revkv repair cuts them, keeping a copy)\n", info.NotRead.sentence())
	}
	if n := len(info.Tiers.Segments); n > 0 {
		fmt.Fprintf(c.out, "sealed       revisions %d-%d in %d segments (MANIFEST)\n", info.Tiers.Segments[0].First, info.Tiers.Segments[n-1].Last, n)
		fmt.Fprintf(c.out, "in memory    revisions from %d, and each key's newest; %d bytes of log since the last seal\n", info.Tiers.MemoryFrom, info.Tiers.LogBytes)
		t := newTable(c.out)
		for _, sg := range info.Tiers.Segments {
			t.row("  "+sg.Name, fmt.Sprintf("%d-%d", sg.First, sg.Last), strconv.FormatInt(sg.Bytes, 10))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(c.out, "files")
	width := len(strconv.FormatInt(info.TotalBytes, 10))
	t := newTable(c.out)
	for _, f := range info.Files {
		t.row("  "+f.Name, f.Kind, fmt.Sprintf("%*d", width, f.Bytes))
	}
	return t.flush()
}

// liveKeys counts the live keys. (Store.Len on a store opened WithReadOnly
// counts the keys whose TTL ran out but whose expiry is not written yet:
// it reads them at the latest revision, not now.)
func liveKeys(s *store) int {
	n := 0
	for range s.Scan("") {
		n++
	}
	return n
}

func cmdGet(c *cli, args []string) error {
	key := args[0]
	rev, at, err := c.pointInTime()
	if err != nil {
		return err
	}
	s, err := c.openRead()
	if err != nil {
		return err
	}
	defer s.Close()
	var e revkv.Entry[[]byte]
	var ok bool
	if rev == nil && at == nil {
		if e, ok = s.GetEntry(key); !ok {
			return absent(s, key)
		}
	} else {
		v, err := view(s, rev, at)
		if err != nil {
			return err
		}
		e, ok = v.Entry(key)
		v.Close()
		if !ok {
			return fmt.Errorf("key %s is not there %s", strconv.Quote(key), c.when(rev))
		}
	}
	ann, err := annotations(s, e.Rev)
	if err != nil {
		return err
	}
	if c.json {
		return c.writeJSON(entryJSON(e, ann))
	}
	return fields(c.out, "key", textWord(e.Key), "rev", strconv.FormatInt(int64(e.Rev), 10),
		"op", e.Op.String(), "time", showTime(e.Time), "value", textValue(e.Value),
		"expires at", orDash(showTime(e.ExpiresAt)), "annotations", orDash(textAnnotations(ann)))
}

// absent says why key has no live entry: never written, deleted, or
// expired.
func absent(s *store, key string) error {
	q := strconv.Quote(key)
	h := s.History(key)
	if len(h) == 0 {
		return fmt.Errorf("key %s not found", q)
	}
	switch last := h[len(h)-1]; {
	case last.Op == revkv.OpDelete:
		return fmt.Errorf("key %s was deleted at revision %d", q, last.Rev)
	case last.Op == revkv.OpExpire:
		return fmt.Errorf("key %s expired at %s (revision %d)", q, showTime(last.Time), last.Rev)
	case !last.ExpiresAt.IsZero() && !last.ExpiresAt.After(time.Now()):
		return fmt.Errorf("key %s expired at %s", q, showTime(last.ExpiresAt))
	}
	return fmt.Errorf("key %s not found", q)
}

func cmdHistory(c *cli, args []string) error {
	key := args[0]
	s, err := c.openRead()
	if err != nil {
		return err
	}
	defer s.Close()
	h := s.History(key)
	if len(h) == 0 {
		return fmt.Errorf("key %s has no history: never written, or compacted away", strconv.Quote(key))
	}
	ann := annotationsOf{s: s}
	t := newTable(c.out, "REV", "TIME", "OP", "EXPIRES AT", "VALUE", "ANNOTATIONS")
	defer t.flush() // the rows before an error, too
	for _, e := range h {
		if err := c.entryRow(t, e, &ann, false); err != nil {
			return err
		}
	}
	return t.flush()
}

// entryRow writes e, with its revision's annotations, as a line of JSON or
// a row of t (with the key if withKey).
func (c *cli) entryRow(t *table, e revkv.Entry[[]byte], ann *annotationsOf, withKey bool) error {
	m, err := ann.get(e.Rev)
	if err != nil {
		return err
	}
	if c.json {
		return c.writeJSON(entryJSON(e, m))
	}
	cells := []string{strconv.FormatInt(int64(e.Rev), 10), showTime(e.Time), e.Op.String()}
	if withKey {
		cells = append(cells, textWord(e.Key))
	}
	cells = append(cells, orDash(showTime(e.ExpiresAt)), entryValue(e), orDash(textAnnotations(m)))
	return t.row(cells...)
}

func cmdScan(c *cli, args []string) error {
	prefix := ""
	if len(args) > 0 {
		prefix = args[0]
	}
	rev, at, err := c.pointInTime()
	if err != nil {
		return err
	}
	s, err := c.openRead()
	if err != nil {
		return err
	}
	defer s.Close()
	scan, entry := s.Scan(prefix), s.GetEntry
	if rev != nil || at != nil {
		v, err := view(s, rev, at)
		if err != nil {
			return err
		}
		defer v.Close()
		scan, entry = v.Scan(prefix), v.Entry
	}
	t := newTable(c.out, "KEY", "REV", "TIME", "EXPIRES AT", "VALUE")
	defer t.flush() // the rows before an error, too
	for key := range scan {
		e, ok := entry(key)
		if !ok {
			continue // expired since the scan began
		}
		if c.json {
			err = c.writeJSON(entryJSON(e, nil))
		} else {
			err = t.row(textWord(key), strconv.FormatInt(int64(e.Rev), 10), showTime(e.Time),
				orDash(showTime(e.ExpiresAt)), textValue(e.Value))
		}
		if err != nil {
			return err
		}
	}
	return t.flush()
}

type jsonDiff struct {
	Key       *string    `json:"key,omitempty"`
	KeyBase64 string     `json:"key_base64,omitempty"`
	Before    *jsonEntry `json:"before"`
	After     *jsonEntry `json:"after"`
}

func cmdDiff(c *cli, args []string) error {
	prefix, fromp, top, err := c.revRange("diff", args, true)
	if err != nil {
		return err
	}
	from, to := *fromp, *top
	s, err := c.openRead()
	if err != nil {
		return err
	}
	defer s.Close()
	t := newTable(c.out, "KEY", "BEFORE", "VALUE", "AFTER", "VALUE")
	defer t.flush() // the rows before an error, too
	for d, err := range s.Diff(prefix, from, to) {
		if err != nil {
			return err
		}
		if c.json {
			j := jsonDiff{Before: diffSide(d.Before), After: diffSide(d.After)}
			j.Key, j.KeyBase64 = keyJSON(d.Key)
			err = c.writeJSON(j)
		} else {
			br, bv := diffCells(d.Before)
			ar, av := diffCells(d.After)
			err = t.row(textWord(d.Key), br, bv, ar, av)
		}
		if err != nil {
			return err
		}
	}
	return t.flush()
}

// diffSide is one side of a KeyDiff in JSON: nil (null) when absent.
func diffSide(e revkv.Entry[[]byte]) *jsonEntry {
	if e.Rev == 0 {
		return nil
	}
	j := versionJSON(e)
	return &j
}

// diffCells is one side of a KeyDiff in a table: its revision and value,
// or "absent".
func diffCells(e revkv.Entry[[]byte]) (rev, value string) {
	if e.Rev == 0 {
		return "absent", "-"
	}
	return strconv.FormatInt(int64(e.Rev), 10), textValue(e.Value)
}

func cmdChanges(c *cli, args []string) error {
	prefix, fromp, top, err := c.revRange("changes", args, false)
	if err != nil {
		return err
	}
	s, err := c.openRead()
	if err != nil {
		return err
	}
	defer s.Close()
	from, to := max(s.Floor(), 1), s.Rev()
	if fromp != nil {
		from = *fromp
	}
	if top != nil {
		to = *top
	}
	ann := annotationsOf{s: s}
	t := newTable(c.out, "REV", "TIME", "OP", "KEY", "EXPIRES AT", "VALUE", "ANNOTATIONS")
	defer t.flush() // the rows before an error, too
	for e, err := range s.Changes(prefix, from, to) {
		if err != nil {
			return err
		}
		if err := c.entryRow(t, e, &ann, true); err != nil {
			return err
		}
	}
	return t.flush()
}

// revRange parses the range of diff and changes, one form for both:
// FROM TO [PREFIX], or [PREFIX] with --from N and --to N (not both forms
// at once). A single argument without flags is PREFIX for changes, whose
// ends may default, and FROM for diff, which needs both. FROM after TO is
// a usage error. An end not given is nil.
func (c *cli) revRange(name string, args []string, need bool) (prefix string, from, to *revkv.Revision, err error) {
	see := fmt.Sprintf("(usage: revkv [--dir DIR] %s FROM TO [PREFIX], or revkv [--dir DIR] %s [PREFIX] --from N --to N)", name, name)
	flags := c.set["from"] || c.set["to"]
	parse := func(what, s string) (*revkv.Revision, error) {
		r, err := parseRev(what, s)
		return &r, err
	}
	switch {
	case flags && len(args) > 1:
		return "", nil, nil, usagef("%s: give the range as FROM TO or as --from and --to, not both %s", name, see)
	case flags:
		if len(args) == 1 {
			prefix = args[0]
		}
		if c.set["from"] {
			if from, err = parse("--from", c.from); err != nil {
				return
			}
		}
		if c.set["to"] {
			if to, err = parse("--to", c.to); err != nil {
				return
			}
		}
	case len(args) >= 2:
		if from, err = parse("FROM", args[0]); err != nil {
			return
		}
		if to, err = parse("TO", args[1]); err != nil {
			return
		}
		if len(args) == 3 {
			prefix = args[2]
		}
	case len(args) == 1 && !need:
		prefix = args[0]
	case len(args) == 1:
		if from, err = parse("FROM", args[0]); err != nil {
			return
		}
	}
	if need && from == nil {
		return "", nil, nil, usagef("%s: FROM is missing %s", name, see)
	}
	if need && to == nil {
		return "", nil, nil, usagef("%s: TO is missing %s", name, see)
	}
	if from != nil && to != nil && *from > *to {
		return "", nil, nil, usagef("%s: FROM (%d) is after TO (%d) %s", name, *from, *to, see)
	}
	return prefix, from, to, nil
}
