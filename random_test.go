package revkv_test

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	randv2 "math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
)

var (
	seedFlag  = flag.Int64("seed", 0, "seed of the randomised model test (0: from the clock)")
	stepsFlag = flag.Int("steps", 3000, "steps per option set of the randomised model test")
)

var (
	testKeys     = []string{"a", "ab", "abc", "b", "c/1", "c/2", "c/3", "d"}
	testPrefixes = []string{"", "a", "ab", "c/", "c/2", "x"}
	epoch        = time.Date(2026, 11, 21, 14, 2, 0, 0, time.UTC)
)

// TestModel runs thousands of random operations against the store and the
// reference model, in each option set, and compares every answer after every
// step: revisions, values, errors, Entry fields, History, Scan order, Len,
// Floor, and the answers of open views. The clock sometimes stands still and
// sometimes goes back. Run with -seed=N to replay a failure, -steps=N to go
// longer.
func TestModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	sets := []struct {
		name       string
		maxHistory int
		retention  time.Duration
		memory     int64 // WithMemory, if not 0: on a directory, history is sealed
	}{
		{"none", 0, 0, 0},
		{"maxHistory", 3, 0, 0},
		{"retention", 0, 5 * time.Second, 0},
		{"both", 2, 4 * time.Second, 0},
		{"maxHistory1", 1, 0, 0},
		{"sealed", 0, 0, 1 << 10},
		{"sealed64k", 0, 0, 64 << 10},
	}
	memory := func(h *harness, m int64) {
		if m != 0 {
			h.opts = append(h.opts, revkv.WithMemory(m))
		}
	}
	for i, set := range sets {
		if set.memory != 0 {
			continue // a store made by New never seals: the same as "none"
		}
		t.Run(set.name, func(t *testing.T) {
			t.Parallel() // each set has its own store, directory and fake clock
			h := newHarness(t, seed+int64(i), set.maxHistory, set.retention)
			for h.n = 0; h.n < *stepsFlag; h.n++ {
				h.step()
				h.check(h.n%25 == 0)
			}
			h.closeAll()
		})
	}
	// The same on a directory (Open), with steps that close and reopen the
	// store, and that open a copy of its directory taken while it runs (a
	// crash: every acknowledged write must be there, and nothing else).
	for i, set := range sets {
		t.Run("open/"+set.name, func(t *testing.T) {
			t.Parallel() // each set has its own store, directory and fake clock
			h := newHarnessRand(t, rand.New(rand.NewSource(seed+int64(i)+100)), set.maxHistory, set.retention)
			memory(h, set.memory)
			h.makeDurable(t.TempDir(), i%2 == 0)
			for h.n = 0; h.n < *stepsFlag; h.n++ {
				h.step()
				h.check(h.n%25 == 0)
			}
			h.closeAll()
		})
	}
	// The same under SyncNever, where nothing is synced: a crash copy (what
	// a kill leaves) must still hold every acknowledged write.
	for i, set := range sets {
		t.Run("never/"+set.name, func(t *testing.T) {
			t.Parallel() // each set has its own store, directory and fake clock
			h := newHarnessRand(t, rand.New(rand.NewSource(seed+int64(i)+300)), set.maxHistory, set.retention)
			h.opts = append(h.opts, revkv.WithSync(revkv.SyncNever))
			memory(h, set.memory)
			h.makeDurable(t.TempDir(), i%2 == 1)
			// Half the steps: only how writes reach the file differs from
			// open/, and -race makes each set a quarter of CI's run.
			for h.n = 0; h.n < *stepsFlag/2; h.n++ {
				h.step()
				h.check(h.n%25 == 0)
			}
			h.closeAll()
		})
	}
	// The same on an in-memory file system, where a crash is a power cut:
	// what was not synced is lost, part of it may survive, and it may come
	// in the middle of a checkpoint.
	for i, set := range sets {
		t.Run("mem/"+set.name, func(t *testing.T) {
			t.Parallel() // each set has its own store, directory and fake clock
			h := newHarnessRand(t, rand.New(rand.NewSource(seed+int64(i)+200)), set.maxHistory, set.retention)
			h.fs = vfs.NewMem()
			h.opts = append(h.opts, revkv.WithFS(h.fs))
			memory(h, set.memory)
			h.makeDurable("/db", i%2 == 1)
			for h.n = 0; h.n < *stepsFlag; h.n++ {
				h.step()
				h.check(h.n%25 == 0)
			}
			h.closeAll()
		})
	}
}

