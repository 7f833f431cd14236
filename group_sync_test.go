package revkv

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/revkv/revkv/vfs"
)

// syncGate holds a store's log syncs at a gate: once armed, the next sync
// reports on entered and waits until open is closed.
type syncGate struct {
	armed   chan struct{} // closed to arm the gate
	entered chan struct{} // closed by the sync that reached the gate
	open    chan struct{} // closed to let it go on
	once    sync.Once
}

// release lets the held sync go on; a test defers it after its store's
// Close, so that a failure does not leave Close waiting for the sync.
func (g *syncGate) release() { g.once.Do(func() { close(g.open) }) }

func newSyncGate(m *vfs.Mem) *syncGate {
	g := &syncGate{armed: make(chan struct{}), entered: make(chan struct{}), open: make(chan struct{})}
	m.SetFault(func(op vfs.Op, _ string) error {
		select {
		case <-g.armed:
		default:
			return nil
		}
		if op == vfs.OpSync {
			select {
			case <-g.entered:
			default:
				close(g.entered)
				<-g.open
			}
		}
		return nil
	})
	return g
}

// within fails the test if f does not return within a few seconds: the
// readers below must not wait for the sync the gate holds.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s waited for a sync in flight", what)
	}
}

// TestReadersDoNotWaitForSync: while a group commit's fsync is in flight,
// views open and close, scans start, and reads by revision and by time
// answer, each from the state published before that commit; the commit's
// writes appear once it returns. A drain that syncs under the store's
// write lock fails it.
func TestReadersDoNotWaitForSync(t *testing.T) {
	m := vfs.NewMem()
	g := newSyncGate(m)
	s, err := Open[string]("/db", StringCodec(), WithFS(m), WithSync(SyncAlways), WithMemory(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer g.release()
	for _, k := range []string{"a", "b", "c"} {
		if _, err := s.Put(k, "old"); err != nil {
			t.Fatal(err)
		}
	}
	// Two keys whose TTLs are due but not yet written into history: the
	// drain below writes their expiries, and writes t again.
	for _, k := range []string{"t", "u"} {
		if _, err := s.PutTTL(k, "old", time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Millisecond)
	if n := s.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	head := s.Rev()
	close(g.armed)
	wrote := make(chan error, 1)
	go func() {
		_, err := s.Update(func(tx *Txn[string]) error {
			for _, k := range []string{"a", "new", "t"} {
				if err := tx.Put(k, "new"); err != nil {
					return err
				}
			}
			return nil
		})
		wrote <- err
	}()
	<-g.entered
	within(t, "At, View.Get and View.Close", func() {
		v, err := s.At(head)
		if err != nil {
			t.Error(err)
			return
		}
		defer v.Close()
		if got, _ := v.Get("a"); got != "old" {
			t.Errorf("view at %d: a = %q, want old", head, got)
		}
		n := 0
		for range v.Scan("") {
			n++
		}
		if n != 5 { // At judges no expiry: t and u are there
			t.Errorf("view at %d scans %d keys, want 5", head, n)
		}
	})
	within(t, "Len", func() {
		if n := s.Len(); n != 3 {
			t.Errorf("Len while a commit syncs = %d, want 3", n)
		}
	})
	within(t, "At above the published head", func() {
		if _, err := s.At(head + 1); !errors.Is(err, ErrFutureRevision) {
			t.Errorf("At(%d) while its commit syncs: %v, want ErrFutureRevision", head+1, err)
		}
	})
	within(t, "AsOf and Latest", func() {
		v, err := s.AsOf(time.Now())
		if err != nil {
			t.Error(err)
			return
		}
		if v.Rev() != head {
			t.Errorf("AsOf(now) while a commit syncs is at %d, want the published head %d", v.Rev(), head)
		}
		v.Close()
		l := s.Latest()
		if l.Rev() != head {
			t.Errorf("Latest while a commit syncs is at %d, want %d", l.Rev(), head)
		}
		l.Close()
	})
	within(t, "Scan", func() {
		var keys []string
		for k, v := range s.Scan("") {
			if v != "old" {
				t.Errorf("Scan while a commit syncs: %s = %q, want old", k, v)
			}
			keys = append(keys, k)
		}
		if len(keys) != 3 {
			t.Errorf("Scan while a commit syncs: %v, want a b c", keys)
		}
	})
	within(t, "Diff", func() {
		for d, err := range s.Diff("", 0, head) {
			if err != nil {
				t.Error(err)
			} else if d.Key == "new" {
				t.Error("Diff while a commit syncs shows its key")
			}
		}
	})
	select {
	case err := <-wrote:
		t.Fatalf("the write returned (%v) before its sync", err)
	default:
	}
	g.release()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get("new"); v != "new" {
		t.Fatalf("after the sync, new = %q", v)
	}
}

// TestCapKeepsWhatAViewOpenedDuringSyncNeeds: the history cap counts its
// cut while a drain runs and makes it at publication; a view opened
// meanwhile, at the head before the drain, keeps the entry it reads.
func TestCapKeepsWhatAViewOpenedDuringSyncNeeds(t *testing.T) {
	m := vfs.NewMem()
	g := newSyncGate(m)
	s, err := Open[string]("/db", StringCodec(), WithFS(m), WithSync(SyncAlways), WithMemory(-1), WithMaxHistory(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer g.release()
	if _, err := s.Put("k", "v1"); err != nil {
		t.Fatal(err)
	}
	head := s.Rev()
	close(g.armed)
	wrote := make(chan error, 1)
	go func() {
		_, err := s.Update(func(tx *Txn[string]) error {
			if err := tx.Put("k", "v2"); err != nil {
				return err
			}
			return tx.Put("k", "v3") // three entries: over twice the cap
		})
		wrote <- err
	}()
	<-g.entered
	var v *View[string]
	within(t, "At", func() { v, err = s.At(head) })
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	g.release()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if got, ok := v.Get("k"); !ok || got != "v1" {
		t.Fatalf("view at %d after the capped drain: k = %q, %v; want v1", head, got, ok)
	}
	if got, _ := s.Get("k"); got != "v3" {
		t.Fatalf("k = %q, want v3", got)
	}
}
