package revkv

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revkv/revkv/vfs"
)

// These tests drive the group commit (group.go) into the orders that only
// a leader holding its group can make: a request queued behind the next
// leader runs in that leader's group, as a follower.

// boomCodec is a string codec whose Encode panics on "boom".
type boomCodec struct{}

func (boomCodec) Encode(dst []byte, v string) ([]byte, error) {
	if v == "boom" {
		panic("boom")
	}
	return append(dst, v...), nil
}
func (boomCodec) Decode(b []byte) (string, error) { return string(b), nil }

// queued waits until n requests wait in the queue behind a leader.
func queued[V any](t *testing.T, d *disk[V], n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		d.qmu.Lock()
		l := len(d.queue)
		d.qmu.Unlock()
		if l >= n {
			return
		}
	}
	t.Fatalf("fewer than %d requests queued", n)
}

// leaderAndNext makes the next drain's group predictable: an Update leads
// a drain and waits inside its fn, and a Put of "q" queues first behind
// it, so that it leads the next drain; whatever queues after it runs in
// that drain as a follower. release lets the leader go on; lead and next
// give the two calls' errors.
func leaderAndNext(t *testing.T, s *Store[string]) (release func(), lead, next <-chan error) {
	t.Helper()
	hold, held := make(chan struct{}), make(chan struct{})
	l, n := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := s.Update(func(tx *Txn[string]) error { close(held); <-hold; return tx.Put("a", "1") })
		l <- err
	}()
	<-held
	go func() { _, err := s.Put("q", "1"); n <- err }()
	queued(t, s.disk, 1)
	return func() { close(hold) }, l, n
}

// A single write that panics while a leader runs it for its submitter: the
// panic is raised again in the submitter's goroutine, never answered as
// (0, nil).
func TestGroupFollowerWritePanics(t *testing.T) {
	s, err := Open[string](t.TempDir(), boomCodec{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release, _, _ := leaderAndNext(t, s)
	type result struct {
		rev      Revision
		err      error
		panicked any
	}
	res := make(chan result, 1)
	go func() {
		var r result
		defer func() { r.panicked = recover(); res <- r }()
		r.rev, r.err = s.Put("b", "boom") // a follower in q's group
	}()
	queued(t, s.disk, 2)
	release()
	r := <-res
	if r.panicked == nil {
		t.Fatalf("the codec's panic was swallowed: Put returned rev %d, err %v", r.rev, r.err)
	}
}

// An Update that is not its drain's leader and panics: the panic goes on
// in its goroutine, the drain goes on, and the store is usable after.
func TestGroupFollowerUpdatePanics(t *testing.T) {
	s, err := Open[string](t.TempDir(), boomCodec{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release, lead, qerr := leaderAndNext(t, s)
	p := make(chan any, 1)
	go func() {
		defer func() { p <- recover() }()
		s.Update(func(tx *Txn[string]) error { tx.Put("p", "1"); panic("boom2") })
	}()
	queued(t, s.disk, 2)
	release()
	if err := <-lead; err != nil {
		t.Fatal(err)
	}
	if err := <-qerr; err != nil {
		t.Fatal(err)
	}
	if got := <-p; got != "boom2" {
		t.Fatalf("panicked with %v", got)
	}
	if _, err := s.Put("after", "1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("p"); ok {
		t.Fatal("the panicked Update's write is visible")
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// A turn (Update, purge) queued behind a drain that fails gets the error
// without its turn and without hanging.
func TestGroupTurnFailsBeforeItsTurn(t *testing.T) {
	m := vfs.NewMem()
	var fail atomic.Bool
	m.SetFault(func(op vfs.Op, _ string) error {
		if fail.Load() && op == vfs.OpWrite {
			return errors.New("injected")
		}
		return nil
	})
	s, err := Open[string]("/db", boomCodec{}, WithFS(m))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release, lead, qerr := leaderAndNext(t, s)
	uerr := make(chan error, 1)
	ran := false
	go func() {
		_, err := s.Update(func(tx *Txn[string]) error { ran = true; return nil })
		uerr <- err
	}()
	n := make(chan int, 1)
	go func() { n <- s.PurgeExpired() }()
	queued(t, s.disk, 3)
	fail.Store(true)
	release()
	for _, c := range []<-chan error{lead, qerr, uerr} {
		select {
		case err := <-c:
			if err == nil {
				t.Fatal("no error")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("hung")
		}
	}
	select {
	case <-n:
	case <-time.After(5 * time.Second):
		t.Fatal("purge hung")
	}
	if ran {
		t.Fatal("fn ran on a failed store")
	}
}
