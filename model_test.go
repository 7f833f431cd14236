package revkv_test

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/chain"
)

// manualClock is a clock the test sets by hand; safe for concurrent use.
type manualClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func newClock(t time.Time) *manualClock { return &manualClock{t: t} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// model is the reference implementation of docs/contract.md: the simplest one we could
// write and believe. It keeps every revision ever made in one list and
// derives every answer from that list; trimming and compaction only move the
// boundaries below which answers are ErrCompacted (and where History starts).
// If the store agrees with the model after every step, it never returns a
// value it no longer knows.
type model struct {
	maxHistory int
	retention  time.Duration
	clock      *manualClock

	revs  []mEntry           // revs[i] is revision i+1
	byKey map[string][]int64 // each key's revisions, oldest first
	from  map[string]int64   // History of the key starts at this revision
	lo    map[string]int64   // reads of the key below this revision are ErrCompacted

	compactRev int64
	// removedFloor is the store's: at Open it forgets which keys earlier
	// compactions removed (their tombstones were below compactRev), and
	// Changes from at or below it is ErrCompacted.
	removedFloor int64
	compactTime  time.Time
	trimFloor    int64
	pins         map[int64]int
	closed       bool

	notes map[int64][]string // each annotated revision's pairs, sorted by key
	chain []chain.Digest     // D(0), D(1), ...: as far as digest has needed
}

type mEntry struct {
	key       string
	op        revkv.Op
	value     int
	rev       int64
	time      time.Time
	expiresAt time.Time
}

type mView struct {
	rev int64
	t   time.Time
}

func newModel(clock *manualClock, maxHistory int, retention time.Duration) *model {
	return &model{
		maxHistory: maxHistory, retention: retention, clock: clock,
		byKey: map[string][]int64{}, from: map[string]int64{}, lo: map[string]int64{},
		pins: map[int64]int{}, notes: map[int64][]string{},
	}
}

var (
	minNanos = time.Unix(0, math.MinInt64+1) // the two lowest instants are refused
	maxNanos = time.Unix(0, math.MaxInt64)
)

func (m *model) rev() int64 { return int64(len(m.revs)) }

func (m *model) at(rev int64) mEntry { return m.revs[rev-1] }

func (m *model) now() time.Time {
	t := m.clock.Now().Round(0)
	if n := len(m.revs); n > 0 && t.Before(m.revs[n-1].time) {
		return m.revs[n-1].time
	}
	return t
}

// revAtTime is the last revision whose time is <= t (0: none).
func (m *model) revAtTime(t time.Time) int64 {
	r := int64(0)
	for _, e := range m.revs {
		if e.time.After(t) {
			break
		}
		r = e.rev
	}
	return r
}

// entryAt is the key's newest entry at or below rev.
func (m *model) entryAt(key string, rev int64) (mEntry, bool) {
	rs := m.byKey[key]
	i := sort.Search(len(rs), func(i int) bool { return rs[i] > rev }) // rs is ascending
	if i == 0 {
		return mEntry{}, false
	}
	return m.at(rs[i-1]), true
}

func (m *model) latest(key string) (mEntry, bool) { return m.entryAt(key, math.MaxInt64) }

func liveAt(e mEntry, ok bool, t time.Time) bool {
	return ok && e.op == revkv.OpPut && (e.expiresAt.IsZero() || e.expiresAt.After(t))
}

func (e mEntry) public() revkv.Entry[int] {
	return revkv.Entry[int]{Key: e.key, Op: e.op, Value: e.value, Rev: revkv.Revision(e.rev), Time: e.time, ExpiresAt: e.expiresAt}
}

func (m *model) retained(key string) []int64 {
	var out []int64
	for _, r := range m.byKey[key] {
		if r >= m.from[key] {
			out = append(out, r)
		}
	}
	return out
}

func (m *model) keys() []string {
	ks := make([]string, 0, len(m.byKey))
	for k := range m.byKey {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (m *model) oldestPin() int64 {
	p := int64(math.MaxInt64)
	for r := range m.pins {
		p = min(p, r)
	}
	return p
}

func (m *model) floor() int64 { return max(m.compactRev, m.trimFloor) }

// ---- writes ----

func (m *model) commit(e mEntry) int64 {
	e.rev = m.rev() + 1
	m.revs = append(m.revs, e)
	m.byKey[e.key] = append(m.byKey[e.key], e.rev)
	if n := m.maxHistory; n > 0 && len(m.retained(e.key)) > 2*n {
		m.trimCount(e.key)
	}
	return e.rev
}

func (m *model) materialize(now time.Time) int {
	var due []mEntry
	for _, k := range m.keys() {
		if e, ok := m.latest(k); ok && e.op == revkv.OpPut && !e.expiresAt.IsZero() && !e.expiresAt.After(now) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b mEntry) int {
		if c := a.expiresAt.Compare(b.expiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	for _, e := range due {
		m.commit(mEntry{key: e.key, op: revkv.OpExpire, time: e.expiresAt})
	}
	return len(due)
}

// mExpiry is the TTL a write sets: given the write's time, its ExpiresAt
// (zero: none) or ErrInvalidTTL. nil sets none.
type mExpiry func(now time.Time) (time.Time, error)

// mTTL expires d after the write's time.
func mTTL(d time.Duration) mExpiry {
	return func(now time.Time) (time.Time, error) {
		at := now.Add(d)
		if d <= 0 || !at.After(now) || !at.After(minNanos) || at.After(maxNanos) {
			return time.Time{}, revkv.ErrInvalidTTL
		}
		return at, nil
	}
}

// mAt expires at exactly at, in the location of the write's time (§3.7).
func mAt(at time.Time) mExpiry {
	return func(now time.Time) (time.Time, error) {
		if !at.After(now) || at.After(maxNanos) {
			return time.Time{}, revkv.ErrInvalidTTL
		}
		return time.Unix(0, at.UnixNano()).In(now.Location()), nil
	}
}

// write mirrors contract §3.3(a): argument checks, then expiries due, then decide.
func (m *model) write(key string, ex mExpiry, decide mDecider) (revkv.Revision, error) {
	if m.closed {
		return 0, revkv.ErrClosed
	}
	now := m.now()
	var expiresAt time.Time
	if ex != nil {
		var err error
		if expiresAt, err = ex(now); err != nil {
			return 0, err
		}
	}
	m.materialize(now)
	cur, ok := m.latest(key)
	live := liveAt(cur, ok, now)
	op, v, err := decide(cur, live)
	if err != nil {
		return 0, err
	}
	return revkv.Revision(m.commit(mEntry{key: key, op: op, value: v, time: now, expiresAt: expiresAt})), nil
}

// The deciders of the writes, shared by the model's store and its Txn.
type mDecider func(cur mEntry, live bool) (revkv.Op, int, error)

func mPut(v int) mDecider {
	return func(mEntry, bool) (revkv.Op, int, error) { return revkv.OpPut, v, nil }
}

func mDelete(_ mEntry, live bool) (revkv.Op, int, error) {
	if !live {
		return 0, 0, revkv.ErrNotFound
	}
	return revkv.OpDelete, 0, nil
}

func mKeep(cur mEntry, live bool) (revkv.Op, int, error) {
	if !live {
		return 0, 0, revkv.ErrNotFound
	}
	return revkv.OpPut, cur.value, nil
}

func mPersist(cur mEntry, live bool) (revkv.Op, int, error) {
	if live && cur.expiresAt.IsZero() {
		return 0, 0, revkv.ErrNoTTL
	}
	return mKeep(cur, live)
}

func (m *model) Put(key string, v int) (revkv.Revision, error) { return m.write(key, nil, mPut(v)) }

func (m *model) PutTTL(key string, v int, ttl time.Duration) (revkv.Revision, error) {
	if ttl <= 0 {
		return 0, revkv.ErrInvalidTTL
	}
	return m.write(key, mTTL(ttl), mPut(v))
}

func (m *model) PutExpiresAt(key string, v int, at time.Time) (revkv.Revision, error) {
	return m.write(key, mAt(at), mPut(v))
}

func (m *model) CompareAndPut(key string, modRev revkv.Revision, v int) (revkv.Revision, error) {
	if modRev < 0 {
		return 0, revkv.ErrConflict
	}
	return m.write(key, nil, func(cur mEntry, live bool) (revkv.Op, int, error) {
		if (modRev == 0 && live) || (modRev != 0 && (!live || cur.rev != int64(modRev))) {
			return 0, 0, revkv.ErrConflict
		}
		return revkv.OpPut, v, nil
	})
}

func (m *model) Delete(key string) (revkv.Revision, error) { return m.write(key, nil, mDelete) }

func (m *model) Expire(key string, ttl time.Duration) (revkv.Revision, error) {
	if ttl <= 0 {
		return 0, revkv.ErrInvalidTTL
	}
	return m.write(key, mTTL(ttl), mKeep)
}

func (m *model) ExpireAt(key string, at time.Time) (revkv.Revision, error) {
	return m.write(key, mAt(at), mKeep)
}

func (m *model) Persist(key string) (revkv.Revision, error) { return m.write(key, nil, mPersist) }

// ---- latest state ----

func (m *model) Get(key string) (int, bool) {
	e, ok := m.latest(key)
	if !liveAt(e, ok, m.now()) {
		return 0, false
	}
	return e.value, true
}

func (m *model) GetEntry(key string) (revkv.Entry[int], bool) {
	e, ok := m.latest(key)
	if !liveAt(e, ok, m.now()) {
		return revkv.Entry[int]{}, false
	}
	return e.public(), true
}

func (m *model) TTL(key string) (time.Duration, error) {
	now := m.now()
	e, ok := m.latest(key)
	switch {
	case !liveAt(e, ok, now):
		return 0, revkv.ErrNotFound
	case e.expiresAt.IsZero():
		return 0, revkv.ErrNoTTL
	}
	return e.expiresAt.Sub(now), nil
}

type kv struct {
	K string
	V int
}

func (m *model) scanAt(rev int64, t time.Time, prefix string) []kv {
	var out []kv
	for _, k := range m.keys() {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if e, ok := m.entryAt(k, rev); liveAt(e, ok, t) {
			out = append(out, kv{k, e.value})
		}
	}
	return out
}

func (m *model) Scan(prefix string) []kv { return m.scanAt(m.rev(), m.now(), prefix) }

func (m *model) Len() int { return len(m.Scan("")) }
