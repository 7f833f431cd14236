package main

// znode is a node of an order-statistics tree over a sorted set's index
// keys (encodeScore(score) + member, the 'z' records' order): a
// weight-balanced tree (Adams's, as Haskell's Data.Map keeps it, with
// delta 3 and ratio 2) whose nodes count their subtrees, so that a rank,
// a count of a range and the member at a rank are O(log n).
//
// It is persistent: an insert or a delete copies the O(log n) nodes on its
// path and leaves the old tree whole. So a transaction updates a version
// of its own that no one else sees until it commits (zcache.go), an
// aborted one is simply dropped, and readers walk a tree with no lock
// held. Weight balance rather than a treap or a red-black tree: the
// subtree sizes it needs for ranks are what it balances on, it needs no
// random priorities, and a tree built from the index's sorted keys is
// balanced by halving.
type znode struct {
	key  string
	l, r *znode
	n    int // nodes in this subtree
}

func zsize(t *znode) int {
	if t == nil {
		return 0
	}
	return t.n
}

func zmk(k string, l, r *znode) *znode { return &znode{key: k, l: l, r: r, n: zsize(l) + zsize(r) + 1} }

// zdelta and zratio are the balance parameters: a subtree may weigh up to
// zdelta times its sibling; a rotation is double when the inner grandchild
// weighs at least zratio times the outer one. (3, 2) is the pair proven
// to keep the balance through single inserts and deletes.
const zdelta, zratio = 3, 2

// zbalance makes a node of k, l and r, rotating once or twice if one side
// outweighs the other (by at most one insert or delete).
func zbalance(k string, l, r *znode) *znode {
	sl, sr := zsize(l), zsize(r)
	switch {
	case sl+sr <= 1:
	case sr > zdelta*sl:
		if zsize(r.l) < zratio*zsize(r.r) {
			return zmk(r.key, zmk(k, l, r.l), r.r)
		}
		rl := r.l
		return zmk(rl.key, zmk(k, l, rl.l), zmk(r.key, rl.r, r.r))
	case sl > zdelta*sr:
		if zsize(l.r) < zratio*zsize(l.l) {
			return zmk(l.key, l.l, zmk(k, l.r, r))
		}
		lr := l.r
		return zmk(lr.key, zmk(l.key, l.l, lr.l), zmk(k, lr.r, r))
	}
	return zmk(k, l, r)
}

// zinsert returns t with k added (t itself if k is in it).
func zinsert(t *znode, k string) *znode {
	switch {
	case t == nil:
		return zmk(k, nil, nil)
	case k < t.key:
		l := zinsert(t.l, k)
		if l == t.l {
			return t
		}
		return zbalance(t.key, l, t.r)
	case k > t.key:
		r := zinsert(t.r, k)
		if r == t.r {
			return t
		}
		return zbalance(t.key, t.l, r)
	}
	return t
}

// zdelete returns t without k (t itself if k is not in it).
func zdelete(t *znode, k string) *znode {
	switch {
	case t == nil:
		return nil
	case k < t.key:
		l := zdelete(t.l, k)
		if l == t.l {
			return t
		}
		return zbalance(t.key, l, t.r)
	case k > t.key:
		r := zdelete(t.r, k)
		if r == t.r {
			return t
		}
		return zbalance(t.key, t.l, r)
	}
	switch {
	case t.l == nil:
		return t.r
	case t.r == nil:
		return t.l
	case t.l.n > t.r.n:
		k, l := zdeleteMax(t.l)
		return zbalance(k, l, t.r)
	}
	k, r := zdeleteMin(t.r)
	return zbalance(k, t.l, r)
}

func zdeleteMin(t *znode) (string, *znode) {
	if t.l == nil {
		return t.key, t.r
	}
	k, l := zdeleteMin(t.l)
	return k, zbalance(t.key, l, t.r)
}

func zdeleteMax(t *znode) (string, *znode) {
	if t.r == nil {
		return t.key, t.l
	}
	k, r := zdeleteMax(t.r)
	return k, zbalance(t.key, t.l, r)
}

// zbuild makes a tree of sorted, distinct keys: balanced by halving, O(n).
func zbuild(keys []string) *znode {
	if len(keys) == 0 {
		return nil
	}
	mid := len(keys) / 2
	return zmk(keys[mid], zbuild(keys[:mid]), zbuild(keys[mid+1:]))
}

// zbefore counts the keys below k.
func zbefore(t *znode, k string) int {
	n := 0
	for t != nil {
		if k <= t.key {
			t = t.l
		} else {
			n += zsize(t.l) + 1
			t = t.r
		}
	}
	return n
}

// zfind is k's rank, if k is in t: one descent.
func zfind(t *znode, k string) (int, bool) {
	n := 0
	for t != nil {
		switch {
		case k < t.key:
			t = t.l
		case k > t.key:
			n += zsize(t.l) + 1
			t = t.r
		default:
			return n + zsize(t.l), true
		}
	}
	return n, false
}

// zat is the key of rank i (0 <= i < size).
func zat(t *znode, i int) string {
	for {
		sl := zsize(t.l)
		switch {
		case i < sl:
			t = t.l
		case i == sl:
			return t.key
		default:
			i -= sl + 1
			t = t.r
		}
	}
}

// zranks yields the keys of ranks a to b, in order, until fn returns
// false: O(log n + b - a). lo is the rank of t's first key.
func zranks(t *znode, lo, a, b int, fn func(string) bool) bool {
	if t == nil {
		return true
	}
	me := lo + zsize(t.l)
	if a < me && !zranks(t.l, lo, a, b, fn) {
		return false
	}
	if a <= me && me <= b && !fn(t.key) {
		return false
	}
	if b > me {
		return zranks(t.r, me+1, a, b, fn)
	}
	return true
}
