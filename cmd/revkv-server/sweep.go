package main

import (
	"strings"
	"time"

	"github.com/revkv/revkv"
)

// An expired collection's metadata entry goes at its ExpiresAt, in one
// entry of history; its elements, which no read can reach any more (reads
// start at the metadata), are deleted afterwards by the sweeper, a few
// thousand an Update, so that a cache of expiring hashes does not grow
// for ever. To find them it keeps an owner record per generation,
// internal + 0x00 + generation -> the key, written when the collection is
// created and when RENAME moves it, deleted with its elements: a
// generation whose key no longer holds it (expired, or overwritten by a
// SET) is swept. Generations never start with 0x00 (newGen), so no owner
// record is an element's key.

func ownerKey(gen string) string { return internal + "\x00" + gen }

// sweepEvery is how often the sweeper looks for generations to sweep.
const sweepEvery = time.Second

// sweepBatch bounds the deletes of one Update of the sweeper.
const sweepBatch = 2000

// sweeper sweeps until the server shuts down.
func (s *server) sweeper() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.blocking.closed:
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// sweep deletes the elements of every generation its key no longer holds.
func (s *server) sweep() int {
	var stale []string
	p := ownerKey("")
	for k, v := range s.store.Ascend(p) {
		if !strings.HasPrefix(k, p) {
			break
		}
		if gen := k[len(p):]; !holds(s.store, string(v), gen) {
			stale = append(stale, gen)
		}
	}
	n := 0
	for _, gen := range stale {
		select {
		case <-s.blocking.closed: // shutting down: the rest waits for the next start
			return n
		default:
		}
		for more := true; more; {
			deleted := 0
			_, err := s.store.Update(func(tx *revkv.Txn[[]byte]) error {
				owner, ok := tx.Get(ownerKey(gen))
				if !ok || holds(tx, string(owner), gen) { // moved or swept meanwhile
					more = false
					return nil
				}
				var keys []string
				for k := range tx.Ascend(internal + gen) {
					if !strings.HasPrefix(k, internal+gen) || len(keys) == sweepBatch {
						break
					}
					keys = append(keys, k)
				}
				for _, k := range keys {
					tx.Delete(k)
				}
				deleted = len(keys)
				if more = len(keys) == sweepBatch; !more {
					tx.Delete(ownerKey(gen))
				}
				return nil
			})
			if err != nil { // a closed store, or one that cannot write: nothing to sweep with
				return n
			}
			n += deleted
		}
	}
	return n
}

// holds reports whether key's live value is a collection of generation gen.
func holds(r interface {
	Get(string) ([]byte, bool)
}, key, gen string) bool {
	v, ok := r.Get(key)
	return ok && isMeta(v) && string(v[len(metaMagic)+1:len(metaMagic)+9]) == gen
}