type harness struct {
	dir   string         // the store's directory, if it was opened there
	fs    *vfs.Mem       // the file system it is on, if in memory
	opts  []revkv.Option // the options it was made with
	t     *testing.T
	rng   *rand.Rand
	clock *manualClock
	s     *revkv.Store[int]
	m     *model
	views []hview
	// watches are live Watches, checked after every step (watch_model_test.go).
	watches []*hwatch
	trace   []string // the last operations, printed on failure
	n       int      // step number
}

type hview struct {
	sv *revkv.View[int]
	mv *mView
}

func newHarness(t *testing.T, seed int64, maxHistory int, retention time.Duration) *harness {
	return newHarnessRand(t, rand.New(rand.NewSource(seed)), maxHistory, retention)
}

func newHarnessRand(t *testing.T, rng *rand.Rand, maxHistory int, retention time.Duration) *harness {
	clock := newClock(epoch)
	opts := []revkv.Option{revkv.WithClock(clock.Now)}
	if maxHistory > 0 {
		opts = append(opts, revkv.WithMaxHistory(maxHistory))
	}
	if retention > 0 {
		opts = append(opts, revkv.WithRetention(retention))
	}
	return &harness{
		t: t, rng: rng, clock: clock, opts: opts,
		s: revkv.New[int](opts...), m: newModel(clock, maxHistory, retention),
	}
}

// makeDurable replaces the harness's empty store with one on dir; small
// says to checkpoint every few kilobytes, so that snapshots are taken and
// loaded often.
func (h *harness) makeDurable(dir string, small bool) {
	require.NoError(h.t, h.s.Close())
	h.dir = dir
	if small {
		h.opts = append(h.opts, revkv.WithCheckpointBytes(4<<10))
	}
	h.s = h.open(dir)
}

func (h *harness) open(dir string) *revkv.Store[int] {
	s, err := revkv.Open(dir, revkv.JSONCodec[int](), h.opts...)
	require.NoError(h.t, err, "%s", h)
	return s
}

// reopen closes the store and opens its directory again: every answer must
// be as before (the model is unchanged but for the views, which close).
func (h *harness) reopen() {
	h.did("Close() and Open()")
	h.pullWatches()
	h.stopWatches()
	for _, v := range h.views {
		h.m.CloseView(v.mv)
		v.sv.Close()
	}
	h.views = nil
	require.NoError(h.t, h.s.Close())
	h.s = h.open(h.dir)
	h.m.removedFloor = max(h.m.compactRev-1, 0)
	h.check(true)
}

// crashCopy copies the directory of the running store, as a crash would
// leave it (every acknowledged write is synced), opens the copy and checks
// it against the model, then goes on with the original.
func (h *harness) crashCopy() {
	if h.fs != nil {
		h.powerCut()
		return
	}
	h.did("crash copy")
	dir := h.t.TempDir()
	release := revkv.HoldCheckpoints(h.s) // a crash is one instant: no checkpoint half seen
	defer release()
	des, err := os.ReadDir(h.dir)
	require.NoError(h.t, err)
	for _, de := range des {
		if de.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(h.dir, de.Name()))
		require.NoError(h.t, err)
		require.NoError(h.t, os.WriteFile(filepath.Join(dir, de.Name()), b, 0o644))
	}
	orig, views := h.s, h.views
	h.s, h.views = h.open(dir), nil
	pins, floor := h.m.pins, h.m.removedFloor
	h.m.pins, h.m.removedFloor = map[int64]int{}, max(h.m.compactRev-1, 0)
	h.check(true)
	require.NoError(h.t, h.s.Close())
	h.s, h.views, h.m.pins, h.m.removedFloor = orig, views, pins, floor
}

