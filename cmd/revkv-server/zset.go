package main

import (
	"iter"
	"math"
	"slices"
	"strings"

	"github.com/revkv/revkv"
)

// Sorted sets: per member, a member record ('m' member -> score) and an
// index record ('z' score member, the score encoded in byte order; see
// collection.go). ZSCORE reads one record; a range by score or by lex
// seeks the index at its start and reads m members: O(log n + m). Ranks
// and counts come from an order-statistics tree kept beside the store
// (zcache.go, zrank.go): O(log n), and O(log n + m) for a range by rank.

// zel is a member and its score.
type zel struct {
	member string
	score  float64
}

func (m *meta) zScore(r kv, member string) (float64, bool) {
	if m.gen == "" {
		return 0, false
	}
	v, ok := r.Get(m.el('m', member))
	return decodeScore(v), ok
}

// zSet gives member the score, adding it if new; it reports whether it was.
func (m *meta) zSet(tx *revkv.Txn[[]byte], member string, score float64) bool {
	if score == 0 {
		score = 0 // Redis keeps -0 as 0 (its listpack stores the integer); only ZINCRBY's reply shows -0
	}
	m.grow([]byte(member))
	t := m.ztrack() // before m.n moves: a cached tree is checked against it
	old, had := m.zScore(tx, member)
	if had {
		if old == score {
			return false
		}
		tx.Delete(m.el('z', encodeScore(old)+member))
	} else {
		m.n++
	}
	tx.Put(m.el('m', member), scoreValue(score))
	tx.Put(m.el('z', encodeScore(score)+member), []byte{})
	if t != nil && t.root != nil {
		if had {
			t.root = zdelete(t.root, encodeScore(old)+member)
		}
		t.root = zinsert(t.root, encodeScore(score)+member)
	}
	return !had
}

func (m *meta) zDel(tx *revkv.Txn[[]byte], member string) bool {
	t := m.ztrack()
	old, had := m.zScore(tx, member)
	if !had {
		return false
	}
	tx.Delete(m.el('m', member))
	tx.Delete(m.el('z', encodeScore(old)+member))
	m.n--
	if t != nil && t.root != nil {
		t.root = zdelete(t.root, encodeScore(old)+member)
	}
	return true
}

// zAsc walks the index upwards from the first member with a score >= from.
func (m *meta) zAsc(r kv, from float64, fn func(zel) bool) {
	if m.gen == "" {
		return
	}
	p := m.el('z', "")
	for k := range r.Ascend(p + encodeScore(from)) {
		if !strings.HasPrefix(k, p) || !fn(zel{k[len(p)+8:], decodeIndexScore(k[len(p):])}) {
			return
		}
	}
}

// zDesc walks the index downwards from the last member with a score <=
// from.
func (m *meta) zDesc(r kv, from float64, fn func(zel) bool) {
	if m.gen == "" {
		return
	}
	p := m.el('z', "")
	bound := m.el('z'+1, "") // past the index: +inf's members included
	if from < math.Inf(1) {
		bound = p + encodeScore(math.Nextafter(from, math.Inf(1)))
	}
	for k := range r.Descend(bound) {
		if k >= bound {
			continue // the key at the bound itself, if any: past from
		}
		if !strings.HasPrefix(k, p) || !fn(zel{k[len(p)+8:], decodeIndexScore(k[len(p):])}) {
			return
		}
	}
}

// zquery is a range of ZRANGE and its kin.
type zquery struct {
	by            byte // 'r' rank, 's' score, 'l' lex
	rev           bool
	start, stop   int64 // ranks
	min, max      scoreBound
	lmin, lmax    lexBound
	offset, limit int64 // limit < 0: no limit
}

