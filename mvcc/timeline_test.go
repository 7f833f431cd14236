package mvcc

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTimelineModel checks a timeline against a plain slice over runs of
// pushes and front drops that cross many block boundaries, including drops
// of whole blocks at once and to exactly one time left; and that a frozen
// copy keeps what it held through the pushes and drops after it.
func TestTimelineModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var (
			tl   timeline
			ref  []instant
			next = instant{sec: -5, nsec: 999_999_998}
			// frozen copies of the last few steps, with what each held
			frozen []timeline
			held   [][]instant
		)
		check := func(step int) {
			require.Equal(t, int64(len(ref)), tl.len(), "step %d", step)
			for _, k := range []int{0, len(ref) / 2, len(ref) - 1, rng.IntN(len(ref))} {
				require.Equal(t, ref[k], tl.at(int64(k)), "step %d: at(%d)", step, k)
			}
			for range 4 {
				q := ref[rng.IntN(len(ref))]
				q.nsec += int32(rng.IntN(3)) - 1 // just before, at, or just after a held time
				want := sort.Search(len(ref), func(i int) bool { return ref[i].after(q) })
				require.Equal(t, int64(want), tl.search(q), "step %d: search(%v)", step, q)
			}
		}
		for step := range 400 {
			for range rng.IntN(3 * timeBlock) {
				if rng.IntN(4) > 0 { // times repeat, or move on by a nanosecond
					next.nsec++
					if next.nsec == 1e9 {
						next.sec, next.nsec = next.sec+1, 0
					}
				}
				tl.push(next)
				ref = append(ref, next)
			}
			if len(ref) == 0 {
				continue
			}
			check(step)
			for i, f := range frozen {
				require.Equal(t, int64(len(held[i])), f.len(), "step %d: frozen %d", step, i)
				for _, k := range []int{0, len(held[i]) - 1, rng.IntN(len(held[i])), rng.IntN(len(held[i]))} {
					require.Equal(t, held[i][k], f.at(int64(k)), "step %d: frozen %d at(%d)", step, i, k)
				}
			}
			frozen, held = append(frozen, tl.frozen()), append(held, slices.Clone(ref))
			if len(frozen) > 3 {
				frozen, held = frozen[1:], held[1:]
			}
			d := rng.IntN(len(ref)) // keeps at least one
			if rng.IntN(8) == 0 {
				d = len(ref) - 1
			}
			tl.dropFront(int64(d))
			ref = ref[d:]
			check(step)
			require.LessOrEqual(t, len(tl.blocks), int(tl.len()/timeBlock)+2, "step %d: blocks held stay proportional to times kept", step)
		}
	}
}

// BenchmarkTimelinePush is the cost per revision of recording its time.
func BenchmarkTimelinePush(b *testing.B) {
	var tl timeline
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tl.push(instant{sec: int64(i)})
	}
}
