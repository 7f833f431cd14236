package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/revkv/revkv/vfs"
)

// damagedExt ends the name of a file CutLog moved aside. Segments does not
// list such files, and nothing removes them.
const damagedExt = ".damaged"

// CutLog cuts dir's log before the damaged record c names (a *Corruption
// Replay returned), for a caller that chose to keep the records before it
// and lose those after: the bytes of that segment from c.Offset on are
// copied to a file of the segment's name with ".damaged" appended, every
// later segment is renamed the same way, and the segment is cut at
// c.Offset; each step is synced before the next. It returns the tail to
// open a Writer after. A c that names no segment of dir is returned as it
// is.
func CutLog(fs vfs.FS, dir string, c *Corruption) (Tail, error) {
	first, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(c.File), logExt), 16, 64)
	if err != nil || c.File != filepath.Join(dir, SegmentName(first)) || c.Offset < 0 {
		return Tail{}, c
	}
	f, err := fs.OpenRead(c.File)
	if err != nil {
		return Tail{}, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return Tail{}, err
	}
	off := min(c.Offset, int64(len(data)))
	aside, err := freeName(fs, c.File+damagedExt)
	if err != nil {
		return Tail{}, err
	}
	w, err := fs.Create(aside)
	if err != nil {
		return Tail{}, err
	}
	if _, err = w.Write(data[off:]); err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Tail{}, err
	}
	segs, err := Segments(fs, dir)
	if err != nil {
		return Tail{}, err
	}
	for _, s := range segs {
		if s > first {
			name := filepath.Join(dir, SegmentName(s))
			to, err := freeName(fs, name+damagedExt)
			if err == nil {
				err = fs.Rename(name, to)
			}
			if err != nil {
				return Tail{}, err
			}
		}
	}
	if err := fs.SyncDir(dir); err != nil {
		return Tail{}, err
	}
	if off < headerSize {
		off = 0 // OpenWriter writes the header again
	}
	a, err := fs.OpenAppend(c.File)
	if err != nil {
		return Tail{}, err
	}
	if err = a.Truncate(off); err == nil {
		err = a.Sync()
	}
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Tail{}, err
	}
	return Tail{Segment: first, Size: off}, nil
}

// freeName returns name, or name with "-2", "-3", ... appended, whichever
// is first not a file: a segment cut aside once may be written again.
func freeName(fs vfs.FS, name string) (string, error) {
	for i := 1; ; i++ {
		n := name
		if i > 1 {
			n = fmt.Sprintf("%s-%d", name, i)
		}
		if _, err := fs.Size(n); errors.Is(err, os.ErrNotExist) {
			return n, nil
		} else if err != nil {
			return "", err
		}
	}
}
