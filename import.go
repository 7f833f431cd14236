package revkv

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/segment"
	"github.com/revkv/revkv/vfs"
	"github.com/revkv/revkv/wal"
)

// Import reads an export (Store.Export) from r into dir, which must be
// empty or absent, and returns the latest revision. The directory then
// holds the same revisions, times, expiries, annotations, digests and
// floor: every line is checked as it is read (each kept entry's digest
// must follow from the one before it). History is written as it is read,
// a window of revisions at a time, into segments, as a store that seals
// writes them (WithMemory); then a snapshot of what memory keeps (each
// key's newest entry, the annotations, the digests the entries below the
// floor need) and, last, the manifest that lists the segments. So Import's
// memory is bounded by a window and the keys' latest values, not by the
// export. The directory is then opened once, read-only, so that Open's
// own checks pass before Import returns. An export with a prefix is
// refused. Anything wrong is an error naming the line; the directory is
// then left as it was (an absent one is not created, what Import wrote is
// removed). A crash during Import leaves a directory Open refuses as
// ErrCorrupt (or an empty one): import again into an empty one. r is read
// on a goroutine of Import's, a batch of lines ahead of the checks; Import
// returns once it no longer reads r (a read under way is waited for). The
// options that apply are WithFS and WithProgress.
func Import[V any](dir string, codec Codec[V], r io.Reader, opts ...Option) (Revision, error) {
	o := build(opts)
	fail := func(err error) (Revision, error) { return 0, &OpError{Op: "import", Key: dir, Err: err} }
	names, err := o.fs.List(dir)
	existed := err == nil
	switch {
	case existed && len(names) > 0:
		return fail(fmt.Errorf("the directory is not empty (it holds %d files)", len(names)))
	case !existed && !errors.Is(err, fs.ErrNotExist):
		return fail(err)
	}
	var made []string // the directories makeDir makes, deepest first: a failure removes them
	for d := filepath.Clean(dir); !existed && d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := o.fs.List(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		made = append(made, d)
	}
	if err := makeDir(o.fs, dir); err != nil {
		cleanDirs(o.fs, dir, made)
		return fail(err)
	}
	lock, err := o.fs.Lock(dir)
	if err != nil {
		cleanDirs(o.fs, dir, made)
		return fail(err)
	}
	im := importer{progress: o.progress, prevHas: true, fs: o.fs, dir: dir}
	err = im.read(r)
	if err == nil {
		err = im.finish()
	}
	lock.Close()
	if err != nil {
		cleanDirs(o.fs, dir, made)
		return fail(err)
	}
	s, err := Open(dir, codec, WithFS(o.fs), WithReadOnly())
	if err != nil {
		cleanDirs(o.fs, dir, made)
		return fail(err)
	}
	defer s.Close()
	return s.Rev(), nil
}

// cleanDirs removes what a failed Import wrote in dir, and the
// directories in made (dir and the parents Import made, deepest first).
func cleanDirs(fsys vfs.FS, dir string, made []string) {
	names, _ := fsys.List(dir)
	for _, n := range names {
		fsys.Remove(filepath.Join(dir, n))
	}
	for _, d := range made {
		fsys.Remove(d)
	}
}

// importer reads an export and writes it into a directory as it goes:
// the history of each window of revisions into a segment (import_seal.go),
// and at the end the snapshot and the manifest.
type importer struct {
	progress func(Revision)
	fs       vfs.FS
	dir      string
	head     exportHeader
	state    wal.State
	keys     map[string]*importKey
	// old holds the digests of revisions below the floor the export
	// gives, in revision order: the entries kept there need them in
	// memory, as a sealed store keeps them (olderNeeded).
	old      []revDigest
	notes    []wal.Notes // annotated runs of revisions
	prevRev  int64       // the last line's revision
	prevD    chain.Digest
	prevHas  bool // whether the line before had its digest (D(0) is known)
	line     int
	times    int64       // the times read, of revisions from Base on
	lastTime wal.Instant // the last line's time
	// timeText and timeOf are the last time parsed, as written and as
	// read: the lines of one commit share it (and its string, lineParser).
	timeText string
	timeOf   time.Time
	hasher   chain.Hasher
	win      importWindow
	refs     []segment.Ref // the segments written, oldest first
}

type revDigest struct {
	rev int64
	d   chain.Digest
}

