// Package trimmer is revkv's background trimmer: every tick it samples keys at
// random and trims those over their caps, the way Redis's active expiry cycle
// samples keys with a TTL. It knows nothing of how a key's history is stored;
// it works through the two-method Target.
package trimmer

import (
	"math/rand/v2"
	"time"
)

// Target is what the trimmer works on: keys held in slots 0..n-1, in no
// particular order.
type Target[K any] interface {
	// Slot returns the key in slot i mod n, in O(1), or false if there are
	// no keys. A random i samples a key uniformly; consecutive i sweep them.
	Slot(i uint64) (K, bool)
	// Trim trims one key, holding no lock across keys, and reports whether
	// it had anything to drop.
	Trim(key K) bool
}

// Config sets a Trimmer's pace.
type Config struct {
	Interval time.Duration // between ticks
	Sample   int           // keys per sample (Redis samples 20)
	// Budget bounds one tick's work; the default is a quarter of Interval,
	// as Redis keeps its active cycle to 25% of a tick.
	Budget time.Duration
	// Rounds bounds the samples of one tick, so a tick ends even where the
	// clock does not move (testing/synctest). Default 1024.
	Rounds int
}

// Trimmer samples and trims a Target.
type Trimmer[K any] struct {
	target Target[K]
	cfg    Config
	// Used only by the goroutine running Run or Tick:
	rng    *rand.Rand
	cursor uint64 // the next slot of the sweep
}

// New returns a trimmer of target. rng may be nil (then it is seeded at
// random); tests pass a seeded one.
func New[K any](target Target[K], cfg Config, rng *rand.Rand) *Trimmer[K] {
	if cfg.Sample <= 0 {
		cfg.Sample = 20
	}
	if cfg.Budget <= 0 {
		cfg.Budget = cfg.Interval / 4
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 1024
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Trimmer[K]{target: target, cfg: cfg, rng: rng}
}

// Run ticks every Interval until stop is closed.
func (t *Trimmer[K]) Run(stop <-chan struct{}) {
	tick := time.NewTicker(t.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			t.Tick()
		}
	}
}

// Stats is what one tick did.
type Stats struct {
	Sampled, Trimmed int
}

// Tick first sweeps the next Sample slots in order, so that while no key is
// removed (a removal moves the last key into the freed slot) every key is
// visited within ceil(n/Sample) ticks, whatever the luck of the draw. Then it samples Sample keys at random and trims them; while more than
// a quarter of a sample needed work, it samples again at once, until the
// budget or the rounds run out.
func (t *Trimmer[K]) Tick() Stats {
	deadline := time.Now().Add(t.cfg.Budget)
	sampled, trimmed := t.round(func() uint64 { t.cursor++; return t.cursor - 1 })
	st := Stats{Sampled: sampled, Trimmed: trimmed}
	for round := 0; round < t.cfg.Rounds && time.Now().Before(deadline); round++ {
		sampled, trimmed := t.round(t.rng.Uint64)
		st.Sampled += sampled
		st.Trimmed += trimmed
		if sampled == 0 || trimmed*4 <= sampled {
			break
		}
	}
	return st
}

// round trims the keys of Sample slots chosen by next.
func (t *Trimmer[K]) round(next func() uint64) (sampled, trimmed int) {
	for range t.cfg.Sample {
		k, ok := t.target.Slot(next())
		if !ok {
			break
		}
		sampled++
		if t.target.Trim(k) {
			trimmed++
		}
	}
	return sampled, trimmed
}
