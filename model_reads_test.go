package revkv_test

import (
	"errors"
	"strings"
	"time"

	"github.com/revkv/revkv"
)

// ---- history ----

func (m *model) History(key string) []revkv.Entry[int] {
	var out []revkv.Entry[int]
	for _, r := range m.retained(key) {
		out = append(out, m.at(r).public())
	}
	return out
}

// HistoryRange is History cut to [from, to], with GetAt's ErrCompacted
// first when the range starts below what the key's reads answer, and the
// revision from which they do as its Rev. Entries are whole in the model:
// the store reports a trim during the loop, which the model never makes.
func (m *model) HistoryRange(key string, from, to revkv.Revision) ([]revkv.Entry[int], []error) {
	lo, hi := max(int64(from), 1), int64(to)
	if hi > m.rev() {
		return []revkv.Entry[int]{{}}, []error{revkv.ErrFutureRevision}
	}
	if hi <= 0 {
		hi = m.rev()
	}
	if lo > hi {
		return nil, nil
	}
	var es []revkv.Entry[int]
	var errs []error
	if known := max(m.compactRev, m.lo[key]); lo < known {
		es, errs = append(es, revkv.Entry[int]{}), append(errs, &revkv.OpError{Rev: revkv.Revision(known), Err: revkv.ErrCompacted})
	}
	for _, r := range m.retained(key) {
		if r >= lo && r <= hi {
			es, errs = append(es, m.at(r).public()), append(errs, nil)
		}
	}
	return es, errs
}

func (m *model) GetAt(key string, rev revkv.Revision) (int, bool, error) {
	r := int64(rev)
	switch {
	case r <= 0:
		return 0, false, nil
	case r > m.rev():
		return 0, false, revkv.ErrFutureRevision
	case r < m.compactRev || r < m.lo[key]:
		return 0, false, revkv.ErrCompacted
	}
	// By revisions alone: the state after r is what the entries up to r say.
	if e, ok := m.entryAt(key, r); ok && e.op == revkv.OpPut {
		return e.value, true, nil
	}
	return 0, false, nil
}

func (m *model) GetAsOf(key string, t time.Time) (int, bool, error) {
	switch {
	case t.After(m.now()):
		return 0, false, revkv.ErrFutureRevision
	case m.rev() == 0 || t.Before(m.at(1).time):
		return 0, false, nil
	case m.compactRev > 0 && t.Before(m.compactTime),
		m.lo[key] > 0 && t.Before(m.at(m.lo[key]).time):
		return 0, false, revkv.ErrCompacted
	}
	e, ok := m.entryAt(key, m.revAtTime(t))
	if !liveAt(e, ok, t) {
		return 0, false, nil
	}
	return e.value, true, nil
}

func (m *model) open(rev int64, t time.Time) *mView {
	if rev > 0 {
		m.pins[rev]++
	}
	return &mView{rev: rev, t: t}
}

func (m *model) At(rev revkv.Revision) (*mView, error) {
	r := int64(rev)
	switch {
	case r > m.rev():
		return nil, revkv.ErrFutureRevision
	case r <= 0:
		return m.open(0, time.Time{}), nil
	case r < m.floor():
		return nil, revkv.ErrCompacted
	}
	return m.open(r, time.Time{}), nil // no expiry time is before the zero time: nothing hidden
}

func (m *model) AsOf(t time.Time) (*mView, error) {
	if t.After(m.now()) {
		return nil, revkv.ErrFutureRevision
	}
	r := m.revAtTime(t)
	if r > 0 && r < m.floor() {
		return nil, revkv.ErrCompacted
	}
	return m.open(r, t), nil
}

func (m *model) CloseView(v *mView) {
	if v.rev == 0 {
		return
	}
	if m.pins[v.rev]--; m.pins[v.rev] == 0 {
		delete(m.pins, v.rev)
	}
}

func (m *model) ViewGet(v *mView, key string) (revkv.Entry[int], bool) {
	if v.rev == 0 {
		return revkv.Entry[int]{}, false
	}
	e, ok := m.entryAt(key, v.rev)
	if !liveAt(e, ok, v.t) {
		return revkv.Entry[int]{}, false
	}
	return e.public(), true
}

// ---- upkeep ----

