package revkv

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/segment"
	"github.com/revkv/revkv/wal"
)

// Import writes the directory a store that sealed all of its history
// would leave (seal, then writeSnapshot): segments that cover revisions 1
// to the latest, h, one per window of the export, with every revision's
// time from the base on and a digest mark every markEvery revisions; a
// snapshot at h that holds what a seal leaves in memory; and a manifest
// that lists the segments, written last, so that the directory is a store
// only once everything else is durable.

// importWindowEntries and importWindowBytes bound a window: it is sealed at the
// first line after either is reached that may end a segment (variables
// for the tests).
var (
	importWindowEntries = 1 << 20  // entries
	importWindowBytes   = 64 << 20 // their keys' and values' bytes
)

// importKey is what Import keeps of a key across windows: what its
// snapshot record needs, and its entries in the window being filled.
type importKey struct {
	key     string
	trimmed bool
	dropped int64
	first   int64        // its oldest entry's revision
	n       int64        // its entries
	tail    [2]wal.Entry // its last two entries, the last at tail[1]
	win     []wal.Entry  // its entries in the window
}

// importWindow is the revisions [lo, ...] read since the last segment.
type importWindow struct {
	lo    int64
	prev  chain.Digest  // D(lo-1)
	keys  []*importKey  // the keys with entries in it
	n     int           // its entries
	bytes int           // their keys' and values' bytes
	times []wal.Instant // the times of revisions max(lo, base)..
	marks []digestMark  // in revision order
}

func (w *importWindow) add(k *importKey, x wal.Entry) {
	k.n++
	k.tail[0], k.tail[1] = k.tail[1], x
	if len(k.win) == 0 {
		w.keys = append(w.keys, k)
	}
	k.win = append(k.win, x)
	w.n++
	w.bytes += len(k.key) + len(x.Value)
}

func (w *importWindow) full() bool { return w.n >= importWindowEntries || w.bytes >= importWindowBytes }

// digest takes D(rev) from the export: below the floor for the snapshot,
// and as a mark of the window's segment where a seal would set one (every
// markEvery revisions, and at floor-1, from which the digests above the
// floor are rehashed: below it a compaction dropped entries).
func (im *importer) digest(rev int64, d chain.Digest) {
	floor := im.head.Floor
	if n := len(im.old); rev < floor && (n == 0 || im.old[n-1].rev < rev) {
		im.old = append(im.old, revDigest{rev, d})
	}
	w := &im.win
	if rev < 1 || rev < w.lo || rev < floor-1 || rev%markEvery != 0 && rev != floor-1 {
		return
	}
	if n := len(w.marks); n == 0 || w.marks[n-1].rev < rev {
		w.marks = append(w.marks, digestMark{rev, d})
	}
}

// sealWindow writes the window's segment, [lo, hi], whose last digest is
// last, and starts the next window at hi+1.
func (im *importer) sealWindow(hi int64, last chain.Digest) error {
	w := &im.win
	ref := segment.Ref{First: w.lo, Last: hi, Digest: last}
	slices.SortFunc(w.keys, func(a, b *importKey) int { return strings.Compare(a.key, b.key) })
	err := writeSegment(im.fs, im.dir, &ref, w.prev, func(sw *segment.Writer) ([]byte, error) {
		var zt zoneTable
		for _, k := range w.keys {
			for i := range k.win {
				e := zt.entry(k.key, &k.win[i])
				if err := sw.Add(&e); err != nil {
					return nil, err
				}
			}
			clear(k.win) // the values are the segment's now
			k.win = k.win[:0]
			if cap(k.win) > 64 { // a busy key's window: let it go
				k.win = nil
			}
		}
		if err := sw.TimesFrom(max(w.lo, im.head.Base)); err != nil {
			return nil, err
		}
		for _, t := range w.times {
			if err := sw.AddTime(t.Sec, t.Nsec); err != nil {
				return nil, err
			}
		}
		return zt.encode(w.marks), nil
	})
	if err != nil {
		return err
	}
	im.refs = append(im.refs, ref)
	clear(w.keys)
	*w = importWindow{lo: hi + 1, prev: last, keys: w.keys[:0], times: w.times[:0], marks: w.marks[:0]}
	return nil
}

