package main

import (
	"math"
	"strings"

	"github.com/revkv/revkv"
)

// A sorted set's ranks and counts by its order-statistics tree (the
// design is in zcache.go): each falls back to walking the index when no
// tree is to be had (a read of the past, a set too large for the cache).

// zWalkMax is how far from an end a range by rank may start and still be
// walked rather than build a tree: ZRANGE 0 9 and ZPOPMIN cost O(m) as
// they did, without an O(n) build for a set never queried by rank.
const zWalkMax = 64

// tree returns the order-statistics tree of m's members as r sees them:
// the transaction's own version, a cached one whose tag matches the
// metadata r read, or, if build, one built from r's index (and cached if
// r is the latest state). nil: walk instead.
func (m *meta) tree(r kv, build bool) *znode {
	if m.gen == "" || m.zc == nil {
		return nil
	}
	var t *znode
	switch r := r.(type) {
	case *revkv.Txn[[]byte]:
		if m.zt == nil {
			return nil
		}
		zt := m.zt.trees[m.gen]
		if zt == nil {
			if root := m.zc.get(m.gen, m.e.Rev); root != nil {
				zt = &ztree{root: root}
				m.zt.set(m.gen, zt)
			}
		}
		if zt == nil || zt.root == nil {
			if !build || !m.zc.fits(m.n) {
				return nil
			}
			if zt == nil {
				zt = &ztree{}
				m.zt.set(m.gen, zt)
			}
			zt.root = m.buildTree(r) // the transaction's state: its own, published only if it commits
		}
		zt.key = m.key
		t = zt.root
	case viewKV:
		if t = m.zc.get(m.gen, m.e.Rev); t == nil {
			if !build || r.old || !m.zc.fits(m.n) {
				return nil
			}
			t = m.buildTree(r)
			m.zc.put(m.gen, m.e.Rev, t)
		}
	default:
		return nil
	}
	if zsize(t) != int(m.n) { // the count and the index disagree: trust neither tree nor cache
		m.zc.bad.Add(1)
		return nil
	}
	return t
}

// buildTree reads m's index into a tree: O(n).
func (m *meta) buildTree(r kv) *znode {
	m.zc.builds.Add(1)
	p := m.el('z', "")
	keys := make([]string, 0, m.n)
	for k := range r.Ascend(p) {
		if !strings.HasPrefix(k, p) {
			break
		}
		keys = append(keys, strings.Clone(k[len(p):])) // not pinning the store's own string
	}
	return zbuild(keys)
}

// fits reports whether a set of n members may be cached.
func (zc *zcache) fits(n int64) bool {
	zc.mu.Lock()
	defer zc.mu.Unlock()
	return n <= zc.max
}

func (zt *ztx) set(gen string, t *ztree) {
	if zt.trees == nil {
		zt.trees = map[string]*ztree{}
	}
	zt.trees[gen] = t
}

// ztrack returns the transaction's version of m's tree for a write of a
// member, taking the cached tree if its tag matches; its root is nil when
// there is none to update (the write then drops the cached tree once it
// commits). nil outside a tracked Update.
func (m *meta) ztrack() *ztree {
	if m.zt == nil || m.gen == "" {
		return nil
	}
	if t := m.zt.trees[m.gen]; t != nil {
		t.key = m.key
		return t
	}
	t := &ztree{key: m.key}
	if m.exists {
		if root := m.zc.get(m.gen, m.e.Rev); zsize(root) == int(m.n) {
			t.root = root
		}
	}
	m.zt.set(m.gen, t)
	return t
}

// zelOf is the member and score of an index key.
func zelOf(k string) zel { return zel{k[8:], decodeIndexScore(k)} }

// zRank is the member's rank from the bottom, or from the top: O(log n)
// by the tree, else walked from both ends at once.
func (m *meta) zRank(r kv, member string, rev bool) (int64, bool) {
	s, ok := m.zScore(r, member)
	if !ok {
		return 0, false
	}
	if t := m.tree(r, true); t != nil {
		if i, ok := zfind(t, encodeScore(s)+member); ok {
			if rev {
				return m.n - 1 - int64(i), true
			}
			return int64(i), true
		}
		m.zc.bad.Add(1) // a member the tree lacks: walk
	}
	return m.zRankWalk(r, member, s, rev)
}

// zCount counts a score or lex range: O(log n) by the tree; walked if
// there is none, or for a lex range of a set whose members' scores differ
// (Redis leaves that undefined; the walk's answer is kept).
func (m *meta) zCount(r kv, q zquery) int64 {
	if t := m.tree(r, true); t != nil {
		if q.by == 's' {
			return zCountScores(t, q.min, q.max)
		}
		if first, last := zat(t, 0), zat(t, t.n-1); first[:8] == last[:8] {
			return zCountLex(t, first[:8], q.lmin, q.lmax)
		}
	}
	q.limit, q.offset = -1, 0
	return int64(len(m.zRange(r, q)))
}

// zCountScores counts the keys whose score is within min and max.
func zCountScores(t *znode, lo, hi scoreBound) int64 {
	var from, to int // the ranks of the first key in the range and of the first past it
	switch {
	case !lo.excl:
		from = zbefore(t, encodeScore(lo.v))
	case math.IsInf(lo.v, 1):
		return 0
	default:
		from = zbefore(t, encodeScore(math.Nextafter(lo.v, math.Inf(1))))
	}
	switch {
	case hi.excl:
		to = zbefore(t, encodeScore(hi.v))
	case math.IsInf(hi.v, 1):
		to = t.n
	default:
		to = zbefore(t, encodeScore(math.Nextafter(hi.v, math.Inf(1))))
	}
	return int64(max(to-from, 0))
}

// zCountLex counts the members within min and max, every key's score
// being the one encoded as score.
func zCountLex(t *znode, score string, lo, hi lexBound) int64 {
	if lo.inf == 1 || hi.inf == -1 {
		return 0
	}
	from, to := 0, t.n
	if lo.inf == 0 {
		k := score + lo.s
		if lo.excl {
			k += "\x00" // the first key past lo.s
		}
		from = zbefore(t, k)
	}
	if hi.inf == 0 {
		k := score + hi.s
		if !hi.excl {
			k += "\x00"
		}
		to = zbefore(t, k)
	}
	return int64(max(to-from, 0))
}

// zRangeRanks is the members of ascending ranks start to stop (in the
// set's bounds), by the tree if there is one (and, unless the range lies
// near an end, even if one must be built); ok false: walk.
func (m *meta) zRangeRanks(r kv, start, stop int64) ([]zel, bool) {
	t := m.tree(r, min(start, m.n-1-stop) > zWalkMax)
	if t == nil {
		return nil, false
	}
	out := make([]zel, 0, stop-start+1)
	zranks(t, 0, int(start), int(stop), func(k string) bool {
		out = append(out, zelOf(k))
		return true
	})
	return out, true
}
