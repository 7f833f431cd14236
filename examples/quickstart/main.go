// Quickstart is a short tour of revkv: writes, an overwrite, a TTL that
// expires and is written into history at its exact time, and point-in-time
// reads by revision and by time.
//
//	go run ./examples/quickstart
//
// The store reads a clock we move by hand, so the tour runs in an instant and
// prints the same times every run; a real program leaves WithClock out.
package main

import (
	"fmt"
	"time"

	"github.com/revkv/revkv"
)

func main() {
	now := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	wait := func(d time.Duration) { now = now.Add(d) }
	hhmm := func(t time.Time) string { return t.Format("15:04:05") }

	s := revkv.New[string](revkv.WithClock(clock))
	defer s.Close()

	step("Every write takes the next revision")
	r1, _ := s.Put("config/limits", "100 req/s")
	fmt.Printf("  %s  Put config/limits = 100 req/s     → revision %d\n", hhmm(now), r1)
	wait(2 * time.Minute)
	r2, _ := s.Put("config/owner", "team-a")
	fmt.Printf("  %s  Put config/owner  = team-a        → revision %d\n", hhmm(now), r2)
	wait(2 * time.Minute)
	r3, _ := s.Put("config/limits", "250 req/s")
	fmt.Printf("  %s  Put config/limits = 250 req/s     → revision %d (an overwrite)\n", hhmm(now), r3)
	v, _ := s.Get("config/limits")
	fmt.Printf("  Get config/limits now: %s\n", v)

	step("A key with a TTL")
	wait(time.Minute)
	r4, _ := s.PutTTL("session/42", "alice", 5*time.Minute)
	e, _ := s.GetEntry("session/42")
	fmt.Printf("  %s  PutTTL session/42 = alice for 5m → revision %d, expires at %s\n", hhmm(now), r4, hhmm(e.ExpiresAt))
	wait(3 * time.Minute)
	left, _ := s.TTL("session/42")
	fmt.Printf("  %s  TTL session/42: %v left\n", hhmm(now), left)
	wait(4 * time.Minute)
	_, ok := s.Get("session/42")
	fmt.Printf("  %s  Get session/42: found=%v (expired at %s; no goroutine needed)\n", hhmm(now), ok, hhmm(e.ExpiresAt))

	step("The expiry is written into history at its exact time, by the next write")
	r5, _ := s.Put("config/owner", "team-b")
	fmt.Printf("  %s  Put config/owner = team-b → revision %d\n", hhmm(now), r5)
	for _, h := range s.History("session/42") {
		fmt.Printf("  history session/42: revision %d  %-6s at %s  %q\n", h.Rev, h.Op, hhmm(h.Time), h.Value)
	}

	step("Point-in-time reads")
	old, _, _ := s.GetAt("config/limits", r2)
	fmt.Printf("  GetAt config/limits at revision %d: %s\n", r2, old)
	at := time.Date(2026, 11, 21, 14, 6, 0, 0, time.UTC)
	sess, alive, _ := s.GetAsOf("session/42", at)
	fmt.Printf("  GetAsOf session/42 at %s: %q found=%v\n", hhmm(at), sess, alive)
	view, _ := s.AsOf(at)
	fmt.Printf("  AsOf %s opens a view at revision %d:\n", hhmm(at), view.Rev())
	for k, v := range view.Scan("") {
		fmt.Printf("    %-14s %s\n", k, v)
	}
	view.Close()
	fmt.Printf("  now: revision %d, %d live keys\n", s.Rev(), s.Len())
}

func step(title string) { fmt.Printf("\n%s\n", title) }
