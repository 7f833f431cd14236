package revkv_test

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/revkv/revkv/segment"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
	"github.com/revkv/revkv/wal"
)

// faultAt returns an in-memory file system whose nth operation of kind op
// fails, and the error it fails with: ENOSPC for a write (which is then
// short), EIO for the rest.
func faultAt(op vfs.Op, nth int) (*vfs.Mem, error) {
	injected := error(syscall.EIO)
	if op == vfs.OpWrite {
		injected = syscall.ENOSPC
	}
	m := vfs.NewMem()
	seen := 0
	m.SetFault(func(o vfs.Op, _ string) error {
		if o == op {
			if seen++; seen == nth {
				return injected
			}
		}
		return nil
	})
	return m, injected
}

// faultWorkload writes TestCrash's revisions (single Puts and Updates of
// three keys, each value naming its batch's first revision) with a
// checkpoint every 40 steps and one every ~2 KiB of log, and returns the
// last revision acknowledged. A write that fails must fail every write
// after it with the same cause, and be invisible; a checkpoint that fails
// must leave the store writing.
func faultWorkload(t *testing.T, s *revkv.Store[string], injected error) (acked int64, failed bool) {
	for i := range 160 {
		if i%40 == 39 {
			if err := s.Checkpoint(); err != nil {
				require.True(t, errors.Is(err, injected), "checkpoint: %v", err)
			}
			continue
		}
		before := s.Rev()
		rev, err := writeNext(s, i%5 == 0)
		if err != nil {
			require.True(t, errors.Is(err, injected), "write: %v", err)
			require.Equal(t, before, s.Rev(), "a failed write is invisible")
			_, again := s.Put("k0", "after")
			require.True(t, errors.Is(again, injected), "every later write fails with the same cause: %v", again)
			return acked, true
		}
		acked = int64(rev)
	}
	return acked, false
}

// TestFaults fails each kind of file operation at each of its occurrences
// in turn (a write is then short: half of it reaches the file), crashes the
// file system, and reopens it: every acknowledged revision is there, and
// the history is exactly revisions 1..Rev() as written — a prefix, never a
// wrong answer. ENOSPC for writes, EIO for the rest.
func TestFaults(t *testing.T) {
	ops := []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpCreate, vfs.OpRename, vfs.OpSyncDir, vfs.OpRemove, vfs.OpTruncate, vfs.OpOpen}
	// Count each operation in a run without faults, to know where to inject.
	counts := map[vfs.Op]int{}
	{
		m := vfs.NewMem()
		m.SetFault(func(op vfs.Op, _ string) error { counts[op]++; return nil })
		s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithCheckpointBytes(2<<10))
		require.NoError(t, err)
		faultWorkload(t, s, nil)
		require.NoError(t, s.Close())
	}
	t.Logf("operations in a run: %v", counts)
	for _, op := range ops {
		step := max(1, counts[op]/60)
		runs := 0
		for nth := 1; nth <= counts[op]+1; nth += step {
			runs++
			m, injected := faultAt(op, nth)
			what := fmt.Sprintf("%v #%d", op, nth)
			var acked int64
			s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithCheckpointBytes(2<<10))
			if err != nil {
				require.True(t, errors.Is(err, injected), "%s: Open: %v", what, err)
			} else {
				var failed bool
				acked, failed = faultWorkload(t, s, injected)
				cerr := s.Close()
				if failed {
					require.True(t, errors.Is(cerr, injected), "%s: Close returns the failure: %v", what, cerr)
				}
			}
			m.SetFault(nil)
			crashed := m.Crash(rand.New(rand.NewPCG(uint64(nth), uint64(op))))
			s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(crashed))
			require.NoError(t, err, "%s: reopen after the crash\n%s", what, crashed)
			require.GreaterOrEqual(t, int64(s.Rev()), acked, "%s: every acknowledged revision survives", what)
			checkCrashHistory(t, s)
			require.NoError(t, s.Close())
		}
		t.Logf("%v: %d runs", op, runs)
	}
}

