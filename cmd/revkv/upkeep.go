package main

import (
	"fmt"

	"github.com/revkv/revkv"
)

// The upkeep commands: they open the directory to write.

func cmdCheckpoint(c *cli, _ []string) error {
	s, err := c.open(true, c.progress("reading "+c.dir))
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Checkpoint(); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "checkpoint of %s written at revision %d\n", c.dir, s.Rev())
	return err
}

func cmdCompact(c *cli, args []string) error {
	rev, err := parseRev("REV", args[0])
	if err != nil {
		return err
	}
	s, err := c.open(true, c.progress("reading "+c.dir))
	if err != nil {
		return err
	}
	defer s.Close()
	switch floor, head := s.Floor(), s.Rev(); {
	case rev < floor:
		return fmt.Errorf("compact: revision %d is below the floor, %d: the history below %d is gone already", rev, floor, floor)
	case rev > head:
		return fmt.Errorf("compact: revision %d is after the latest revision, %d", rev, head)
	}
	if err := s.Compact(revkv.Revision(rev)); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "compacted %s at revision %d: the floor is %d\n", c.dir, rev, s.Floor())
	return err
}
