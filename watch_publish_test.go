package revkv

import (
	"context"
	"testing"
	"time"
)

// TestWatchJoinsDuringPublish: a watcher that joins while a write is
// inside publishLocked, before its Publish, is woken for that write (it
// read the head before the write was published, and waits).
func TestWatchJoinsDuringPublish(t *testing.T) {
	s := New[int]()
	defer s.Close()

	s.indexMu.RLock() // a reader in the middle of a lookup: the writer waits in publishLocked
	putDone := make(chan struct{})
	go func() {
		defer close(putDone)
		s.Put("a", 1)
	}()
	time.Sleep(100 * time.Millisecond) // the writer has loaded watch.n (0) and waits for indexMu

	got := make(chan Entry[int], 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for e, err := range s.Watch(ctx, "a", 0) {
			if err == nil {
				got <- e
			}
			return
		}
	}()
	for s.watch.n.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the watcher saw head 0 and waits on its wake
	s.indexMu.RUnlock()
	<-putDone
	if s.Rev() != 1 {
		t.Fatalf("Rev %d", s.Rev())
	}
	select {
	case e := <-got:
		t.Logf("woken: %+v", e)
	case <-time.After(2 * time.Second):
		t.Fatal("revision 1 is published but the watcher from Rev()+1 = 1 was never woken")
	}
}