func (m *model) PurgeExpired() int {
	if m.closed {
		return 0
	}
	return m.materialize(m.now())
}

// compactTo records a compaction. The store keeps revision times from
// max(1, keep) on, keep being Floor() (or, with retention, the last
// compaction); below that it stands in the newest time among every key's
// retained entry visible at rev, never before the last compaction's time.
func (m *model) compactTo(rev int64) {
	keep := m.floor()
	if m.retention > 0 {
		keep = m.compactRev
	}
	if rev >= max(keep, 1) {
		m.compactTime = m.at(rev).time
	} else {
		t := m.compactTime // zero before the first compaction
		for _, k := range m.keys() {
			var visible int64
			for _, r := range m.retained(k) {
				if r <= rev {
					visible = r
				}
			}
			if visible > 0 && m.at(visible).time.After(t) {
				t = m.at(visible).time
			}
		}
		m.compactTime = t
	}
	m.compactRev = rev
}

func (m *model) Compact(rev revkv.Revision) error {
	switch r := int64(rev); {
	case m.closed:
		return revkv.ErrClosed
	case r > m.rev():
		return revkv.ErrFutureRevision
	case r <= m.compactRev:
		return nil
	default:
		m.compactTo(r)
	}
	for _, k := range m.keys() {
		m.cut(k)
	}
	return nil
}

func (m *model) Trim() int {
	if m.closed {
		return 0
	}
	if m.retention > 0 {
		if r := m.revAtTime(m.now().Add(-m.retention)); r > m.compactRev {
			m.compactTo(r)
		}
	}
	n := 0
	for _, k := range m.keys() {
		n += m.cut(k)
		if m.maxHistory > 0 {
			n += m.trimCount(k)
		}
	}
	return n
}

// cut drops what neither the compaction nor the oldest view needs: entries
// before the one visible at that point; a lone tombstone there removes the key.
func (m *model) cut(key string) int {
	p := min(m.compactRev, m.oldestPin())
	ret := m.retained(key)
	i := -1
	for j, r := range ret {
		if r <= p {
			i = j
		}
	}
	switch {
	case i < 0:
		return 0
	case i == len(ret)-1 && m.at(ret[i]).op != revkv.OpPut && ret[i] < p:
		m.from[key], m.lo[key] = m.rev()+1, 0
		return len(ret)
	case i > 0:
		m.from[key], m.lo[key] = ret[i], ret[i]
	}
	return i
}

// trimCount keeps the newest maxHistory entries, and the oldest view's entry.
func (m *model) trimCount(key string) int {
	ret := m.retained(key)
	drop := len(ret) - m.maxHistory
	seen := -1 // index of the entry visible at the oldest view's revision
	for j, r := range ret {
		if r <= m.oldestPin() {
			seen = j
		}
	}
	if seen < drop {
		drop = max(seen, 0) // everything after the pin is needed too
	}
	if drop <= 0 {
		return 0
	}
	m.from[key], m.lo[key] = ret[drop], ret[drop]
	m.trimFloor = max(m.trimFloor, ret[drop])
	return drop
}

func (m *model) Close() { m.closed = true }

// sameErr reports whether got is want (nil for nil).
func sameErr(got, want error) bool {
	if want == nil {
		return got == nil
	}
	return errors.Is(got, want)
}

// ---- Update ----

// mTxn is the model's transaction: it writes straight into the model's list
// (so its reads see its own writes) and Update takes the writes back if fn
// fails.
type mTxn struct {
	m     *model
	now   time.Time
	keys  []string // the keys written, in order, repeats included
	notes []string // Annotate's pairs, in call order
	dead  bool
}

