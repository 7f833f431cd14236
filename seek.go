package revkv

import (
	"iter"
	"slices"

	"github.com/google/btree"
)

// Ordered reads from a starting key, which Scan (a whole prefix, upwards)
// cannot give: revkv-server keeps a sorted set's members in score order
// under one prefix, and ZRANGEBYSCORE, ZREVRANGE or ZPOPMAX must start at a
// score, or at the end, and stop after m members: O(log n + m), not O(n).

// Ascend yields the live keys >= from and their values, in byte order,
// until yield returns false. It reads a consistent snapshot of the latest
// state, as Scan does; the loop body may use the store.
func (s *Store[V]) Ascend(from string) iter.Seq2[string, V] {
	return s.latest(func(v *View[V]) iter.Seq2[string, V] { return v.Ascend(from) })
}

// Descend is Ascend downwards: the live keys <= from, last first. An empty
// from starts at the last key.
func (s *Store[V]) Descend(from string) iter.Seq2[string, V] {
	return s.latest(func(v *View[V]) iter.Seq2[string, V] { return v.Descend(from) })
}

func (s *Store[V]) latest(seq func(v *View[V]) iter.Seq2[string, V]) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		v := s.Latest()
		defer v.Close()
		seq(v)(yield)
	}
}

// Latest opens a View of the latest state: the head revision, hiding what
// has expired by now (as Scan judges expiry). Close it when done.
func (s *Store[V]) Latest() *View[V] {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.order.Head()
	return s.openLocked(h.Rev, s.order.Now(h))
}

// Ascend yields the keys >= from that are live in the view and their values,
// in byte order, until yield returns false.
func (v *View[V]) Ascend(from string) iter.Seq2[string, V] {
	return v.walk(func(t *btree.BTreeG[*keyLog[V]], fn func(*keyLog[V]) bool) {
		t.AscendGreaterOrEqual(&keyLog[V]{key: from}, fn)
	})
}

// Descend yields the keys <= from that are live in the view, last first; an
// empty from starts at the last key.
func (v *View[V]) Descend(from string) iter.Seq2[string, V] {
	return v.walk(func(t *btree.BTreeG[*keyLog[V]], fn func(*keyLog[V]) bool) {
		if from == "" {
			t.Descend(fn)
		} else {
			t.DescendLessOrEqual(&keyLog[V]{key: from}, fn)
		}
	})
}

func (v *View[V]) walk(order func(*btree.BTreeG[*keyLog[V]], func(*keyLog[V]) bool)) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if v.closed.Load() || v.rev == 0 {
			return
		}
		v.s.mu.Lock()
		keys := v.s.tree.Clone()
		v.s.mu.Unlock()
		order(keys, func(kl *keyLog[V]) bool {
			r, ok := v.at(kl)
			return !ok || yield(kl.key, r.value())
		})
	}
}

// Ascend yields the keys >= from that are live as the transaction sees
// them, its own writes included, and their values, in byte order, until
// yield returns false. The loop body must not write through the
// transaction: collect what to write, then write it.
func (t *Txn[V]) Ascend(from string) iter.Seq2[string, V] {
	return t.walk(from, false)
}

// Descend is Ascend downwards: the keys <= from, last first; an empty from
// starts at the last key.
func (t *Txn[V]) Descend(from string) iter.Seq2[string, V] {
	return t.walk(from, true)
}

func (t *Txn[V]) walk(from string, desc bool) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		tx := t.b
		if tx == nil {
			return
		}
		// The transaction's own keys on the walk's side of from, in the
		// walk's order, merged with the tree's: the tree does not hold
		// keys the transaction created.
		var own []string
		for i := range tx.changes {
			k := tx.changes[i].key
			if !desc && k >= from || desc && (from == "" || k <= from) {
				own = append(own, k)
			}
		}
		slices.Sort(own)
		own = slices.Compact(own)
		if desc {
			slices.Reverse(own)
		}
		before := func(a, b string) bool { return a < b != desc }
		emit := func(k string) bool {
			e, live, _, _ := tx.current(k)
			return !live || yield(k, e.Value)
		}
		going := true
		fn := func(kl *keyLog[V]) bool {
			for len(own) > 0 && before(own[0], kl.key) {
				if going = emit(own[0]); !going {
					return false
				}
				own = own[1:]
			}
			if len(own) > 0 && own[0] == kl.key {
				own = own[1:]
			}
			going = emit(kl.key)
			return going
		}
		switch {
		case !desc:
			tx.s.tree.AscendGreaterOrEqual(&keyLog[V]{key: from}, fn)
		case from == "":
			tx.s.tree.Descend(fn)
		default:
			tx.s.tree.DescendLessOrEqual(&keyLog[V]{key: from}, fn)
		}
		for going && len(own) > 0 {
			going = emit(own[0])
			own = own[1:]
		}
	}
}