// powerCut opens what a power cut would leave of the in-memory file system
// (synced bytes, and a random part of what was not), checks it against the
// model, and goes on with the original. Under SyncAlways every
// acknowledged write was synced, so nothing may be missing.
func (h *harness) powerCut() {
	h.did("power cut")
	crashed := h.fs.Crash(randv2.New(randv2.NewPCG(uint64(h.rng.Int63()), 0)))
	orig, views := h.s, h.views
	s, err := revkv.Open(h.dir, revkv.JSONCodec[int](), append(h.opts, revkv.WithFS(crashed))...)
	require.NoError(h.t, err, "%s\n%s", h, crashed)
	h.s, h.views = s, nil
	pins, floor := h.m.pins, h.m.removedFloor
	h.m.pins, h.m.removedFloor = map[int64]int{}, max(h.m.compactRev-1, 0)
	h.check(true)
	require.NoError(h.t, h.s.Close())
	h.s, h.views, h.m.pins, h.m.removedFloor = orig, views, pins, floor
}

// String prints the recent operations; testify calls it only on failure.
func (h *harness) String() string {
	return fmt.Sprintf("step %d, rev %d, last operations:\n  %s", h.n, h.m.rev(), strings.Join(h.trace, "\n  "))
}

func (h *harness) did(format string, args ...any) {
	h.trace = append(h.trace, fmt.Sprintf(format, args...))
	if len(h.trace) > 40 {
		h.trace = h.trace[1:]
	}
}

// eq and sameErr compare cheaply and call testify only on a mismatch: they
// run hundreds of thousands of times, and t.Helper walks the stack.
func (h *harness) eq(want, got any, what string) {
	if reflect.DeepEqual(want, got) {
		return
	}
	h.t.Helper()
	require.Equal(h.t, want, got, "%s\n%s", what, h)
}

func (h *harness) sameErr(want, got error, what string) {
	if sameErr(got, want) {
		return
	}
	h.t.Helper()
	require.Fail(h.t, "wrong error", "%s: want error %v, got %v\n%s", what, want, got, h)
}

func (h *harness) key() string { return testKeys[h.rng.Intn(len(testKeys))] }

func (h *harness) ttl() time.Duration {
	switch r := h.rng.Intn(20); {
	case r == 0:
		return -time.Duration(h.rng.Intn(3)) // 0 or negative
	case r == 1:
		return math.MaxInt64 // past what Unix nanoseconds hold
	case r == 2:
		return 1 // 1ns
	default:
		return time.Duration(1+h.rng.Intn(4000)) * time.Millisecond
	}
}

// expiresAt picks an absolute expiry time: mostly a TTL's worth after the
// clock (which may be behind the store's now), sometimes exactly the store's
// now, the last instant Unix nanoseconds hold, or one past it.
func (h *harness) expiresAt() time.Time {
	switch r := h.rng.Intn(20); {
	case r == 0:
		return h.m.now() // not after now: refused
	case r == 1:
		return maxNanos
	case r == 2:
		return maxNanos.Add(1)
	case r == 3:
		return h.m.now().Add(1).In(time.FixedZone("east", 3600)) // its location is not kept
	default:
		return h.clock.Now().Add(h.ttl())
	}
}

func (h *harness) moveClock() {
	switch r := h.rng.Intn(20); {
	case r < 4: // stand still
	case r < 6:
		h.clock.Add(-time.Duration(h.rng.Int63n(int64(2 * time.Second))))
	case r < 10:
		h.clock.Add(time.Duration(h.rng.Int63n(int64(3 * time.Millisecond))))
	case r < 11:
		h.clock.Add(10 * time.Second)
	default:
		h.clock.Add(time.Duration(h.rng.Int63n(int64(800 * time.Millisecond))))
	}
}

// rev picks a revision around the interesting range, edges included.
func (h *harness) rev() revkv.Revision {
	top := h.m.rev()
	switch h.rng.Intn(6) {
	case 0:
		return revkv.Revision(h.rng.Int63n(3) - 1) // -1, 0, 1
	case 1:
		return revkv.Revision(top + h.rng.Int63n(3)) // the latest and just beyond
	default:
		return revkv.Revision(h.rng.Int63n(top + 1))
	}
}