// TestSyncIntervalLoss: under SyncInterval a power cut loses at most the
// writes of the last WithSyncInterval. In a synctest bubble time moves
// only when every goroutine waits, so the syncer's ticks fall exactly
// every interval and each sync covers every write made before its tick,
// however loaded the machine: a writer writes a revision every
// millisecond, the file system crashes at a random instant, and every
// revision acknowledged more than one interval before the crash must be
// there; the rest, a prefix. Nothing is synced but by the syncer, so a
// syncer that never ran, or ran late, loses some of them and fails.
func TestSyncIntervalLoss(t *testing.T) {
	const interval = 20 * time.Millisecond
	for seed := range uint64(5) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			m := vfs.NewMem()
			s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithSync(revkv.SyncInterval), revkv.WithSyncInterval(interval))
			require.NoError(t, err)
			var acks []time.Time // acks[r-1]: when revision r was acknowledged
			for range 100 + rng.IntN(200) {
				next := int64(s.Rev()) + 1
				_, err := s.Put(crashKey(next), fmt.Sprint(next))
				require.NoError(t, err)
				acks = append(acks, time.Now())
				time.Sleep(time.Millisecond)
			}
			at := time.Now()
			crashed := m.Crash(nil)
			require.NoError(t, s.Close())
			s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(crashed))
			require.NoError(t, err)
			defer s.Close()
			checkCrashHistory(t, s)
			kept := int(s.Rev())
			for r, ack := range acks {
				if at.Sub(ack) > interval {
					require.Greater(t, kept, r, "revision %d, acknowledged %v before the crash, is lost", r+1, at.Sub(ack))
				}
			}
			t.Logf("%d written, %d kept; lost the last %v", len(acks), kept, at.Sub(acks[min(kept, len(acks)-1)]))
		})
	}
}

// TestLockedAcrossProcesses: a directory open in this process is ErrLocked
// to another process, and free once closed.
func TestLockedAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("REVKV_LOCK_CHILD"); dir != "" {
		s, err := revkv.Open(dir, revkv.StringCodec())
		switch {
		case errors.Is(err, revkv.ErrLocked):
			fmt.Println("locked:", err)
		case err != nil:
			fmt.Println("error:", err)
		default:
			fmt.Println("opened")
			s.Close()
		}
		return
	}
	dir := t.TempDir()
	child := func() string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockedAcrossProcesses$", "-test.v=false")
		cmd.Env = append(os.Environ(), "REVKV_LOCK_CHILD="+dir)
		out, err := cmd.Output()
		require.NoError(t, err)
		return strings.SplitN(string(out), "\n", 2)[0]
	}
	s, err := revkv.Open(dir, revkv.StringCodec())
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("locked: revkv: open %q: directory is locked by another store", dir), child())
	require.NoError(t, s.Close())
	require.Equal(t, "opened", child())
}

// failThenOpen opens a copy of base whose op fails with EIO (on the file
// named only, unless only is ""), checks that Open returns that error,
// then opens it again without the fault, and returns the copy and the
// store, which holds the 20 revisions of storeOf20.
func failThenOpen(t *testing.T, base *vfs.Mem, op vfs.Op, only string) (*vfs.Mem, *revkv.Store[string]) {
	t.Helper()
	m := base.Crash(nil)
	m.SetFault(func(o vfs.Op, name string) error {
		if o == op && (only == "" || name == only) {
			return syscall.EIO
		}
		return nil
	})
	_, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m))
	require.ErrorIs(t, err, syscall.EIO, "%v", op)
	m.SetFault(nil)
	s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m))
	require.NoError(t, err, "%v: the next Open", op)
	require.Equal(t, revkv.Revision(20), s.Rev(), "%v", op)
	return m, s
}

// TestFaultsDuringOpen: Open meets a failing operation while it recovers
// (opening the last segment, cutting its torn tail, syncing the cut): it
// returns the error, and a later Open without the fault recovers every
// revision written.
func TestFaultsDuringOpen(t *testing.T) {
	base, s := storeOf20(t)
	require.NoError(t, s.Close())
	seg := lastSegment(t, base, "/db")
	base.WriteFile(seg, append(base.Bytes(seg), 0x40, 0, 0)) // a torn last record
	for _, op := range []vfs.Op{vfs.OpOpen, vfs.OpTruncate, vfs.OpSync} {
		_, s := failThenOpen(t, base, op, "")
		checkCrashHistory(t, s)
		require.NoError(t, s.Close())
	}
}