// Update mirrors contract §7: expiries due first, fn's writes at one time, the
// history cap applied once the batch is in, nothing kept if fn fails.
func (m *model) Update(fn func(tx *mTxn) error) (rev revkv.Revision, err error) {
	if m.closed {
		return 0, revkv.ErrClosed
	}
	now := m.now()
	m.materialize(now)
	tx := &mTxn{m: m, now: now}
	n0 := len(m.revs)
	done := false
	defer func() {
		tx.dead = true
		if !done { // an error or a panic: take every write back
			m.revs = m.revs[:n0]
			m.chain = m.chain[:min(len(m.chain), n0+1)]
			for _, k := range tx.keys {
				rs := m.byKey[k]
				for len(rs) > 0 && rs[len(rs)-1] > int64(n0) {
					rs = rs[:len(rs)-1]
				}
				if len(rs) == 0 {
					delete(m.byKey, k)
				} else {
					m.byKey[k] = rs
				}
			}
		}
	}()
	if err := fn(tx); err != nil {
		return 0, err
	}
	done = true
	if len(tx.notes) > 0 {
		for r := int64(n0) + 1; r <= m.rev(); r++ {
			m.notes[r] = sortedPairs(tx.notes)
		}
	}
	for _, k := range tx.keys {
		if n := m.maxHistory; n > 0 && len(m.retained(k)) > 2*n {
			m.trimCount(k)
		}
	}
	return revkv.Revision(m.rev()), nil
}

func (tx *mTxn) write(key string, ex mExpiry, decide mDecider) error {
	if tx.dead {
		return revkv.ErrClosed
	}
	var expiresAt time.Time
	if ex != nil {
		var err error
		if expiresAt, err = ex(tx.now); err != nil {
			return err
		}
	}
	cur, ok := tx.m.latest(key)
	op, v, err := decide(cur, liveAt(cur, ok, tx.now))
	if err != nil {
		return err
	}
	m := tx.m
	e := mEntry{key: key, op: op, value: v, time: tx.now, expiresAt: expiresAt, rev: m.rev() + 1}
	m.revs = append(m.revs, e)
	m.byKey[key] = append(m.byKey[key], e.rev)
	tx.keys = append(tx.keys, key)
	return nil
}

func (tx *mTxn) Get(key string) (revkv.Entry[int], bool) {
	if tx.dead {
		return revkv.Entry[int]{}, false
	}
	e, ok := tx.m.latest(key)
	if !liveAt(e, ok, tx.now) {
		return revkv.Entry[int]{}, false
	}
	return e.public(), true
}

func (tx *mTxn) Put(key string, v int) error { return tx.write(key, nil, mPut(v)) }

func (tx *mTxn) PutTTL(key string, v int, ttl time.Duration) error {
	if ttl <= 0 {
		return revkv.ErrInvalidTTL
	}
	return tx.write(key, mTTL(ttl), mPut(v))
}

func (tx *mTxn) PutExpiresAt(key string, v int, at time.Time) error {
	return tx.write(key, mAt(at), mPut(v))
}

func (tx *mTxn) Delete(key string) error { return tx.write(key, nil, mDelete) }

func (tx *mTxn) Expire(key string, ttl time.Duration) error {
	if ttl <= 0 {
		return revkv.ErrInvalidTTL
	}
	return tx.write(key, mTTL(ttl), mKeep)
}

func (tx *mTxn) ExpireAt(key string, at time.Time) error { return tx.write(key, mAt(at), mKeep) }

func (tx *mTxn) Persist(key string) error { return tx.write(key, nil, mPersist) }

// Changes lists the model's revisions of keys under prefix in [from, to];
// ErrCompacted (in an OpError whose Rev is where to restart) if a retained
// key lost an entry at or above from, or a compaction is at or above it.
func (m *model) Changes(prefix string, from, to revkv.Revision) ([]revkv.Entry[int], error) {
	if int64(to) > m.rev() {
		return nil, revkv.ErrFutureRevision
	}
	f := max(int64(from), 1)
	if f > int64(to) {
		return nil, nil
	}
	restart := int64(0)
	if m.removedFloor >= f {
		restart = m.removedFloor + 1
	}
	for _, k := range m.keys() {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		dropped := int64(0)
		for _, r := range m.byKey[k] {
			if r < m.from[k] {
				dropped = r
			}
		}
		if dropped >= f {
			restart = max(restart, dropped+1)
		}
	}
	if restart > 0 {
		return nil, &revkv.OpError{Rev: revkv.Revision(restart), Err: revkv.ErrCompacted}
	}
	var out []revkv.Entry[int]
	for r := f; r <= int64(to); r++ {
		if e := m.at(r); strings.HasPrefix(e.key, prefix) {
			out = append(out, e.public())
		}
	}
	return out, nil
}
