// Package webtest builds the data directory that package web's tests and
// its browser tests (the module under browser/) look at: a key with puts,
// deletes, a TTL and an expiry, annotated revisions, a value that holds
// markup, JSON, binary and a large value. Times come from a clock the
// fixture sets, so every revision's time is known to the nanosecond.
package webtest

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/revkv/revkv"
)

// Start is the time of the fixture's first revision.
var Start = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// Clock is a clock a test moves by hand.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Script is the value that must show as text and run nothing.
const Script = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`

// Timeline is the key with every kind of entry.
const Timeline = "cart/42"

// Fixture is what Build wrote.
type Fixture struct {
	Dir string
	// Puts, Deletes and Expires count Timeline's entries of each kind;
	// TTLs its puts with a TTL.
	Puts, Deletes, Expires, TTLs int
	// Mid is a revision in the middle of the history, for the state and
	// diff views; Head the latest.
	Mid, Head revkv.Revision
}

// Build writes the fixture into dir (which must be empty or absent) and
// closes the store.
func Build(dir string) (Fixture, error) {
	f := Fixture{Dir: dir}
	clk := NewClock(Start)
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithClock(clk.Now))
	if err != nil {
		return f, err
	}
	step := func() { clk.Add(time.Second + 1234*time.Nanosecond) }
	var errs []error
	check := func(_ revkv.Revision, err error) {
		if err != nil {
			errs = append(errs, err)
		}
		step()
	}
	annotated := func(key, value, who, why string) {
		check(s.Update(func(tx *revkv.Txn[[]byte]) error {
			tx.Annotate("who", who)
			tx.Annotate("why", why)
			return tx.Put(key, []byte(value))
		}))
	}
	annotated("config/limits/api", `{"rate": 100, "burst": 20}`, "alice", "INC-7: first limits")
	check(s.Put("config/name", []byte("shop")))
	check(s.Put(Timeline, []byte("apples")))
	check(s.PutTTL(Timeline, []byte("apples, pears"), 3*time.Second+123*time.Nanosecond))
	check(s.Put("config/feature/dark", []byte("off")))
	annotated("config/limits/api", `{"rate": 200, "burst": 20, "note": "raised"}`, "bob", "INC-9: Black Friday")
	check(s.Put("blob/1", bytes.Repeat([]byte{0, 1, 2, 0xfe, 0xff}, 20)))
	f.Mid = s.Rev()
	clk.Add(5 * time.Second) // the TTL runs out; the next write writes the expiry first
	check(s.Put("config/name", []byte(Script)))
	check(s.Put(Timeline, []byte("plums")))
	check(s.Delete(Timeline))
	check(s.Delete("config/feature/dark"))
	check(s.Put("big/text", []byte(strings.Repeat("A long line of text, repeated. ", 400))))
	check(s.PutTTL("session/abc", []byte("token-1"), 2*time.Second))
	annotated(Timeline, "cherries", "carol", "restock")
	check(s.PutTTL(Timeline, []byte("cherries, figs"), time.Hour+5*time.Nanosecond))
	check(s.Put("config/limits/web", []byte(`{"rate": 50}`)))
	f.Head = s.Rev()
	for _, e := range s.History(Timeline) {
		switch e.Op {
		case revkv.OpPut:
			f.Puts++
			if !e.ExpiresAt.IsZero() {
				f.TTLs++
			}
		case revkv.OpDelete:
			f.Deletes++
		case revkv.OpExpire:
			f.Expires++
		}
	}
	if err := s.Close(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return f, fmt.Errorf("webtest: building the fixture: %v", errs)
	}
	if f.Expires != 1 || f.Deletes != 1 || f.TTLs != 2 {
		return f, fmt.Errorf("webtest: the fixture's timeline has %d expiries, %d deletes, %d TTLs: not 1, 1, 2", f.Expires, f.Deletes, f.TTLs)
	}
	return f, nil
}

// Open opens dir read-only, as revkv serve does.
func Open(dir string) (*revkv.Store[[]byte], error) {
	return revkv.Open(dir, revkv.BytesCodec(), revkv.WithReadOnly())
}