// when picks a time around the revisions' times, edges included.
func (h *harness) when() time.Time {
	now := h.m.now()
	switch r := h.rng.Intn(10); {
	case r == 0:
		return now
	case r == 1:
		return now.Add(1) // the future
	case r == 2:
		return time.Time{}
	case r == 3 || h.m.rev() == 0:
		return epoch.Add(-time.Duration(h.rng.Intn(3)))
	default:
		e := h.m.at(1 + h.rng.Int63n(h.m.rev()))
		return e.time.Add(time.Duration(h.rng.Intn(3)-1) * time.Duration(1+h.rng.Intn(2)*int(time.Millisecond)))
	}
}

func (h *harness) writeResult(what string, wantRev revkv.Revision, wantErr error, gotRev revkv.Revision, gotErr error) {
	h.did("%s → %d %v", what, wantRev, wantErr)
	h.sameErr(wantErr, gotErr, what)
	h.eq(wantRev, gotRev, what+": revision")
}

func (h *harness) step() {
	h.moveClock()
	k, v := h.key(), h.rng.Intn(1000)
	switch op := h.rng.Intn(110); {
	case op >= 108:
		if h.dir == "" {
			h.update()
		} else if op == 108 {
			h.reopen()
		} else {
			h.crashCopy()
		}
	case op >= 100 && op < 104:
		switch r := h.rng.Intn(4); {
		case r == 0 && len(h.watches) < 4:
			h.openWatch()
		case r == 1:
			h.closeWatch()
		default:
			h.changes()
		}
	case op >= 100:
		h.update()
	case op < 14:
		wr, we := h.m.Put(k, v)
		gr, ge := h.s.Put(k, v)
		h.writeResult(fmt.Sprintf("Put(%q, %d) at %v", k, v, h.clock.Now()), wr, we, gr, ge)
	case op < 22:
		d := h.ttl()
		wr, we := h.m.PutTTL(k, v, d)
		gr, ge := h.s.PutTTL(k, v, d)
		h.writeResult(fmt.Sprintf("PutTTL(%q, %d, %v) at %v", k, v, d, h.clock.Now()), wr, we, gr, ge)
	case op < 26:
		at := h.expiresAt()
		wr, we := h.m.PutExpiresAt(k, v, at)
		gr, ge := h.s.PutExpiresAt(k, v, at)
		h.writeResult(fmt.Sprintf("PutExpiresAt(%q, %d, %v) at %v", k, v, at, h.clock.Now()), wr, we, gr, ge)
	case op < 32:
		mod := h.rev()
		if e, ok := h.m.latest(k); ok && h.rng.Intn(2) == 0 {
			mod = revkv.Revision(e.rev)
		}
		wr, we := h.m.CompareAndPut(k, mod, v)
		gr, ge := h.s.CompareAndPut(k, mod, v)
		h.writeResult(fmt.Sprintf("CompareAndPut(%q, %d, %d)", k, mod, v), wr, we, gr, ge)
	case op < 38:
		wr, we := h.m.Delete(k)
		gr, ge := h.s.Delete(k)
		h.writeResult(fmt.Sprintf("Delete(%q)", k), wr, we, gr, ge)
	case op < 41:
		d := h.ttl()
		wr, we := h.m.Expire(k, d)
		gr, ge := h.s.Expire(k, d)
		h.writeResult(fmt.Sprintf("Expire(%q, %v)", k, d), wr, we, gr, ge)
	case op < 43:
		at := h.expiresAt()
		wr, we := h.m.ExpireAt(k, at)
		gr, ge := h.s.ExpireAt(k, at)
		h.writeResult(fmt.Sprintf("ExpireAt(%q, %v) at %v", k, at, h.clock.Now()), wr, we, gr, ge)
	case op < 47:
		wr, we := h.m.Persist(k)
		gr, ge := h.s.Persist(k)
		h.writeResult(fmt.Sprintf("Persist(%q)", k), wr, we, gr, ge)
	case op < 55:
		r := h.rev()
		h.did("GetAt(%q, %d)", k, r)
		h.getAt(k, r)
	case op < 63:
		at := h.when()
		h.did("GetAsOf(%q, %v)", k, at)
		h.getAsOf(k, at)
	case op < 67:
		p := testPrefixes[h.rng.Intn(len(testPrefixes))]
		h.did("Scan(%q)", p)
		h.eq(h.m.Scan(p), collect(h.s.Scan(p)), fmt.Sprintf("Scan(%q)", p))
	case op < 68:
		h.did("History(%q)", k)
		h.eq(h.m.History(k), h.s.History(k), fmt.Sprintf("History(%q)", k))
	case op < 70:
		h.historyRange(k)
	case op < 74:
		h.openView()
	case op < 78:
		h.closeView()
	case op < 82:
		h.scanWhileWriting()
	case op < 86:
		h.did("PurgeExpired()")
		h.eq(h.m.PurgeExpired(), h.s.PurgeExpired(), "PurgeExpired()")
	case op < 91:
		h.did("Trim()")
		h.eq(h.m.Trim(), h.s.Trim(), "Trim()")
	case op < 96:
		r := revkv.Revision(h.m.rev() - h.rng.Int63n(12))
		if h.rng.Intn(5) == 0 {
			r = h.rev()
		}
		h.did("Compact(%d)", r)
		h.sameErr(h.m.Compact(r), h.s.Compact(r), fmt.Sprintf("Compact(%d)", r))
	default:
		h.did("TTL(%q)", k)
		wd, we := h.m.TTL(k)
		gd, ge := h.s.TTL(k)
		h.sameErr(we, ge, "TTL")
		h.eq(wd, gd, "TTL")
	}
}

