package segment

import (
	"io"
	"sync"
)

// Cache bounds the memory the indexes of its readers hold together. A
// reader's index is loaded by the first question that needs it and kept;
// when the loaded indexes pass the budget, the cache lets go of those
// asked least lately, by the clock algorithm: a hand walks the loaded
// readers, passing over (and clearing the mark of) each that a question
// used since the hand last passed, and letting go of the first it finds
// unmarked. A reader whose index was let go reads it again when next
// asked. The index just loaded is always kept, so that a budget smaller
// than one index still answers, at the price of a read of the index per
// question. Safe for concurrent use.
type Cache struct {
	budget int64
	// mu guards the fields below. A reader's mu is taken before it, never
	// after (admit runs under the reader's).
	mu     sync.Mutex
	loaded []*Reader // the readers whose index counts against the budget
	held   int64     // the bytes of their indexes
	hand   int       // the clock's hand, an index of loaded
}

// NewCache returns a cache that keeps its readers' indexes to about
// budget bytes together (budget < 0: no bound).
func NewCache(budget int64) *Cache { return &Cache{budget: budget} }

// Open reads and checks the header and footer of the segment r of size
// bytes, as OpenFooter does, for a reader whose index counts against c.
func (c *Cache) Open(r io.ReaderAt, size int64) (*Reader, error) {
	sr, err := OpenFooter(r, size)
	if err != nil {
		return nil, err
	}
	sr.cache = c
	return sr, nil
}

// Held returns the bytes the loaded indexes hold, and how many there are.
func (c *Cache) Held() (bytes int64, indexes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held, len(c.loaded)
}

// admit counts sr's newly loaded index ix, then lets others go until the
// cache is within its budget. Called with sr.mu held, after sr.ix was set
// to ix.
//
// Invariant: a reader is in loaded exactly when its ix is set, but
// between index's store and this call; held is the sum of their indexes'
// bytes.
func (c *Cache) admit(sr *Reader, ix *index) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sr.forgotten {
		// The question that loaded it goes on with it; the next loads
		// one of its own, as a stream does.
		sr.ix.Store(nil)
		return
	}
	sr.used.Store(true)
	c.loaded = append(c.loaded, sr)
	c.held += ix.bytes
	if c.budget < 0 {
		return
	}
	// Each pass of the hand clears the marks it passes, so the second
	// pass finds an unmarked reader, unless questions mark them again as
	// fast: past two passes, the hand lets go of the one it is at.
	for steps := 0; c.held > c.budget && len(c.loaded) > 1; steps++ {
		if c.hand >= len(c.loaded) {
			c.hand = 0
		}
		switch v := c.loaded[c.hand]; {
		case v == sr:
			c.hand++
		case v.used.Swap(false) && steps < 2*len(c.loaded):
			c.hand++
		default:
			c.drop(c.hand)
		}
	}
}

// Forget lets go of sr's index now, and keeps none of it after: the store
// no longer reads the segment (a merge replaced it). A question still
// reading it loads an index of its own.
func (c *Cache) Forget(sr *Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sr.forgotten = true
	for i, v := range c.loaded {
		if v == sr {
			c.drop(i)
			return
		}
	}
}

// drop lets go of the index of loaded[i]. Called with c.mu held.
func (c *Cache) drop(i int) {
	v := c.loaded[i]
	if ix := v.ix.Swap(nil); ix != nil {
		c.held -= ix.bytes
	}
	last := len(c.loaded) - 1
	c.loaded[i] = c.loaded[last]
	c.loaded[last] = nil
	c.loaded = c.loaded[:last]
}