// TestTornTailCutSynced: Open cuts a torn last record and syncs the cut
// before anything is written after it. Otherwise a power cut could keep
// records written after the cut but not the cut, and the rest of the torn
// record, showing through after them, would read as damage. Under
// SyncNever (nothing synced after the write), over crashes of every shape,
// the directory opens with revisions 1..20 or 1..21.
func TestTornTailCutSynced(t *testing.T) {
	base, s := storeOf20(t)
	require.NoError(t, s.Close())
	seg := lastSegment(t, base, "/db")
	// A record of 4,000 bytes torn after 1,000: its payload is 0xff bytes,
	// a record length no record can have.
	torn := append([]byte{0xa0, 0x0f, 0, 0, 1, 2, 3, 4}, bytes.Repeat([]byte{0xff}, 1000)...)
	base.WriteFile(seg, append(base.Bytes(seg), torn...))
	for seed := range uint64(20) {
		m := base.Crash(nil)
		s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithSync(revkv.SyncNever))
		require.NoError(t, err)
		_, err = s.Put(crashKey(21), "21")
		require.NoError(t, err)
		crashed := m.Crash(rand.New(rand.NewPCG(seed, 4)))
		require.NoError(t, s.Close())
		s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(crashed))
		require.NoError(t, err, "seed %d", seed)
		require.GreaterOrEqual(t, s.Rev(), revkv.Revision(20))
		checkCrashHistory(t, s)
		require.NoError(t, s.Close())
	}
}

// TestShortSegmentRestarted: a last segment shorter than its header (a
// crash while it was created) is started again by Open; a failure to cut
// it or to write its header is Open's error, and the next Open without
// the fault recovers every revision and goes on writing.
func TestShortSegmentRestarted(t *testing.T) {
	base, s := storeOf20(t)
	require.NoError(t, s.Checkpoint()) // the last segment is now empty
	require.NoError(t, s.Close())
	seg := lastSegment(t, base, "/db")
	base.WriteFile(seg, base.Bytes(seg)[:3])
	for _, op := range []vfs.Op{vfs.OpTruncate, vfs.OpWrite} {
		m, s := failThenOpen(t, base, op, seg)
		_, err := s.Put(crashKey(21), "21")
		require.NoError(t, err)
		require.NoError(t, s.Close())
		s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m.Crash(nil)))
		require.NoError(t, err, "%v: after a power cut", op)
		require.Equal(t, revkv.Revision(21), s.Rev(), "%v", op)
		checkCrashHistory(t, s)
		require.NoError(t, s.Close())
	}
}

// TestCheckpointRemovalsDurable: once Checkpoint returns, what it deleted
// stays deleted through a power cut: the directory holds the new snapshot
// and the segments after it, never the older files (history a Compact let
// go of, and the space it freed, come back otherwise).
func TestCheckpointRemovalsDurable(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		m := vfs.NewMem()
		opts := []revkv.Option{revkv.WithFS(m), revkv.WithMemory(-1)}
		if sealed {
			opts = opts[:1] // the default: each checkpoint seals
		}
		s, err := revkv.Open("/db", revkv.StringCodec(), opts...)
		require.NoError(t, err)
		var segs []string // the segments seals wrote
		for round := range 3 {
			first := int64(s.Rev()) + 1
			for range 20 {
				next := int64(s.Rev()) + 1
				_, err := s.Put(crashKey(next), fmt.Sprint(next))
				require.NoError(t, err)
			}
			require.NoError(t, s.Checkpoint())
			names, err := m.Crash(nil).List("/db")
			require.NoError(t, err)
			want := []string{wal.SnapshotName(int64(s.Rev())), wal.SegmentName(int64(s.Rev()) + 1)}
			if sealed {
				segs = append(segs, segment.Ref{First: first, Last: int64(s.Rev())}.Name())
				want = append(append(slices.Clone(segs), want...), segment.ManifestName)
			}
			require.Equal(t, want, names, "sealed %v, round %d", sealed, round)
		}
		require.NoError(t, s.Close())
	}
}