// read reads and checks the whole export.
func (im *importer) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<30) // a line holds at most one value
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return err
		}
		return errors.New("an empty export: no header line")
	}
	im.line = 1
	if err := im.header(sc.Bytes()); err != nil {
		return fmt.Errorf("line 1: %w", err)
	}
	im.keys = map[string]*importKey{}
	im.win.lo = 1 // its prev is D(0), zero
	lines, stop := parseLines(sc)
	defer stop()
	for batch := range lines {
		for i := range batch.lines {
			im.line++
			l := &batch.lines[i]
			if batch.errs[i] != nil {
				return fmt.Errorf("line %d: %w", im.line, batch.errs[i])
			}
			if err := im.add(l); err != nil {
				return fmt.Errorf("line %d: revision %d: %w", im.line, l.Rev, err)
			}
			if im.progress != nil && im.line%progressEvery == 0 {
				im.progress(Revision(l.Rev))
			}
		}
		if batch.err != nil {
			return fmt.Errorf("line %d: %w", im.line+1, batch.err)
		}
	}
	if im.prevRev != im.head.Rev && im.head.Rev > 0 {
		return fmt.Errorf("the export ends at revision %d, its header says %d", im.prevRev, im.head.Rev)
	}
	if n := im.head.Rev - im.head.Base + 1; im.head.Rev > 0 && im.times != n {
		return fmt.Errorf("%d times from revision %d, the header says %d", im.times, im.head.Base, n)
	}
	return nil
}

// header reads the first line.
func (im *importer) header(b []byte) error {
	h := &im.head
	if err := json.Unmarshal(b, h); err != nil {
		return fmt.Errorf("not a revkv export: %w", err)
	}
	switch {
	case h.Format != 1:
		return fmt.Errorf("not a revkv export of format 1 (%d)", h.Format)
	case h.Prefix != "":
		return fmt.Errorf("an export of the keys with prefix %q alone: it cannot be imported", h.Prefix)
	case h.Rev < 0 || h.Rev > 0 && (h.Base < 1 || h.Base > h.Rev || h.Base > max(h.Floor, 1)):
		return fmt.Errorf("revision %d with times from %d", h.Rev, h.Base)
	case h.CompactRev < 0 || h.CompactRev > h.Rev || h.TrimFloor < 0 || h.TrimFloor > h.Rev || h.Floor != max(h.CompactRev, h.TrimFloor):
		return fmt.Errorf("floor %d of compaction %d and trims %d, at revision %d", h.Floor, h.CompactRev, h.TrimFloor, h.Rev)
	}
	st := &im.state
	st.Last, st.Base, st.CompactRev, st.TrimFloor = h.Rev, h.Base, h.CompactRev, h.TrimFloor
	var err error
	for _, f := range []struct {
		s string
		i *wal.Instant
	}{{h.Time, &st.LastTime}, {h.First, &st.First}, {h.Compacted, &st.Compacted}} {
		if f.s == "" {
			continue
		}
		var t time.Time
		if t, err = parseExportTime(f.s); err != nil {
			return err
		}
		*f.i = instantOf(t)
	}
	if h.Rev > 0 && h.Time == "" || h.CompactRev > 0 && h.Compacted == "" {
		return errors.New("a time is missing")
	}
	return nil
}

// add checks one revision's line and adds it.
func (im *importer) add(l *exportLine) error {
	r := l.Rev
	isEntry := l.Key != nil || l.KeyBase64 != nil
	if r <= im.prevRev || r < 1 || r > im.head.Rev {
		return fmt.Errorf("out of order (after %d, up to %d)", im.prevRev, im.head.Rev)
	}
	var d chain.Digest
	hasDigest := l.Digest != "" || isEntry
	if hasDigest {
		var err error
		if d, err = parseDigest(l.Digest); err != nil {
			return err
		}
	}
	if !isEntry && r > im.head.Floor {
		// Every revision above the floor keeps its entry: a line without
		// one there would cut the chain, and hide what it cut.
		return fmt.Errorf("no entry, above the floor %d", im.head.Floor)
	}
	prev, err := im.prevOf(l, isEntry)
	if err != nil {
		return err
	}
	var t time.Time
	switch {
	case l.Time == "":
	case l.Time == im.timeText:
		t = im.timeOf
	default:
		if t, err = parseExportTime(l.Time); err != nil {
			return err
		}
		im.timeText, im.timeOf = l.Time, t
	}
	if r >= im.head.Base {
		if l.Time == "" || r != im.head.Base+im.times {
			return fmt.Errorf("no time for a revision from %d on", im.head.Base)
		}
		im.times++
		im.lastTime = instantOf(t)
		im.win.times = append(im.win.times, im.lastTime)
	}
	if isEntry {
		if err := im.entry(l, t, *prev, d); err != nil {
			return err
		}
	}
	if prev != nil {
		im.digest(r-1, *prev)
	}
	if hasDigest {
		im.digest(r, d)
	}
	im.prevRev, im.prevD, im.prevHas = r, d, hasDigest
	if hasDigest && r >= im.head.Base && im.win.full() {
		return im.sealWindow(r, d)
	}
	return nil
}

// prevOf returns D(rev-1) for l: the line before's, D(0), or l's prev;
// nil if none is known, which only a line without an entry may be.
func (im *importer) prevOf(l *exportLine, isEntry bool) (*chain.Digest, error) {
	switch {
	case l.Prev != "" && im.prevRev == l.Rev-1:
		return nil, errors.New(`"prev" where the line before is the revision before`)
	case l.Prev != "":
		d, err := parseDigest(l.Prev)
		return &d, err
	case im.prevRev == l.Rev-1 && im.prevHas:
		return &im.prevD, nil
	case l.Rev == 1:
		return &chain.Digest{}, nil
	case !isEntry:
		return nil, nil
	}
	return nil, fmt.Errorf(`no digest of revision %d: "prev" is missing`, l.Rev-1)
}

