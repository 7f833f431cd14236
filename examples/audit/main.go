// Audit asks a config store the questions an auditor asks after an incident:
// what was this value at a given time, what did everything under a prefix
// look like then, what changed between two revisions, who changed it and
// why, and (on a directory) whether the history is the one that was
// written, against a digest kept elsewhere.
//
//	go run ./examples/audit                # on a directory in memory
//	go run ./examples/audit -dir trail     # on a directory: run it twice
//
// With -dir the trail is kept on disk: the first run writes the day's
// changes, and a second run finds them there after the restart and answers
// the same questions from what it loaded.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
)

func main() {
	dir := flag.String("dir", "", "keep the trail in this directory (run twice to see it survive a restart)")
	flag.Parse()
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	now := day
	clock := revkv.WithClock(func() time.Time { return now })
	// Without -dir the trail is a directory in memory (vfs.NewMem), so that
	// it keeps a hash chain too: New's store keeps none.
	opts := []revkv.Option{clock}
	if *dir == "" {
		opts = append(opts, revkv.WithFS(vfs.NewMem()))
	}
	s, err := revkv.Open(cmp.Or(*dir, "trail"), revkv.StringCodec(), opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer s.Close()
	if s.Rev() > 0 {
		fmt.Printf("Reopened %s: the trail holds %d revisions from the last run.\n\n", *dir, s.Rev())
		answer(s, day)
		return
	}

	// A day of changes to a config store.
	// Each change is an Update annotated with who made it and why.
	changes := []struct {
		at, who, why string
		key, value   string
	}{
		{"09:00", "ops-bot", "initial config", "config/db/pool", "20"},
		{"09:00", "ops-bot", "initial config", "config/limits/api", "100"},
		{"09:05", "ops-bot", "initial config", "config/limits/batch", "10"},
		{"11:30", "maria", "CHK-12: ship dark", "config/feature/new-checkout", "off"},
		{"13:58", "sam", "INC-7: partner traffic spike", "config/limits/api", "500"},
		{"14:01", "sam", "INC-7: db load", "config/db/pool", "5"},
		{"14:20", "maria", "CHK-12: launch", "config/feature/new-checkout", "on"},
	}
	for _, c := range changes {
		hm, _ := time.Parse("15:04", c.at)
		now = day.Add(time.Duration(hm.Hour())*time.Hour + time.Duration(hm.Minute())*time.Minute)
		_, err := s.Update(func(tx *revkv.Txn[string]) error {
			tx.Annotate("who", c.who)
			tx.Annotate("why", c.why)
			return tx.Put(c.key, c.value)
		})
		if err != nil {
			panic(err)
		}
	}
	at := func(hhmm string) time.Time {
		t, _ := time.Parse("15:04", hhmm)
		return day.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute)
	}
	// 15:10: the rollback puts both keys back in one atomic step.
	now = at("15:10")
	_, err = s.Update(func(tx *revkv.Txn[string]) error {
		tx.Annotate("who", "lee")
		tx.Annotate("why", "INC-7: roll back")
		if err := tx.Put("config/limits/api", "100"); err != nil {
			return err
		}
		return tx.Put("config/db/pool", "20")
	})
	if err != nil {
		panic(err)
	}
	now = at("15:12")
	s.Delete("config/limits/batch")

	answer(s, day)
}

// answer asks the store the auditor's questions about day.
func answer(s *revkv.Store[string], day time.Time) {
	at := func(hhmm string) time.Time {
		t, _ := time.Parse("15:04", hhmm)
		return day.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute)
	}
	rollback := revkv.Revision(0)
	for _, e := range s.History("config/db/pool") {
		if e.Time.Equal(at("15:10")) {
			rollback = e.Rev
		}
	}
	fmt.Println("Q1. What was config/limits/api at 14:02 yesterday?")
	v, ok, err := s.GetAsOf("config/limits/api", at("14:02"))
	fmt.Printf("    %q (found=%v, err=%v)\n", v, ok, err)

	fmt.Println("\nQ2. Everything under config/ as of 14:02:")
	view, err := s.AsOf(at("14:02"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("    (a consistent snapshot at revision %d)\n", view.Rev())
	for k, v := range view.Scan("config/") {
		fmt.Printf("    %-30s %s\n", k, v)
	}
	incident := view.Rev()
	view.Close()

	fmt.Println("\nQ3. What changed between the snapshot at 09:30 and the one at 14:02?")
	before, _ := s.AsOf(at("09:30"))
	diff(s, before.Rev(), incident, "config/")
	before.Close()

	fmt.Println("\nQ4. Who changed config/limits/api, when, and why?")
	for _, e := range s.History("config/limits/api") {
		notes, _ := s.Annotations(e.Rev)
		fmt.Printf("    revision %2d  %s  %-6s %-4s by %-7s %s\n", e.Rev, e.Time.Format("15:04"), e.Op, e.Value, notes["who"], notes["why"])
	}

	fmt.Println("\nQ5. Was the rollback ever seen half done? Every view by time, minute by minute:")
	for t := at("15:08"); !t.After(at("15:12")); t = t.Add(time.Minute) {
		v, err := s.AsOf(t)
		if err != nil {
			panic(err)
		}
		api, _ := v.Get("config/limits/api")
		pool, _ := v.Get("config/db/pool")
		fmt.Printf("    %s  revision %2d  api=%-4s pool=%s\n", t.Format("15:04"), v.Rev(), api, pool)
		v.Close()
	}
	fmt.Printf("    (the rollback took revisions %d and %d at one time: a view by time sees both or neither)\n", rollback-1, rollback)

	fmt.Println("\nQ6. Is this the history that was written? The hash chain's digest:")
	rev, d, err := s.Digest()
	if err != nil {
		panic(err) // a store on a directory, in memory or not, keeps the chain
	}
	fmt.Printf("    revision %d: %x\n", rev, d)
	fmt.Println("    (kept elsewhere, it checks the directory later: revkv verify --rev N --digest HEX)")
}

// diff prints every key under prefix whose value differs between revisions
// from and to (Diff), and the entries that made the difference.
func diff(s *revkv.Store[string], from, to revkv.Revision, prefix string) {
	for d, err := range s.Diff(prefix, from, to) {
		if err != nil {
			panic(err)
		}
		switch {
		case d.After.Rev == 0:
			fmt.Printf("    %-30s %s → (deleted)\n", d.Key, d.Before.Value)
		case d.Before.Rev == 0:
			fmt.Printf("    %-30s (new) → %s\n", d.Key, d.After.Value)
		default:
			fmt.Printf("    %-30s %s → %s\n", d.Key, d.Before.Value, d.After.Value)
		}
	}
	// Every change in between, in order: Changes merges the keys' histories.
	fmt.Println("    the changes, in order:")
	for e, err := range s.Changes(prefix, from+1, to) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("        revision %2d at %s: %-6s %-30s %s\n", e.Rev, e.Time.Format("15:04"), e.Op, e.Key, e.Value)
	}
}
