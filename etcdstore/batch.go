package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
)

// Group commit: the store's single-key write calls (Put, Delete, ...) that
// arrive while a commit is in flight wait in a queue, and the next commit
// carries all of them, each as its own revision, as one etcd transaction.
// Writers of one store so share round trips instead of racing each other
// for the head. One of the waiting callers leads: it commits batches until
// its own write is done, then hands the lead to the first caller still
// waiting. No goroutine is started for it.

// writeReq is one write call waiting for a commit.
type writeReq[V any] struct {
	ctx   context.Context
	key   string
	reads bool                  // the write reads the key's latest entry (not Put, PutTTL, PutExpiresAt)
	check func(now int64) error // refuses the write at its time before anything is written
	fn    func(*Txn[V]) error
	rev   int64
	err   error
	done  chan struct{} // closed when rev and err are set
	lead  chan struct{} // closed when this caller is to lead
}

// submit queues req and waits for its commit, leading when it is its turn.
func (s *Store[V]) submit(req *writeReq[V]) (int64, error) {
	s.batchMu.Lock()
	s.queue = append(s.queue, req)
	first := !s.leading
	s.leading = true
	s.batchMu.Unlock()
	if first {
		close(req.lead)
	}
	for {
		select {
		case <-req.done:
			return req.rev, req.err
		case <-req.lead:
			s.lead(req)
			req.lead = nil // led: wait for done only
		case <-req.ctx.Done():
			if s.withdraw(req) {
				return 0, req.ctx.Err() // nothing was sent
			}
			select {
			case <-req.done: // it was answered meanwhile
				return req.rev, req.err
			default: // in a commit in flight: the call ends with its ctx
				return 0, fmt.Errorf("%w (the write was sent: it may or may not be committed)", req.ctx.Err())
			}
		}
	}
}

// withdraw takes req out of the queue if no commit has taken it yet.
func (s *Store[V]) withdraw(req *writeReq[V]) bool {
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	for i, r := range s.queue {
		if r == req {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			if req.lead != nil && s.isLeadClosed(req) {
				s.handOffLocked()
			}
			return true
		}
	}
	return false
}

func (s *Store[V]) isLeadClosed(req *writeReq[V]) bool {
	select {
	case <-req.lead:
		return true
	default:
		return false
	}
}

// lead commits batches from the queue until own is done, then hands the
// lead over. If own's ctx ends while a batch is in flight, lead returns at
// once (own's call ends with its ctx); the batch goes on, carried by a
// goroutine that hands the lead over when it is done. Close waits for it.
func (s *Store[V]) lead(own *writeReq[V]) {
	for {
		s.batchMu.Lock()
		n := min(len(s.queue), s.maxBatch())
		batch := append([]*writeReq[V](nil), s.queue[:n]...)
		s.queue = append(s.queue[:0], s.queue[n:]...)
		if len(batch) == 0 {
			s.leading = false
			s.batchMu.Unlock()
			return
		}
		s.batchMu.Unlock()
		if own.ctx.Done() == nil { // own's call cannot end early: no goroutine needed
			s.commitBatch(batch)
			if s.handOffIfDone(own) {
				return
			}
			continue
		}
		committed := make(chan struct{})
		commit := func() {
			s.commitBatch(batch)
			close(committed)
		}
		if !s.spawn(commit) {
			commit() // closed: the batch fails at once with ErrClosed
		}
		select {
		case <-committed:
		case <-own.ctx.Done():
			handOff := func() {
				<-committed
				s.batchMu.Lock()
				s.handOffLocked()
				s.batchMu.Unlock()
			}
			if !s.spawn(handOff) {
				handOff()
			}
			return
		}
		if s.handOffIfDone(own) {
			return
		}
	}
}

// handOffIfDone hands the lead over if own's write is done.
func (s *Store[V]) handOffIfDone(own *writeReq[V]) bool {
	select {
	case <-own.done:
		s.batchMu.Lock()
		s.handOffLocked()
		s.batchMu.Unlock()
		return true
	default:
		return false
	}
}

// handOffLocked gives the lead to the first waiting caller, or ends it.
func (s *Store[V]) handOffLocked() {
	if len(s.queue) == 0 {
		s.leading = false
		return
	}
	close(s.queue[0].lead)
}

// maxBatch is how many writes one commit carries: about four etcd
// operations each, after room for the expiries and the commit's rows.
func (s *Store[V]) maxBatch() int {
	return max(1, (s.opts.maxTxnOps-16-4*s.expiryBatch())/4)
}

// commitBatch commits the writes of batch in one transaction and tells each
// caller its outcome. A batch the request limits refuse is committed one
// write at a time, so that one large value fails only its own call.
func (s *Store[V]) commitBatch(batch []*writeReq[V]) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	keys := make([]string, 0, len(batch))
	for _, r := range batch {
		if r.reads && !slices.Contains(keys, r.key) {
			keys = append(keys, r.key)
		}
	}
	var check func(int64) error
	if len(batch) == 1 {
		check = batch[0].check // the root package's order: refused before expiries
	}
	_, err := s.update(ctx, keys, false, check, func(t *Txn[V]) error {
		for _, r := range batch {
			r.rev, r.err = 0, nil
			if len(batch) > 1 && r.check != nil {
				if r.err = r.check(t.now); r.err != nil {
					continue
				}
			}
			if r.err = r.fn(t); r.err == nil {
				r.rev = t.seq
			}
		}
		if len(batch) == 1 {
			return batch[0].err
		}
		return nil
	})
	if len(batch) > 1 && (errors.Is(err, ErrValueTooLarge) || errors.Is(err, ErrTooManyWrites)) {
		for _, r := range batch {
			s.commitBatch([]*writeReq[V]{r})
		}
		return
	}
	for _, r := range batch {
		if err != nil {
			r.rev, r.err = 0, err
		}
		close(r.done)
	}
}

// batchContext is done when every caller's ctx is done: one caller giving
// up does not fail the others' writes.
func batchContext[V any](batch []*writeReq[V]) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, r := range batch {
		stops[i] = context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
