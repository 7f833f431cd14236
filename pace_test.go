package revkv

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

// TestBackgroundYields: each of a store's long background loops (a seal's
// entries, a snapshot's keys, a merge's entries) gives the processor up as
// it goes, so that a writer it woke need not wait for the rest of it
// (pace). It fails if any of them stops calling step.
func TestBackgroundYields(t *testing.T) {
	var mu sync.Mutex // guards seen: a background checkpoint may yield beside Checkpoint
	seen := map[string]int{}
	hook := func() {
		mu.Lock()
		defer mu.Unlock()
		pc := make([]uintptr, 8)
		for _, f := range framesOf(pc[:runtime.Callers(2, pc)]) {
			for _, loop := range []string{"sealRange", "writeSnapshot", "mergeEntries"} {
				if strings.Contains(f, "."+loop) {
					seen[loop]++
				}
			}
		}
	}
	yieldHook.Store(&hook)
	defer yieldHook.Store(nil)
	// Every checkpoint seals; a few segments make a merge.
	s, err := Open("/db", StringCodec(), WithFS(vfs.NewMem()), WithSync(SyncNever), WithMemory(1<<40))
	require.NoError(t, err)
	for i := range 12 {
		for k := range 4 * paceEvery { // more keys than a stretch
			_, err := s.Put(fmt.Sprint("k", k), fmt.Sprint(i))
			require.NoError(t, err)
		}
		require.NoError(t, s.Checkpoint())
	}
	require.NoError(t, s.Close())
	mu.Lock()
	defer mu.Unlock()
	for _, loop := range []string{"sealRange", "writeSnapshot", "mergeEntries"} {
		require.Positive(t, seen[loop], "%s never yields: %v", loop, seen)
	}
}

func framesOf(pc []uintptr) []string {
	var names []string
	frames := runtime.CallersFrames(pc)
	for {
		f, more := frames.Next()
		names = append(names, f.Function)
		if !more {
			return names
		}
	}
}