// lastSegment returns the path of dir's last log segment.
func lastSegment(t *testing.T, m *vfs.Mem, dir string) string {
	names, err := m.List(dir)
	require.NoError(t, err)
	var seg string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			seg = dir + "/" + n
		}
	}
	require.NotEmpty(t, seg)
	return seg
}

// killed returns what a killed process would leave of m: every byte
// written, synced or not (the operating system outlives the process).
func killed(t *testing.T, m *vfs.Mem, dir string) *vfs.Mem {
	c := vfs.NewMem()
	names, err := m.List(dir)
	require.NoError(t, err)
	require.NoError(t, c.MkdirAll(dir))
	for _, n := range names {
		if n != "LOCK" {
			c.WriteFile(dir+"/"+n, m.Bytes(dir+"/"+n))
		}
	}
	return c
}

// TestWrittenBeforeReturn: in every sync mode a write returns only once its
// record is in the operating system's hands, so a process killed right
// after it keeps it: no Sync, Checkpoint or Close, and no background
// goroutine (the interval is an hour) is needed. A store opened on what
// the kill left after each write holds exactly the revisions written.
func TestWrittenBeforeReturn(t *testing.T) {
	for _, mode := range []revkv.SyncMode{revkv.SyncAlways, revkv.SyncInterval, revkv.SyncNever} {
		m := vfs.NewMem()
		s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithSync(mode), revkv.WithSyncInterval(time.Hour))
		require.NoError(t, err)
		for i := range 40 {
			_, err = writeNext(s, i%4 == 0)
			require.NoError(t, err)
			c, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(killed(t, m, "/db")))
			require.NoError(t, err)
			require.Equal(t, s.Rev(), c.Rev(), "mode %d: the last write is in the OS's hands when it returns", mode)
			checkCrashHistory(t, c)
			require.NoError(t, c.Close())
		}
		require.NoError(t, s.Close())
	}
}

// TestAsyncFaults is TestFaults under SyncNever and SyncInterval, where a
// write returns before its record is synced: a failed write fails that
// write, a failed sync (the syncer's, under SyncInterval, or Sync's) stops
// every later write with its cause, Sync and Close return it, and a power
// cut afterwards leaves a prefix holding everything the last successful
// Sync covered. Every run meets its
// fault, in Open or after: the workload makes more than 12 writes and syncs.
func TestAsyncFaults(t *testing.T) {
	for _, mode := range []revkv.SyncMode{revkv.SyncNever, revkv.SyncInterval} {
		for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync} {
			failed := 0
			for nth := 1; nth <= 12; nth++ {
				what := fmt.Sprintf("mode %d, %v #%d", mode, op, nth)
				m, injected := faultAt(op, nth)
				s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithSync(mode), revkv.WithSyncInterval(time.Millisecond))
				if err != nil {
					require.True(t, errors.Is(err, injected), "%s: Open: %v", what, err)
					failed++
					continue
				}
				var synced int64
				var failure error
				for i := 0; i < 400 && failure == nil; i++ {
					next := int64(s.Rev()) + 1
					if _, err := s.Put(crashKey(next), fmt.Sprint(next)); err != nil {
						failure = err
						break
					}
					if i%25 == 24 {
						rev := int64(s.Rev())
						if err := s.Sync(); err != nil {
							failure = err
						} else {
							synced = rev
						}
					}
				}
				if failure != nil {
					failed++
					require.True(t, errors.Is(failure, injected), "%s: %v", what, failure)
					_, again := s.Put("k0", "after")
					require.True(t, errors.Is(again, injected), "%s: every later write fails with the same cause: %v", what, again)
					require.True(t, errors.Is(s.Sync(), injected), "%s: Sync returns the failure", what)
				}
				cerr := s.Close()
				require.Equal(t, failure != nil, cerr != nil, "%s: Close returns the failure: %v", what, cerr)
				m.SetFault(nil)
				crashed := m.Crash(rand.New(rand.NewPCG(uint64(nth), uint64(op))))
				s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(crashed))
				require.NoError(t, err, "%s: reopen after the crash", what)
				require.GreaterOrEqual(t, int64(s.Rev()), synced, "%s: what Sync covered survives", what)
				checkCrashHistory(t, s)
				require.NoError(t, s.Close())
			}
			require.Equal(t, 12, failed, "mode %d, %v: every injected fault stopped the writes", mode, op)
		}
	}
}