// notes returns l's annotations, as the chain covers them: key, value,
// and so on, sorted.
func (l *exportLine) notes() ([]string, error) {
	var notes []string
	for k, v := range l.Annotations {
		notes = append(notes, k, v)
	}
	for k, v := range l.AnnotationsB64 {
		bk, err1 := base64.StdEncoding.DecodeString(k)
		bv, err2 := base64.StdEncoding.DecodeString(v)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("annotations_base64: %w", err)
		}
		if l.Annotations != nil {
			return nil, errors.New("both annotations and annotations_base64")
		}
		notes = append(notes, string(bk), string(bv))
	}
	return sortedNotes(notes), nil
}

// entry checks and adds the entry of l, whose digest is d and whose
// predecessor's is prev.
func (im *importer) entry(l *exportLine, t time.Time, prev, d chain.Digest) error {
	x := wal.Entry{Rev: l.Rev}
	key, err := stringOrBase64(l.Key, l.KeyBase64)
	if err != nil {
		return err
	}
	if l.Time == "" {
		return errors.New("an entry without a time")
	}
	x.Sec, x.Nsec = t.Unix(), int32(t.Nanosecond())
	_, off := t.Zone()
	if l.Offset != nil { // the time is written in UTC: its offset is not whole minutes, or its year not 1 to 9999
		if off != 0 || l.Zone == "" || *l.Offset < -24*3600 || *l.Offset > 24*3600 {
			return errors.New(`an "offset" without a "zone", or with a time not in UTC`)
		}
		off = *l.Offset
	}
	x.Zone, x.Offset = l.Zone, int32(off)
	if x.Zone == "" && off != 0 {
		return errors.New(`a time off UTC without its "zone"`)
	}
	op := slices.Index(opNames[:], l.Op)
	if op < 1 {
		return fmt.Errorf("op %q", l.Op)
	}
	x.Op = uint8(op)
	if op == int(OpPut) {
		v, err := stringOrBase64(l.Value, l.ValueBase64)
		if err != nil {
			return err
		}
		x.Value = l.valueBytes
		if x.Value == nil {
			x.Value = []byte(v)
		}
	} else if l.Value != nil || l.ValueBase64 != nil || l.ExpiresAt != "" {
		return fmt.Errorf("a value or expiry on an %s", l.Op)
	}
	if l.ExpiresAt != "" {
		e, err := parseExportTime(l.ExpiresAt)
		if err != nil {
			return err
		}
		x.HasTTL, x.Expires = true, e.UnixNano()
	}
	notes, err := l.notes()
	if err != nil {
		return err
	}
	link := chain.Rev{}
	x.Key = key
	linkOf(&link, &x, notes)
	if got := im.hasher.Next(prev, &link); got != d {
		return fmt.Errorf("its digest %s does not follow from the revision before and its entry (%s)", d.Short(), got.Short())
	}
	x.Key = ""
	k := im.keys[key]
	switch {
	case l.Dropped < 0 || l.Dropped >= l.Rev:
		return fmt.Errorf(`"dropped" %d: not a revision before its key's oldest entry`, l.Dropped)
	case k == nil:
		k = &importKey{key: key, trimmed: l.Trimmed, dropped: l.Dropped, first: l.Rev}
		im.keys[key] = k
	case l.Trimmed || l.Dropped != 0:
		return errors.New(`"trimmed" on an entry not its key's oldest`)
	}
	im.win.add(k, x)
	if len(notes) > 0 {
		im.addNotes(l.Rev, notes)
	}
	return nil
}

// addNotes adds rev's annotations, to the run before if it is rev-1's and
// the same.
func (im *importer) addNotes(rev int64, notes []string) {
	if n := len(im.notes); n > 0 {
		last := &im.notes[n-1]
		if last.First+last.N == rev && last.N < wal.MaxNoteSpan && slices.Equal(last.Notes, notes) {
			last.N++
			return
		}
	}
	im.notes = append(im.notes, wal.Notes{First: rev, N: 1, Notes: notes})
}

func stringOrBase64(s, b64 *string) (string, error) {
	switch {
	case s != nil && b64 == nil:
		return *s, nil
	case s == nil && b64 != nil:
		b, err := base64.StdEncoding.DecodeString(*b64)
		return string(b), err
	}
	return "", errors.New("neither or both of a text and a base64 form")
}

func parseDigest(s string) (chain.Digest, error) {
	var d chain.Digest
	if len(s) != 64 {
		return d, fmt.Errorf("a digest of %d hex digits, not 64", len(s))
	}
	_, err := hex.Decode(d[:], []byte(s))
	return d, err
}