// historyRange compares HistoryRange over a random range, its errors by
// sentinel and by the revision they name.
func (h *harness) historyRange(k string) {
	top := h.m.rev()
	from := revkv.Revision(h.rng.Int63n(top+3) - 1)
	to := revkv.Revision(h.rng.Int63n(top+3) - 1)
	if h.rng.Intn(3) == 0 {
		to = 0
	}
	h.did("HistoryRange(%q, %d, %d)", k, from, to)
	what := fmt.Sprintf("HistoryRange(%q, %d, %d)", k, from, to)
	wes, werrs := h.m.HistoryRange(k, from, to)
	var ges []revkv.Entry[int]
	var gerrs []error
	for e, err := range h.s.HistoryRange(k, from, to) {
		ges, gerrs = append(ges, e), append(gerrs, err)
	}
	h.eq(wes, ges, what)
	h.eq(len(werrs), len(gerrs), what+": errors")
	for i, werr := range werrs {
		var w, g *revkv.OpError
		if !errors.As(werr, &w) {
			h.sameErr(werr, gerrs[i], what)
			continue
		}
		h.sameErr(w.Err, gerrs[i], what)
		require.True(h.t, errors.As(gerrs[i], &g), "%s: %v is not an *OpError", what, gerrs[i])
		h.eq(w.Rev, g.Rev, what+": the revision the error names")
	}
}

// closeAll closes the store and checks what contract §6 says of a closed store.
func (h *harness) closeAll() {
	h.pullWatches()
	h.stopWatches()
	require.NoError(h.t, h.s.Close())
	require.NoError(h.t, h.s.Close(), "second Close")
	h.m.Close()
	h.did("Close()")
	k := h.key()
	_, err := h.s.Put(k, 1)
	h.sameErr(revkv.ErrClosed, err, "Put after Close")
	_, err = h.s.Delete(k)
	h.sameErr(revkv.ErrClosed, err, "Delete after Close")
	h.sameErr(revkv.ErrClosed, h.s.Compact(h.s.Rev()), "Compact after Close")
	h.eq(0, h.s.PurgeExpired(), "PurgeExpired after Close")
	h.eq(0, h.s.Trim(), "Trim after Close")
	h.check(true) // reads still answer, and the same
	for _, v := range h.views {
		h.m.CloseView(v.mv)
		v.sv.Close()
	}
	h.views = nil
	if h.dir != "" { // and once more after opening the directory again
		h.s = h.open(h.dir)
		h.m.removedFloor = max(h.m.compactRev-1, 0)
		h.m.closed = false
		h.check(true)
		require.NoError(h.t, h.s.Close())
	}
}
