package revkv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/revkv/revkv"
)

// fakeClock starts at a fixed time so that the examples print the same
// output every run.
func fakeClock() (now func() time.Time, advance func(time.Duration)) {
	t := time.Date(2026, 11, 21, 14, 2, 0, 0, time.UTC)
	return func() time.Time { return t }, func(d time.Duration) { t = t.Add(d) }
}

func Example() {
	s := revkv.New[string]()
	defer s.Close()

	rev, _ := s.Put("config/limits", "100")
	fmt.Println("wrote at revision", rev)
	s.Put("config/limits", "250")

	v, ok := s.Get("config/limits")
	fmt.Println(v, ok)
	old, _, _ := s.GetAt("config/limits", rev)
	fmt.Println("at revision", rev, "it was", old)
	// Output:
	// wrote at revision 1
	// 250 true
	// at revision 1 it was 100
}

func ExampleStore_PutTTL() {
	now, advance := fakeClock()
	s := revkv.New[string](revkv.WithClock(now))
	defer s.Close()

	s.PutTTL("session/42", "alice", 30*time.Minute)
	advance(time.Hour)
	_, ok := s.Get("session/42")
	fmt.Println("still there:", ok)

	s.PurgeExpired() // or any write: the expiry is written at its exact time
	for _, e := range s.History("session/42") {
		fmt.Println(e.Rev, e.Op, e.Time.Format("15:04:05"), e.Value)
	}
	// Output:
	// still there: false
	// 1 put 14:02:00 alice
	// 2 expire 14:32:00
}

func ExampleStore_GetAsOf() {
	now, advance := fakeClock()
	s := revkv.New[string](revkv.WithClock(now))
	defer s.Close()

	s.Put("config/limits", "100") // 14:02
	advance(10 * time.Minute)
	s.Put("config/limits", "250") // 14:12
	advance(10 * time.Minute)

	at1405 := time.Date(2026, 11, 21, 14, 5, 0, 0, time.UTC)
	v, _, _ := s.GetAsOf("config/limits", at1405)
	fmt.Println("14:05:", v)

	view, _ := s.AsOf(at1405) // every key as of 14:05, pinned until Close
	defer view.Close()
	fmt.Println("view at revision", view.Rev())
	for k, v := range view.Scan("config/") {
		fmt.Println(k, v)
	}
	// Output:
	// 14:05: 100
	// view at revision 1
	// config/limits 100
}

func ExampleStore_CompareAndPut() {
	s := revkv.New[int]()
	defer s.Close()

	s.Put("counter", 1)
	e, _ := s.GetEntry("counter")
	_, err := s.CompareAndPut("counter", e.Rev, e.Value+1)
	fmt.Println("first increment:", err)
	_, err = s.CompareAndPut("counter", e.Rev, e.Value+1) // e is stale now
	fmt.Println("stale increment conflicts:", errors.Is(err, revkv.ErrConflict))
	_, err = s.CompareAndPut("fresh", 0, 1) // 0: create only if missing
	fmt.Println("create:", err)
	v, _ := s.Get("counter")
	fmt.Println("counter:", v)
	// Output:
	// first increment: <nil>
	// stale increment conflicts: true
	// create: <nil>
	// counter: 2
}

// Update moves an amount between two accounts in one atomic step: a view of
// the latest state never sees the money on its way, and an error inside the
// function writes nothing.
func ExampleStore_Update() {
	s := revkv.New[int]()
	defer s.Close()
	s.Put("acct/alice", 100)
	s.Put("acct/bob", 20)

	errInsufficient := errors.New("insufficient funds")
	move := func(from, to string, amount int) (revkv.Revision, error) {
		return s.Update(func(tx *revkv.Txn[int]) error {
			a, _ := tx.Get(from)
			if a < amount {
				return errInsufficient // nothing is written
			}
			b, _ := tx.Get(to)
			if err := tx.Put(from, a-amount); err != nil {
				return err
			}
			return tx.Put(to, b+amount)
		})
	}

	rev, err := move("acct/alice", "acct/bob", 30)
	fmt.Println("moved 30 at revision", rev, err)
	_, err = move("acct/bob", "acct/alice", 500)
	fmt.Println("moving 500:", err)

	view, _ := s.At(s.Rev())
	defer view.Close()
	sum := 0
	for k, v := range view.Scan("acct/") {
		fmt.Println(k, v)
		sum += v
	}
	fmt.Println("sum", sum)
	// The first write of the batch, revision 3, shows the step inside it.
	v, _, _ := s.GetAt("acct/bob", 3)
	fmt.Println("bob at revision 3:", v)
	// Output:
	// moved 30 at revision 4 <nil>
	// moving 500: insufficient funds
	// acct/alice 70
	// acct/bob 50
	// sum 120
	// bob at revision 3: 20
}

// Open keeps the store on a directory: its history is there again after
// Close, and revisions go on.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "revkv-example-")
	defer os.RemoveAll(dir)

	s, err := revkv.Open(dir, revkv.StringCodec())
	if err != nil {
		panic(err)
	}
	s.Put("config/limits", "100")
	s.Put("config/limits", "250")
	s.Close()

	s, err = revkv.Open(dir, revkv.StringCodec()) // a restart
	if err != nil {
		panic(err)
	}
	defer s.Close()
	old, _, _ := s.GetAt("config/limits", 1)
	cur, _ := s.Get("config/limits")
	rev, _ := s.Put("config/owner", "team-a")
	fmt.Println(old, cur, rev)
	// Output: 100 250 3
}

// Watch follows a prefix as it changes, expiries included: with
// WithExpiryInterval(d), a session's expiry arrives within about d of its
// time, as an entry whose Time is exactly its ExpiresAt.
func ExampleStore_Watch() {
	s := revkv.New[string](revkv.WithExpiryInterval(5 * time.Millisecond))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s.PutTTL("session/42", "alice", 20*time.Millisecond)
	s.Put("session/43", "bob")
	for e, err := range s.Watch(ctx, "session/", 1) {
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Println(e.Rev, e.Op, e.Key, e.Value)
		if e.Op == revkv.OpExpire {
			break
		}
	}
	// Output:
	// 1 put session/42 alice
	// 2 put session/43 bob
	// 3 expire session/42
}
