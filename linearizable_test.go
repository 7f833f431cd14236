package revkv_test

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// The keys of the linearizability test: few, so that operations collide.
const linKeys = 3

type linOp uint8

const (
	linPut linOp = iota
	linPutTTL
	linGet
	linGetEntry
	linDelete
	linCompareAndPut
	linUpdate // one Update: puts value under key and under the next key
	linView   // a View at Rev(): every key's value
	linOps    // how many ops there are
)

type linInput struct {
	op     linOp
	key    int
	value  int
	modRev int64
}

type linOutput struct {
	rev   int64 // of a write, or of the entry GetEntry read
	err   string
	value int
	ok    bool
	ttl   bool // GetEntry: the entry has an expiry time
	vals  [linKeys]int
	oks   [linKeys]bool // linView: each key's value and whether it exists
}

type linKey struct {
	exists bool
	value  int
	rev    int64
	ttl    bool
}

// linState is the contract's sequential store, reduced to what these operations see.
// It is a comparable value, so porcupine's default equality works.
type linState struct {
	rev  int64
	keys [linKeys]linKey
}

func linStep(state, input, output any) (bool, any) {
	s, in, out := state.(linState), input.(linInput), output.(linOutput)
	k := s.keys[in.key]
	wrote := func(next linKey) (bool, any) {
		if out.err != "" || out.rev != s.rev+1 { // a write takes exactly the next revision
			return false, s
		}
		s.rev++
		next.rev = s.rev
		s.keys[in.key] = next
		return true, s
	}
	switch in.op {
	case linPut:
		return wrote(linKey{exists: true, value: in.value})
	case linPutTTL:
		return wrote(linKey{exists: true, value: in.value, ttl: true})
	case linGet:
		return out.ok == k.exists && (!k.exists || out.value == k.value), s
	case linGetEntry:
		return out.ok == k.exists && (!k.exists || (out.value == k.value && out.rev == k.rev && out.ttl == k.ttl)), s
	case linDelete:
		if !k.exists {
			return out.err == "not found", s
		}
		return wrote(linKey{})
	case linCompareAndPut:
		if (in.modRev == 0 && k.exists) || (in.modRev != 0 && (!k.exists || k.rev != in.modRev)) {
			return out.err == "conflict", s
		}
		return wrote(linKey{exists: true, value: in.value})
	case linUpdate: // two revisions, published together
		if out.err != "" || out.rev != s.rev+2 {
			return false, s
		}
		s.keys[in.key] = linKey{exists: true, value: in.value, rev: s.rev + 1}
		s.keys[(in.key+1)%linKeys] = linKey{exists: true, value: in.value, rev: s.rev + 2}
		s.rev += 2
		return true, s
	case linView:
		for i, k := range s.keys {
			if out.oks[i] != k.exists || k.exists && out.vals[i] != k.value {
				return false, s
			}
		}
		return out.rev == s.rev, s
	}
	return false, s
}

var linModel = porcupine.Model{
	Init: func() any { return linState{} },
	Step: linStep,
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		names := []string{"Put", "PutTTL", "Get", "GetEntry", "Delete", "CompareAndPut", "Update", "View"}
		return fmt.Sprintf("%s(k%d, v=%d, mod=%d) → rev=%d v=%d ok=%v ttl=%v %v %v %s",
			names[in.op], in.key, in.value, in.modRev, out.rev, out.value, out.ok, out.ttl, out.vals, out.oks, out.err)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%+v", state.(linState)) },
}

// linRun applies one operation to the store and reports what it answered.
func linRun(s *revkv.Store[int], in linInput) linOutput {
	key := fmt.Sprint("k", in.key)
	var (
		out linOutput
		rev revkv.Revision
		err error
	)
	switch in.op {
	case linPut:
		rev, err = s.Put(key, in.value)
	case linPutTTL:
		rev, err = s.PutTTL(key, in.value, time.Hour) // long: nothing expires during the run
	case linGet:
		out.value, out.ok = s.Get(key)
	case linGetEntry:
		e, ok := s.GetEntry(key)
		out.value, out.ok, out.rev, out.ttl = e.Value, ok, int64(e.Rev), !e.ExpiresAt.IsZero()
	case linDelete:
		rev, err = s.Delete(key)
	case linCompareAndPut:
		rev, err = s.CompareAndPut(key, revkv.Revision(in.modRev), in.value)
	case linUpdate:
		rev, err = s.Update(func(tx *revkv.Txn[int]) error {
			if err := tx.Put(key, in.value); err != nil {
				return err
			}
			return tx.Put(fmt.Sprint("k", (in.key+1)%linKeys), in.value)
		})
	case linView:
		v, verr := s.At(s.Rev())
		if verr != nil {
			err = verr
			break
		}
		for i := range linKeys {
			out.vals[i], out.oks[i] = v.Get(fmt.Sprint("k", i))
		}
		rev = v.Rev()
		v.Close()
	}
	switch {
	case errors.Is(err, revkv.ErrNotFound):
		out.err = "not found"
	case errors.Is(err, revkv.ErrConflict):
		out.err = "conflict"
	case err != nil:
		out.err = err.Error()
	}
	if in.op != linGetEntry {
		out.rev = int64(rev)
	}
	return out
}

// recordHistory runs clients goroutines of ops operations each on s and
// returns the history, timestamped by one counter that every call and return
// advances, so that real-time order is kept.
func recordHistory(s *revkv.Store[int], seed int64, clients, ops int) []porcupine.Operation {
	var (
		clock   atomic.Int64
		mu      sync.Mutex // guards history
		history []porcupine.Operation
		wg      sync.WaitGroup
	)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed*100 + int64(c)))
			var lastRev int64
			for range ops {
				in := linInput{op: linOp(rng.Intn(int(linOps))), key: rng.Intn(linKeys), value: rng.Intn(1000)}
				if in.op == linCompareAndPut {
					switch rng.Intn(3) {
					case 0: // create only if missing
					case 1:
						in.modRev = lastRev // often current, sometimes stale
					default:
						in.modRev = lastRev - int64(rng.Intn(3))
					}
				}
				call := clock.Add(1)
				out := linRun(s, in)
				ret := clock.Add(1)
				if out.rev > 0 {
					lastRev = out.rev
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return history
}

// TestLinearizable records concurrent histories of Put, PutTTL, Get,
// GetEntry, Delete, CompareAndPut, an Update of two keys (one operation of
// two revisions) and a View of every key, on three keys from four goroutines, and
// checks them with porcupine against the contract's sequential model, in which every
// write takes exactly the next revision. On failure it writes porcupine's
// visualisation to a file and prints its path.
func TestLinearizable(t *testing.T) {
	runs, ops := 6, 800
	if testing.Short() {
		runs, ops = 2, 400
	}
	for seed := range int64(runs) {
		s := revkv.New[int]()
		history := recordHistory(s, seed, 4, ops)
		require.NoError(t, s.Close())
		res, info := porcupine.CheckOperationsVerbose(linModel, history, 30*time.Second)
		if res != porcupine.Ok {
			path := filepath.Join(os.TempDir(), fmt.Sprintf("revkv-linearizability-%d.html", seed))
			if err := porcupine.VisualizePath(linModel, info, path); err != nil {
				t.Logf("writing the visualisation: %v", err)
			}
			t.Fatalf("seed %d: history of %d operations is %s; visualisation: %s", seed, len(history), res, path)
		}
	}
}