// finish seals the last window, up to the latest revision h, and writes
// the snapshot at h and then the manifest.
func (im *importer) finish() error {
	h := im.head.Rev
	if h == 0 {
		return nil // an empty store: an empty directory
	}
	if im.prevRev != h || !im.prevHas {
		return errors.New("the last revision has no digest")
	}
	if im.win.lo <= h { // else the last line filled a window, and sealed it
		if err := im.sealWindow(h, im.prevD); err != nil {
			return err
		}
	}
	// As writeSnapshot after a seal up to h: h's time alone (Held), and
	// the digests the entries below the floor need, and h's.
	st := im.state
	st.Held, st.Times, st.Keys = h, []wal.Instant{im.lastTime}, int64(len(im.keys))
	ds := im.old
	if n := len(ds); n == 0 || ds[n-1].rev < h {
		ds = append(ds, revDigest{h, im.prevD})
	}
	w, err := wal.CreateSnapshot(im.fs, im.dir, h, wal.AppendState(nil, &st))
	if err != nil {
		return err
	}
	if err := im.writeRecords(w, ds); err != nil {
		w.Abort()
		return err
	}
	if err := w.Commit(); err != nil {
		return err
	}
	return segment.WriteManifest(im.fs, im.dir, &segment.Manifest{Gen: 1, Segments: im.refs})
}

// writeRecords writes the snapshot's digests ds (the run up to the latest
// revision first, as a checkpoint writes them), annotations and keys, in
// order.
func (im *importer) writeRecords(w *wal.SnapshotWriter, ds []revDigest) error {
	main := len(ds) - 1 // where the run up to the latest revision starts
	for main > 0 && ds[main-1].rev == ds[main].rev-1 {
		main--
	}
	var p []byte
	for _, run := range [][]revDigest{ds[main:], ds[:main]} {
		for len(run) > 0 {
			n := 1
			for n < len(run) && n < digestsPerRecord && run[n].rev == run[n-1].rev+1 {
				n++
			}
			g := wal.Digests{First: run[0].rev, Digests: make([][32]byte, n)}
			for i := range n {
				g.Digests[i] = run[i].d
			}
			p = wal.AppendDigests(p[:0], &g)
			if err := w.Add(wal.KindDigests, p); err != nil {
				return err
			}
			run = run[n:]
		}
	}
	for i := range im.notes {
		p = wal.AppendNotes(p[:0], &im.notes[i])
		if err := w.Add(wal.KindNotes, p); err != nil {
			return err
		}
	}
	keys := make([]*importKey, 0, len(im.keys))
	for _, k := range im.keys {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b *importKey) int { return cmp.Compare(a.key, b.key) })
	for _, k := range keys {
		r := k.record()
		p = wal.AppendKey(p[:0], &r)
		if err := w.Add(wal.KindKey, p); err != nil {
			return err
		}
	}
	return nil
}

// record is k's snapshot record as a seal of all history leaves its log
// (revlog.Log.Seal): its newest entry stays in memory, and the put before
// it too if that one is an expiry (the value that expired); the rest is
// the segments'. A key with nothing older than those is not sealed.
func (k *importKey) record() wal.Key {
	r := wal.Key{Key: k.key, Trimmed: k.trimmed, Dropped: k.dropped}
	i := k.n - 1 // the newest entry's index in the key's history
	if i > 0 && k.tail[1].Op == uint8(OpExpire) {
		i--
	}
	if i <= 0 {
		r.Entries = k.tail[2-k.n:]
		return r
	}
	r.Sealed, r.Lo = true, k.first
	r.Entries = k.tail[2-(k.n-i):]
	return r
}
