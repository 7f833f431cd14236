package trimmer

import (
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// over is a fake target: key i is over its cap while over[i].
type over struct {
	mu      sync.Mutex // guards over and sampled: the test reads them while Run trims
	over    []bool
	sampled int
}

func (o *over) Slot(i uint64) (int, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.over) == 0 {
		return 0, false
	}
	o.sampled++
	return int(i % uint64(len(o.over))), true
}

func (o *over) Trim(i int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	was := o.over[i]
	o.over[i] = false
	return was
}

func (o *over) left() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, b := range o.over {
		if b {
			n++
		}
	}
	return n
}

func fill(n int) *over {
	o := &over{over: make([]bool, n)}
	for i := range o.over {
		o.over[i] = true
	}
	return o
}

func TestTickResamplesWhileWorkIsFound(t *testing.T) {
	o := fill(1000)
	tr := New[int](o, Config{Interval: time.Second, Sample: 20, Budget: time.Hour}, rand.New(rand.NewPCG(1, 2)))
	st := tr.Tick()
	require.Greater(t, st.Sampled, 40, "more than a quarter needed work: it sampled again")
	require.Equal(t, 1000-o.left(), st.Trimmed)
	// It stopped once a sample found a quarter or less needing work, before
	// the budget (an hour) ran out and with keys still over their caps.
	require.Positive(t, o.left())
}

func TestTickStopsWhenLittleWork(t *testing.T) {
	o := &over{over: make([]bool, 1000)} // nothing over the caps
	tr := New[int](o, Config{Interval: time.Second, Sample: 20}, rand.New(rand.NewPCG(1, 2)))
	st := tr.Tick()
	require.Equal(t, Stats{Sampled: 40}, st, "the sweep and one sample, then stop")
}

func TestTickBoundedByRounds(t *testing.T) {
	o := fill(1 << 20)
	tr := New[int](o, Config{Interval: time.Second, Sample: 10, Budget: time.Hour, Rounds: 3}, rand.New(rand.NewPCG(1, 2)))
	require.Equal(t, 10+30, tr.Tick().Sampled, "the sweep and three rounds")
}

func TestEmptyTarget(t *testing.T) {
	tr := New[int](&over{}, Config{Interval: time.Second}, nil)
	require.Equal(t, Stats{}, tr.Tick())
}

// Every key comes under its cap within ceil(n/Sample) ticks, thanks to the
// sweep, whatever the random draws.
func TestRunConverges(t *testing.T) {
	for seed := range uint64(50) {
		synctest.Test(t, func(t *testing.T) {
			o := fill(300)
			tr := New[int](o, Config{Interval: 100 * time.Millisecond, Sample: 20}, rand.New(rand.NewPCG(seed, 4)))
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { tr.Run(stop); close(done) }()
			ticks := 0
			for o.left() > 0 {
				time.Sleep(100 * time.Millisecond)
				synctest.Wait()
				ticks++
				require.LessOrEqual(t, ticks, 300/20, "every key trimmed within n/Sample ticks")
			}
			close(stop)
			<-done
		})
	}
}

// The sweep visits the slots in order, wrapping around.
func TestSweep(t *testing.T) {
	o := &over{over: make([]bool, 7)}
	var visited []int
	tr := New[int](recorder{o, &visited}, Config{Interval: time.Second, Sample: 3}, rand.New(rand.NewPCG(1, 2)))
	tr.Tick()
	tr.Tick()
	tr.Tick()
	var swept []int
	for i := 0; i < len(visited); i += 6 { // each tick: 3 swept, then 3 random
		swept = append(swept, visited[i:i+3]...)
	}
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 0, 1}, swept)
}

type recorder struct {
	*over
	visited *[]int
}

func (r recorder) Trim(i int) bool {
	*r.visited = append(*r.visited, i)
	return r.over.Trim(i)
}
