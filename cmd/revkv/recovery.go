package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/revkv/revkv"
)

// What the tool says of bytes a store's log holds that are not whole
// records (revkv.Recovery): info and verify report them, verify fails on
// them, and repair cuts them, keeping a copy.

// jsonRecovery is a revkv.Recovery in --json output, its files named
// within the directory.
type jsonRecovery struct {
	File    string         `json:"file"`
	Offset  int64          `json:"offset"`
	Bytes   int64          `json:"bytes"`
	Rev     revkv.Revision `json:"rev"`
	Reads   revkv.Revision `json:"reads_to,omitempty"`
	Damaged bool           `json:"damaged"`
	Why     string         `json:"why,omitempty"`
	Cut     bool           `json:"cut"`
	Moved   []string       `json:"moved,omitempty"`
}

// jsonRepair is repair's --json output: the latest revision after it, and
// what it cut (null: nothing).
type jsonRepair struct {
	Rev revkv.Revision `json:"rev"`
	Cut *jsonRecovery  `json:"cut"`
}

// recovery returns what s's Open found that was not whole records, or nil.
func (c *cli) recovery(s *store) *jsonRecovery {
	r, ok := s.Recovery()
	if !ok {
		return nil
	}
	j := &jsonRecovery{File: c.inDir(r.File), Offset: r.Offset, Bytes: r.Bytes, Rev: r.Rev, Reads: r.Reads, Damaged: r.Damaged, Why: r.Why, Cut: r.Cut}
	for _, m := range r.Moved {
		j.Moved = append(j.Moved, c.inDir(m))
	}
	return j
}

// inDir names a file of the directory by its name alone.
func (c *cli) inDir(path string) string {
	if rel, err := filepath.Rel(c.dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// sentence says what j is, as a clause: "86 bytes of 0000000000000001.log
// from offset 906 are not whole records (...); they could have held
// revision 10 and later".
func (j *jsonRecovery) sentence() string {
	what := "not whole records (a torn write, or damage to the last record)"
	if j.Damaged {
		what = "damaged (" + j.Why + ")"
	}
	s := fmt.Sprintf("%d bytes of %s from offset %d are %s; they could have held revision %d and later", j.Bytes, j.File, j.Offset, what, j.Rev)
	if j.Reads != 0 {
		s += fmt.Sprintf(" (the first record there, whole but failing its checksum, reads as revisions %d to %d)", j.Rev, j.Reads)
	}
	return s
}

// cmdRepair cuts what is not whole records from the log: a torn tail, or
// damage (revkv.WithRepair), keeping the cut bytes in files named after
// their segment with ".damaged" appended.
func cmdRepair(c *cli, _ []string) error {
	if err := isStoreDir(c.dir); err != nil {
		return err
	}
	s, err := revkv.Open(c.dir, revkv.BytesCodec(), revkv.WithReadOnly())
	var torn *jsonRecovery
	switch {
	case err == nil:
		torn = c.recovery(s)
		rev := s.Rev()
		s.Close()
		if torn == nil {
			if c.json {
				return c.writeJSON(jsonRepair{Rev: rev})
			}
			_, err := fmt.Fprintf(c.out, "nothing to repair: every record of %s is whole\n", c.dir)
			return err
		}
	case errors.Is(err, revkv.ErrCorrupt) && !errors.Is(err, revkv.ErrNewerFormat):
	default: // a newer format is not damage: nothing to repair
		return c.openError(err)
	}
	var aside string
	if torn != nil {
		// Open cuts a torn tail without keeping it: keep it first.
		if aside, err = keepTail(filepath.Join(c.dir, torn.File), torn.Offset); err != nil {
			return fmt.Errorf("repair: cannot keep the torn tail of %s: %v", torn.File, unwrapPath(err))
		}
	}
	s, err = revkv.Open(c.dir, revkv.BytesCodec(), revkv.WithRepair(), c.keepTiers())
	if err != nil {
		if errors.Is(err, revkv.ErrCorrupt) {
			return fmt.Errorf("%v; repair cuts only damaged log records, not a damaged snapshot or file header", c.openError(err))
		}
		return c.openError(err)
	}
	r := c.recovery(s)
	rev := s.Rev()
	if err := s.Close(); err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("repair: %s opened with nothing to cut", c.dir)
	}
	if aside != "" && len(r.Moved) == 0 {
		r.Moved = []string{c.inDir(aside)}
	}
	if c.json {
		return c.writeJSON(jsonRepair{Rev: rev, Cut: r})
	}
	_, err = fmt.Fprintf(c.out, "repaired %s: %s; cut them and moved them to %s; the latest revision is now %d\n",
		c.dir, r.sentence(), strings.Join(r.Moved, ", "), rev)
	return err
}

// keepTail copies the bytes of file from offset off on to a new file of
// its name with ".damaged" appended (or "-2", "-3", ... after that, if
// taken), synced, and returns its name.
func keepTail(file string, off int64) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return "", err
	}
	name := file + ".damaged"
	for i := 2; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s.damaged-%d", file, i)
	}
	w, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(w, f)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	if d, err := os.Open(filepath.Dir(file)); err == nil {
		d.Sync()
		d.Close()
	}
	return name, nil
}