// TestCrashAtEveryOperation crashes the file system between every two of
// its operations in turn, over a workload of single Puts, Updates and
// checkpoints (each rotating the log to a new segment, writing a snapshot
// aside, renaming it into place and removing what it covers), Open's own
// operations included. After each crash the directory must open with the
// revisions 1..r as written, r at least every revision acknowledged under
// SyncAlways. Each point is crashed three times: keeping nothing
// unsynced, and twice keeping a random part of it (a prefix of each file's
// unsynced bytes, each unsynced directory change or not, an unsynced
// truncation undone or not). Under SyncNever, nothing is
// promised at a power cut but the prefix.
func TestCrashAtEveryOperation(t *testing.T) {
	for _, run := range []struct {
		mode   revkv.SyncMode
		sealed bool // checkpoints seal: crashes land in segments and manifests too
	}{{revkv.SyncAlways, false}, {revkv.SyncNever, false}, {revkv.SyncAlways, true}} {
		t.Run(fmt.Sprintf("mode=%d/sealed=%v", run.mode, run.sealed), func(t *testing.T) {
			t.Parallel() // each run has its own file systems: two at once
			crashAtEveryOperation(t, run.mode, run.sealed)
		})
	}
}

func crashAtEveryOperation(t *testing.T, mode revkv.SyncMode, sealed bool) {
	opts := []revkv.Option{revkv.WithSync(mode), revkv.WithMemory(-1)}
	if sealed {
		opts[1] = revkv.WithMemory(1 << 40) // seal at the workload's own checkpoints and Close alone
	}
	// Count the operations of a run without a crash.
	m := vfs.NewMem()
	s, err := revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(m))...)
	require.NoError(t, err)
	faultWorkload(t, s, nil)
	require.NoError(t, s.Close())
	total := m.Ops()
	for k := 0; k <= total; k++ {
		for _, seed := range []uint64{0, 2*uint64(k) + 1, 2*uint64(k) + 2} {
			var rng *rand.Rand
			if seed != 0 {
				rng = rand.New(rand.NewPCG(seed, uint64(mode)))
			}
			what := fmt.Sprintf("mode %d, crash after operation %d of %d, seed %d", mode, k, total, seed)
			m := vfs.NewMem()
			m.CrashAfter(k, rng)
			var acked int64
			s, err := revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(m))...)
			if err != nil {
				require.ErrorIs(t, err, vfs.ErrCrashed, "%s: Open", what)
			} else {
				acked, _ = faultWorkload(t, s, vfs.ErrCrashed)
				s.Close()
			}
			crashed := m.Crashed()
			if crashed == nil { // after the last operation
				require.Equal(t, total, k, "%s: the crash struck", what)
				crashed = m.Crash(rng)
			}
			s, err = revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(crashed))...)
			require.NoError(t, err, "%s: reopen\n%s", what, crashed)
			if mode == revkv.SyncAlways {
				require.GreaterOrEqual(t, int64(s.Rev()), acked, "%s: every acknowledged revision survives", what)
			}
			checkCrashHistory(t, s)
			require.NoError(t, s.Close())
		}
	}
	t.Logf("mode %d, sealed %v: crashed after each of %d operations", mode, sealed, total)
}

// storeOf20 opens a store on a new in-memory file system and writes
// revisions 1..20 (crashKey(r) = r), leaving it open.
func storeOf20(t *testing.T) (*vfs.Mem, *revkv.Store[string]) {
	t.Helper()
	m := vfs.NewMem()
	s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m))
	require.NoError(t, err)
	for r := int64(1); r <= 20; r++ {
		_, err := s.Put(crashKey(r), fmt.Sprint(r))
		require.NoError(t, err)
	}
	return m, s
}
