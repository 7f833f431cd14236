package revkv

import "time"

// durability is what a store keeps besides its memory, and how write calls
// reach the write lock. The commit path (commit.go) and the upkeep
// (compact.go) call it at fixed points and never ask which one they have:
//
//   - memory, for New: write calls take the write lock themselves, commits
//     publish at once, and nothing is logged;
//   - *disk, for Open: write calls queue for a group commit, commits are
//     logged and published once their records are written (group.go);
//   - replay, while Open replays the log: nothing is logged again.
//
// record, committed, cap, pending, trimmed and compacted run under the
// write lock; release and abandon are called holding it and let it go;
// quiesce is called before it is taken, resume after it is let go; the
// others take it themselves or need not.
type durability[V any] interface {
	// write runs one write call (writeLocked) under the write lock.
	write(s *state[V], key string, x expiry, op writeOp[V]) (rev Revision, cur int64, err error)
	// acquire returns holding the write lock, for a caller that runs its
	// own code under it (Update's fn, a purge batch), or returns the
	// failure that stopped the store's writes. The caller hands back what
	// its code returned with release, which returns the call's results;
	// or, if its code panicked, it calls abandon and lets the panic go on.
	acquire(s *state[V]) (*request[V], error)
	release(s *state[V], r *request[V], rev Revision, err error) (Revision, error)
	abandon(s *state[V], r *request[V])

	// record logs cs, about to be committed as revisions first... at time
	// t; an error (a value the codec cannot encode) stops the commit.
	record(s *state[V], cs []change[V], first int64, t time.Time) error
	// committed publishes a commit's revisions (publishLocked), now or
	// with the rest of its group.
	committed(s *state[V], cs []change[V])
	// cap cuts kl, which a commit took over twice WithMaxHistory, back to
	// the cap (trimKeyLocked), now or when the commit is published.
	cap(s *state[V], kl *keyLog[V])
	// pending returns the log of key if a commit not yet published created
	// it (the tree has it already; the index not yet).
	pending(key string) *keyLog[V]

	// trimmed logs that kl's log now starts at its first entry (or, if
	// removed, that the key is gone); count says a count trim raised
	// Floor with it. compacted logs a compaction at rev with time t.
	trimmed(s *state[V], kl *keyLog[V], removed, count bool)
	// hideSealed hides kl's sealed entries that a compaction at cut drops
	// (all below the one visible at cut): the tier says which they are
	// (seal.go). It returns how many it hid while a Trim counts them,
	// else 1 if it hid any (the trimmer asks whether a key was trimmed).
	hideSealed(s *state[V], kl *keyLog[V], cut int64) int
	compacted(s *state[V], rev int64, t time.Time)
	// forget lets the hash chain go of the digests below the new floor
	// that no kept entry needs (publishFloorLocked).
	forget(s *state[V], floor int64)
	// forgetNotes lets go of the annotations at the front that the new
	// floor leaves no kept entry of (forgetNotesLocked); replay keeps
	// them until the sweep after it.
	forgetNotes(s *state[V], floor int64)
	// swept follows a walk of Compact or Trim over every key, under the
	// write lock: what forget kept for the entries it dropped can go.
	swept(s *state[V])
	// quiesce waits for the group commit in flight, if any, and keeps the
	// next one from starting until resume. A drain writes and syncs its
	// records with the write lock let go, its commits applied to the keys'
	// logs but not yet published (group.go): what changes history outside
	// a drain (compaction, trims, seals, checkpoints, Close), and the few
	// readers of what a drain changes before it publishes (Len, Export),
	// take the write lock between quiesce and resume (lockQuiet).
	quiesce()
	resume()
	// unpublishedLocked returns what a drain's unpublished commits added
	// to liveKeys and to the expiries due at now (Len); 0, 0 but while a
	// drain writes and syncs.
	unpublishedLocked(s *state[V], now int64) (live, due int)
	// upkept makes the compactions and trims logged so far durable, where
	// the sync mode says writes are durable when they return.
	upkept() error

	// err returns the failure that stopped the store's writes, if any.
	err() error
	// sync makes everything written so far durable (Store.Sync).
	sync() error
	// start starts durability's own goroutines and reports whether it did.
	start(s *state[V]) bool
	// close ends durability once the store is closed to writes.
	close(s *state[V]) error
}

// memory is the durability of a store made by New: none.
type memory[V any] struct{}

func (memory[V]) write(s *state[V], key string, x expiry, op writeOp[V]) (Revision, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(key, &x, &op)
}

func (memory[V]) acquire(s *state[V]) (*request[V], error) {
	s.mu.Lock()
	return nil, nil
}

func (memory[V]) release(s *state[V], _ *request[V], rev Revision, err error) (Revision, error) {
	s.mu.Unlock()
	return rev, err
}

func (memory[V]) abandon(s *state[V], _ *request[V]) { s.mu.Unlock() }

func (memory[V]) record(*state[V], []change[V], int64, time.Time) error { return nil }
func (memory[V]) committed(s *state[V], cs []change[V])                 { s.publishLocked(cs) }
func (memory[V]) cap(s *state[V], kl *keyLog[V])                        { s.trimKeyLocked(kl) }
func (memory[V]) pending(string) *keyLog[V]                             { return nil }
func (memory[V]) trimmed(*state[V], *keyLog[V], bool, bool)             {}
func (memory[V]) hideSealed(*state[V], *keyLog[V], int64) int           { return 0 }
func (memory[V]) compacted(*state[V], int64, time.Time)                 {}
func (memory[V]) forget(*state[V], int64)                               {}
func (memory[V]) forgetNotes(s *state[V], floor int64)                  { s.forgetNotesLocked(floor) }
func (memory[V]) swept(*state[V])                                       {}
func (memory[V]) quiesce()                                              {}
func (memory[V]) resume()                                               {}
func (memory[V]) unpublishedLocked(*state[V], int64) (int, int)         { return 0, 0 }
func (memory[V]) upkept() error                                         { return nil }
func (memory[V]) err() error                                            { return nil }
func (memory[V]) sync() error                                           { return nil }
func (memory[V]) start(*state[V]) bool                                  { return false }
func (memory[V]) close(*state[V]) error                                 { return nil }
