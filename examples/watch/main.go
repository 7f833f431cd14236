// Watch follows a store as it changes: a cache that mirrors everything
// under config/, and a session tracker that prints each session's expiry as
// it happens, at the exact time it was due.
//
//	go run ./examples/watch
package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/revkv/revkv"
)

func main() {
	// The expirer writes expiries within 10 ms of their time, so that
	// watchers see them as they happen, not at the next write.
	s := revkv.New[string](revkv.WithExpiryInterval(10 * time.Millisecond))
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup

	// A cache of config/, kept up to date from revision 1: history first,
	// then every change as it is committed.
	var (
		mu    sync.Mutex // guards cache and seen
		cache = map[string]string{}
		seen  revkv.Revision
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e, err := range s.Watch(ctx, "config/", 1) {
			if err != nil {
				return // ctx cancelled: the program is ending
			}
			mu.Lock()
			if e.Op == revkv.OpPut {
				cache[e.Key] = e.Value
			} else {
				delete(cache, e.Key)
			}
			seen = e.Rev
			mu.Unlock()
		}
	}()

	// A session tracker: only what happens from now on.
	expired := make(chan string)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e, err := range s.Watch(ctx, "session/", 0) {
			if err != nil {
				return
			}
			switch e.Op {
			case revkv.OpPut:
				fmt.Printf("session %-12s opened for %v\n", e.Key, e.ExpiresAt.Sub(e.Time).Round(time.Millisecond))
			case revkv.OpExpire:
				late := time.Since(e.Time).Round(time.Millisecond)
				fmt.Printf("session %-12s expired at its exact time (seen %v later)\n", e.Key, late)
				expired <- e.Key
			}
		}
	}()
	time.Sleep(10 * time.Millisecond) // let the tracker start from the current revision

	s.Put("config/limits/api", "100")
	s.Put("config/db/pool", "20")
	s.PutTTL("session/alice", "web", 50*time.Millisecond)
	s.PutTTL("session/bob", "cli", 80*time.Millisecond)
	last, _ := s.Update(func(tx *revkv.Txn[string]) error {
		tx.Put("config/limits/api", "250")
		return tx.Delete("config/db/pool")
	})
	<-expired
	<-expired

	for {
		mu.Lock()
		done := seen >= last
		mu.Unlock()
		if done {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	fmt.Println("the cache of config/ at revision", seen, "holds", cache)
	mu.Unlock()
	cancel()
	wg.Wait()
}
