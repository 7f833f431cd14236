// Audit asks a config store the questions an auditor asks after an incident:
// what was this value at a given time, what did everything under a prefix
// look like then, and what changed between two revisions.
//
//	go run ./examples/audit                # in memory
//	go run ./examples/audit -dir trail     # on a directory: run it twice
//
// With -dir the trail is kept on disk: the first run writes the day's
// changes, and a second run finds them there after the restart and answers
// the same questions from what it loaded.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/revkv/revkv"
)

func main() {
	dir := flag.String("dir", "", "keep the trail in this directory (run twice to see it survive a restart)")
	flag.Parse()
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	now := day
	clock := revkv.WithClock(func() time.Time { return now })
	s := revkv.New[string](clock)
	if *dir != "" {
		var err error
		if s, err = revkv.Open(*dir, revkv.StringCodec(), clock); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	defer s.Close()
	if s.Rev() > 0 {
		fmt.Printf("Reopened %s: the trail holds %d revisions from the last run.\n\n", *dir, s.Rev())
		answer(s, day)
		return
	}

	// A day of changes to a config store.
	changes := []struct {
		at         string
		key, value string // value "" deletes
	}{
		{"09:00", "config/db/pool", "20"},
		{"09:00", "config/limits/api", "100"},
		{"09:05", "config/limits/batch", "10"},
		{"11:30", "config/feature/new-checkout", "off"},
		{"13:58", "config/limits/api", "500"}, // someone raises the limit
		{"14:01", "config/db/pool", "5"},      // and shrinks the pool
		{"14:20", "config/feature/new-checkout", "on"},
	}
	for _, c := range changes {
		hm, _ := time.Parse("15:04", c.at)
		now = day.Add(time.Duration(hm.Hour())*time.Hour + time.Duration(hm.Minute())*time.Minute)
		if c.value == "" {
			s.Delete(c.key)
		} else {
			s.Put(c.key, c.value)
		}
	}
	at := func(hhmm string) time.Time {
		t, _ := time.Parse("15:04", hhmm)
		return day.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute)
	}
	// 15:10: the rollback puts both keys back in one atomic step.
	now = at("15:10")
	_, err := s.Update(func(tx *revkv.Txn[string]) error {
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

	fmt.Println("\nQ4. The full record of config/limits/api, with revisions and times:")
	for _, e := range s.History("config/limits/api") {
		fmt.Printf("    revision %2d  %s  %-6s %s\n", e.Rev, e.Time.Format("15:04"), e.Op, e.Value)
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
}

// diff prints every key under prefix whose value differs between revisions
// from and to, using two views, and the entries that made the difference.
func diff(s *revkv.Store[string], from, to revkv.Revision, prefix string) {
	a, err := s.At(from)
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := s.At(to)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	old, cur := maps.Collect(a.Scan(prefix)), maps.Collect(b.Scan(prefix))
	keys := slices.Sorted(maps.Keys(old))
	for k := range cur {
		if _, ok := old[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		was, had := old[k]
		is, has := cur[k]
		switch {
		case had && !has:
			fmt.Printf("    %-30s %s → (deleted)\n", k, was)
		case !had && has:
			fmt.Printf("    %-30s (new) → %s\n", k, is)
		case was != is:
			fmt.Printf("    %-30s %s → %s\n", k, was, is)
		default:
			continue
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
