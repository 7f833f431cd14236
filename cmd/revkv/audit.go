package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/revkv/revkv"
)

// The audit commands: verify and export read; import writes a new
// directory.

type jsonVerify struct {
	Rev        revkv.Revision `json:"rev"`
	Digest     string         `json:"digest"`
	CheckedRev revkv.Revision `json:"checked_rev,omitempty"`
	Expected   string         `json:"expected,omitempty"`
	Actual     string         `json:"actual,omitempty"`
	OK         bool           `json:"ok"`
	// NotRead is what the log holds that is not whole records, if anything:
	// verify fails on it.
	NotRead *jsonRecovery `json:"not_read,omitempty"`
}

func cmdVerify(c *cli, _ []string) error {
	if c.set["rev"] != c.set["digest"] {
		return usagef("verify: --rev and --digest go together: give both, or neither")
	}
	var rev revkv.Revision
	var want [32]byte
	if c.set["rev"] {
		var err error
		if rev, err = parseRev("--rev", c.rev); err != nil {
			return err
		}
		if want, err = parseDigest(c.digest); err != nil {
			return err
		}
	}
	s, err := c.openRead() // Open checks the hash chain of every revision in the log and snapshot
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.VerifySealed(nil); err != nil { // and the sealed ones, entry by entry
		return fmt.Errorf("verify: %s: %v", c.dir, err)
	}
	head, d, err := s.Digest()
	if err != nil {
		return fmt.Errorf("verify: cannot read the digest of %s: %v", c.dir, err)
	}
	res := jsonVerify{Rev: head, Digest: hex.EncodeToString(d[:]), OK: true}
	if c.set["rev"] {
		got, err := s.DigestAt(rev)
		if err != nil {
			return fmt.Errorf("verify: cannot read the digest of revision %d: %v", rev, err)
		}
		res.CheckedRev, res.Expected, res.Actual = rev, hex.EncodeToString(want[:]), hex.EncodeToString(got[:])
		res.OK = got == want
	}
	if res.NotRead = c.recovery(s); res.NotRead != nil {
		res.OK = false
	}
	var failed error
	switch {
	case c.set["rev"] && res.Actual != res.Expected:
		failed = fmt.Errorf("verify: revision %d has digest %s, not the expected %s", rev, res.Actual, res.Expected)
	case res.NotRead != nil:
		// As redis-check-aof reports a short AOF: the revisions before the
		// bytes check out, but the directory holds more than they say.
		failed = fmt.Errorf("verify: %s: %s (revkv repair cuts them, keeping a copy)", c.dir, res.NotRead.sentence())
	}
	if c.json {
		if err := c.writeJSON(res); err != nil {
			return err
		}
		return failed
	}
	if failed != nil {
		return failed
	}
	if err := fields(c.out, "revision", strconv.FormatInt(int64(head), 10), "digest", res.Digest); err != nil {
		return err
	}
	if c.set["rev"] {
		fmt.Fprintf(c.out, "revision %d has the expected digest %s\n", rev, res.Actual)
	}
	_, err = fmt.Fprintln(c.out, "ok")
	return err
}

func cmdExport(c *cli, args []string) error {
	prefix := ""
	if len(args) > 0 {
		prefix = args[0]
	}
	var p *progress
	if !c.stdoutTerm { // else the lines would be written over the export
		p = c.progress("reading " + c.dir)
	}
	s, err := c.open(false, p)
	if err != nil {
		return err
	}
	defer s.Close()
	p.next("exporting", s.Rev())
	err = s.Export(c.out, prefix)
	p.done()
	if err != nil {
		return fmt.Errorf("export: %v", err)
	}
	return nil
}

func cmdImport(c *cli, _ []string) error {
	ents, err := os.ReadDir(c.dir)
	switch {
	case err == nil && len(ents) > 0:
		return fmt.Errorf("%s is not empty: import writes only into an empty or absent directory", c.dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot import into %s: %v", c.dir, unwrapPath(err))
	}
	var opts []revkv.Option
	p := c.progress("importing into " + c.dir)
	if p != nil {
		opts = append(opts, revkv.WithProgress(p.report))
	}
	head, err := revkv.Import(c.dir, revkv.BytesCodec(), bufio.NewReaderSize(c.stdin, 1<<20), opts...)
	p.done()
	var oe *revkv.OpError
	if errors.As(err, &oe) {
		return err // it names the import and the directory
	}
	if err != nil {
		return fmt.Errorf("import into %s: %v", c.dir, err)
	}
	_, err = fmt.Fprintf(c.out, "imported into %s: latest revision %d\n", c.dir, head)
	return err
}
