package revkv_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
)

// TestCrashMidCompact: Compact logs its mark, then each key's cut as it
// walks the keys; a crash between them leaves the mark (the floor) and
// the keys not yet walked holding entries below it, as a View's pin or
// WithRetention's lazy trims leave them: History lists them (retained),
// every read at a revision answers as the compaction says, and the next
// Trim cuts them. Whatever of the compaction survives, the reopened store
// agrees with one that compacted whole at its floor, in memory or sealed.
func TestCrashMidCompact(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(fmt.Sprint("sealed=", sealed), func(t *testing.T) { crashMidCompact(t, sealed) })
	}
}

// crashMidCompact is TestCrashMidCompact, with the history below the
// compaction in memory, or sealed into a segment before it.
func crashMidCompact(t *testing.T, sealed bool) {
	const keys, revs, at = 6, 60, 40
	write := func(s *revkv.Store[string]) {
		for r := range revs {
			_, err := s.Put(fmt.Sprint("k", r%keys), fmt.Sprint(r))
			require.NoError(t, err)
		}
		if sealed {
			require.NoError(t, s.Checkpoint()) // seals revisions 1..60 (New's: a no-op)
		}
	}
	opts := []revkv.Option{revkv.WithSync(revkv.SyncAlways), revkv.WithMemory(-1)}
	if sealed {
		opts[1] = revkv.WithMemory(1 << 40) // seal at checkpoints alone
	}
	m := vfs.NewMem()
	s, err := revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(m))...)
	require.NoError(t, err)
	write(s)
	before := m.Ops()
	require.NoError(t, s.Compact(at))
	total := m.Ops() - before
	require.NoError(t, s.Close())
	uncut := revkv.New[string]()
	write(uncut)
	cut := revkv.New[string]()
	write(cut)
	require.NoError(t, cut.Compact(at))
	revsOf := func(es []revkv.Entry[string]) (rs []revkv.Revision) {
		for _, e := range es {
			rs = append(rs, e.Rev)
		}
		return rs
	}
	partial := 0
	for k := 0; k <= total; k++ {
		for seed := range uint64(8) {
			what := fmt.Sprintf("crash after operation %d of Compact's %d, seed %d", k, total, seed)
			m := vfs.NewMem()
			s, err := revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(m))...)
			require.NoError(t, err)
			write(s)
			m.CrashAfter(k, rand.New(rand.NewPCG(seed, uint64(k))))
			s.Compact(at)
			s.Close()
			crashed := m.Crashed()
			if crashed == nil {
				crashed = m.Crash(rand.New(rand.NewPCG(seed, uint64(k))))
			}
			s, err = revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(crashed))...)
			require.NoError(t, err, "%s: reopen", what)
			want := uncut
			if s.Floor() == at {
				want = cut
			}
			for i := range keys {
				key := fmt.Sprint("k", i)
				got, exp := revsOf(s.History(key)), revsOf(want.History(key))
				if len(got) > len(exp) {
					partial++
					require.Equal(t, exp, got[len(got)-len(exp):], "%s: History(%q) ends as the compaction leaves it", what, key)
					require.Less(t, got[len(got)-len(exp)-1], exp[0], "%s: History(%q): the rest is below it", what, key)
				} else {
					require.Equal(t, exp, got, "%s: History(%q) at floor %d", what, key, s.Floor())
				}
				for r := revkv.Revision(0); r <= revs; r++ {
					v, ok, err := s.GetAt(key, r)
					wv, wok, werr := want.GetAt(key, r)
					require.Equal(t, werr == nil, err == nil, "%s: GetAt(%q, %d): %v", what, key, r, err)
					require.Equal(t, wok, ok, "%s: GetAt(%q, %d)", what, key, r)
					require.Equal(t, wv, v, "%s: GetAt(%q, %d)", what, key, r)
				}
			}
			s.Trim()
			for i := range keys {
				key := fmt.Sprint("k", i)
				require.Equal(t, revsOf(want.History(key)), revsOf(s.History(key)), "%s: History(%q) after Trim", what, key)
			}
			require.NoError(t, s.Close())
		}
	}
	require.Positive(t, partial, "some crash left keys not yet walked")
	t.Logf("crashed after each of Compact's %d operations: %d keys left uncut", total, partial)
}