// zRange answers q in its order (REV: from the top).
func (m *meta) zRange(r kv, q zquery) []zel {
	var out []zel
	if q.by == 'r' {
		start, stop, ok := rankRange(q.start, q.stop, m.n)
		if !ok {
			return nil
		}
		if q.rev {
			start, stop = m.n-1-stop, m.n-1-start
		}
		want := int(stop - start + 1)
		if els, ok := m.zRangeRanks(r, start, stop); ok {
			out = els
		} else if start <= m.n-1-stop { // no tree: walk from the nearer end, the bottom
			skip := start
			m.zAsc(r, math.Inf(-1), func(z zel) bool {
				if skip > 0 {
					skip--
					return true
				}
				out = append(out, z)
				return len(out) < want
			})
		} else {
			skip := m.n - 1 - stop
			m.zDesc(r, math.Inf(1), func(z zel) bool {
				if skip > 0 {
					skip--
					return true
				}
				out = append(out, z)
				return len(out) < want
			})
			slices.Reverse(out)
		}
		if q.rev {
			slices.Reverse(out)
		}
		return out
	}
	if q.offset < 0 {
		return nil
	}
	skip := q.offset
	take := func(z zel) bool {
		if skip > 0 {
			skip--
			return true
		}
		out = append(out, z)
		return q.limit < 0 || int64(len(out)) < q.limit
	}
	if q.limit == 0 {
		return nil
	}
	switch {
	case q.by == 's' && !q.rev:
		m.zAsc(r, q.min.v, func(z zel) bool {
			if !q.min.aboveMin(z.score) {
				return true
			}
			return q.max.belowMax(z.score) && take(z)
		})
	case q.by == 's':
		m.zDesc(r, q.max.v, func(z zel) bool {
			if !q.max.belowMax(z.score) {
				return true
			}
			return q.min.aboveMin(z.score) && take(z)
		})
	case !q.rev: // lex: the members of one score (as Redis assumes), from min
		first, ok := m.zFirst(r)
		if !ok {
			return nil
		}
		m.zAscFrom(r, first.score, q.lmin, func(z zel) bool {
			if !q.lmin.aboveMin(z.member) {
				return true
			}
			return q.lmax.belowMax(z.member) && take(z)
		})
	default: // lex downwards: from max among the members of the top score
		last, ok := m.zLast(r)
		if !ok {
			return nil
		}
		m.zDescFrom(r, last.score, q.lmax, func(z zel) bool {
			if !q.lmax.belowMax(z.member) {
				return true
			}
			return q.lmin.aboveMin(z.member) && take(z)
		})
	}
	return out
}

// zFirst is the lowest member.
func (m *meta) zFirst(r kv) (zel, bool) {
	var first zel
	found := false
	m.zAsc(r, math.Inf(-1), func(z zel) bool { first, found = z, true; return false })
	return first, found
}

// zLast is the highest member.
func (m *meta) zLast(r kv) (zel, bool) {
	var last zel
	found := false
	m.zDesc(r, math.Inf(1), func(z zel) bool { last, found = z, true; return false })
	return last, found
}

// zDescFrom walks downwards from member max among the members of score s.
func (m *meta) zDescFrom(r kv, s float64, max lexBound, fn func(zel) bool) {
	p := m.el('z', "")
	bound := m.el('z'+1, "")
	if max.inf == 0 {
		bound = p + encodeScore(s) + max.s + "\x00" // past max and nothing below it
	}
	for k := range r.Descend(bound) {
		if k >= bound {
			continue
		}
		if !strings.HasPrefix(k, p) || !fn(zel{k[len(p)+8:], decodeIndexScore(k[len(p):])}) {
			return
		}
	}
}

// zAscFrom walks upwards from member min among the members of score s (the
// lex ranges' seek).
func (m *meta) zAscFrom(r kv, s float64, min lexBound, fn func(zel) bool) {
	p := m.el('z', "")
	from := p
	if min.inf == 0 {
		from = p + encodeScore(s) + min.s
	}
	for k := range r.Ascend(from) {
		if !strings.HasPrefix(k, p) || !fn(zel{k[len(p)+8:], decodeIndexScore(k[len(p):])}) {
			return
		}
	}
}

// rankRange clamps Redis's start and stop ranks (negative: from the end)
// to a collection of n.
func rankRange(start, stop, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}

// zRankWalk is the rank of member, of score s, from the bottom or from
// the top, walking from both ends at once: O(min(rank, n - rank)).
func (m *meta) zRankWalk(r kv, member string, s float64, rev bool) (int64, bool) {
	target := zel{member, s}
	up, stopUp := iter.Pull(func(yield func(zel) bool) { m.zAsc(r, math.Inf(-1), yield) })
	defer stopUp()
	down, stopDown := iter.Pull(func(yield func(zel) bool) { m.zDesc(r, math.Inf(1), yield) })
	defer stopDown()
	rank := int64(-1)
	for i := int64(0); i < m.n && rank < 0; i++ {
		if z, ok := up(); ok && z == target {
			rank = i
		} else if z, ok := down(); ok && z == target {
			rank = m.n - 1 - i
		}
	}
	if rank < 0 { // not found at either end: the count disagrees with the index
		return 0, false
	}
	if rev {
		return m.n - 1 - rank, true
	}
	return rank, true
}

// zReply writes members, with their scores if withScores, as a flat array.
func zReply(c *client, els []zel, withScores bool) {
	if withScores && c.w.RESP3() { // RESP3: [member, score] pairs, the score a double
		c.w.Array(len(els))
		for _, z := range els {
			c.w.Array(2)
			c.w.BulkString(z.member)
			c.w.Double(formatScore(z.score))
		}
		return
	}
	if withScores {
		c.w.Array(2 * len(els))
	} else {
		c.w.Array(len(els))
	}
	for _, z := range els {
		c.w.BulkString(z.member)
		if withScores {
			c.w.Bulk(formatScore(z.score))
		}
	}
}
