package etcdstore_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/etcdstore"
)

var modelSeed = flag.Int64("seed", 0, "seed of TestModel (0: from the time)")

// errKind reduces an error to the sentinel it wraps, so that the two stores'
// errors compare.
func errKind(err error) string {
	for _, s := range []error{revkv.ErrNotFound, revkv.ErrNoTTL, revkv.ErrInvalidTTL, revkv.ErrCompacted,
		revkv.ErrFutureRevision, revkv.ErrConflict, revkv.ErrClosed} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

// sameEntry compares entries, times as instants.
func sameEntry(t *testing.T, want, got revkv.Entry[string], msg string) {
	t.Helper()
	require.Equal(t, want.Key, got.Key, msg)
	require.Equal(t, want.Op, got.Op, msg)
	require.Equal(t, want.Value, got.Value, msg)
	require.Equal(t, want.Rev, got.Rev, msg)
	require.True(t, want.Time.Equal(got.Time), "%s: time %v, want %v", msg, got.Time, want.Time)
	require.True(t, want.ExpiresAt.Equal(got.ExpiresAt), "%s: expires %v, want %v", msg, got.ExpiresAt, want.ExpiresAt)
}

// modelRun drives an etcdstore and the root package's store (the reference
// model) with the same random operations and the same clock, and checks
// after every step that they answer the same: values, entries, revisions
// (the etcdstore numbers one revision per entry, as the root package does,
// so they match exactly), errors by sentinel, history, reads at revisions
// and times, views, scans and compaction.
type modelRun struct {
	t     *testing.T
	ctx   context.Context
	rng   *rand.Rand
	now   time.Time
	ref   *revkv.Store[string]
	st    *etcdstore.Store[string]   // the store of this step: one of sts
	sts   []*etcdstore.Store[string] // stores on one prefix
	keys  []string
	times []time.Time // a time of each step, to read as of
	trim  bool        // the stores cap history: Trim is one of the operations

	revTime   map[revkv.Revision]time.Time // the time of every revision, from the model's histories
	compacted revkv.Revision               // the last compaction's revision
}

// timeReadAllowed reports whether the etcdstore may answer ErrCompacted to a
// read as of t that the model answered: SPEC §5.1 lets a store under a
// history cap refuse reads by time below the time of the compaction's own
// revision, which this store keeps and the model may not.
func (m *modelRun) timeReadAllowed(t time.Time, want, got error) bool {
	return m.trim && want == nil && errors.Is(got, revkv.ErrCompacted) && t.Before(m.revTime[m.compacted])
}

func (m *modelRun) clock() time.Time { return m.now }

func (m *modelRun) key() string { return m.keys[m.rng.Intn(len(m.keys))] }

func (m *modelRun) ttl() time.Duration {
	if m.rng.Intn(10) == 0 {
		return -time.Duration(m.rng.Intn(3)) * time.Second // 0 or negative: refused
	}
	return time.Duration(1+m.rng.Intn(5000)) * time.Millisecond
}

func (m *modelRun) same(op string, wantRev revkv.Revision, wantErr error, gotRev revkv.Revision, gotErr error) {
	m.t.Helper()
	require.Equal(m.t, errKind(wantErr), errKind(gotErr), "%s: errors %v / %v", op, wantErr, gotErr)
	require.Equal(m.t, wantRev, gotRev, "%s: revision", op)
}

// step runs one random operation on both stores.
func (m *modelRun) step() {
	m.st = m.sts[m.rng.Intn(len(m.sts))]
	ctx, k, v := m.ctx, m.key(), fmt.Sprint(m.rng.Intn(100))
	switch m.rng.Intn(16) {
	case 0, 1:
		a, ae := m.ref.Put(k, v)
		b, be := m.st.Put(ctx, k, v)
		m.same("put "+k, a, ae, b, be)
	case 2:
		d := m.ttl()
		a, ae := m.ref.PutTTL(k, v, d)
		b, be := m.st.PutTTL(ctx, k, v, d)
		m.same("put ttl "+k, a, ae, b, be)
	case 3:
		at := m.now.Add(m.ttl())
		a, ae := m.ref.PutExpiresAt(k, v, at)
		b, be := m.st.PutExpiresAt(ctx, k, v, at)
		m.same("put expires at "+k, a, ae, b, be)
	case 4:
		e, _ := m.ref.GetEntry(k)
		mod := e.Rev
		if m.rng.Intn(3) == 0 {
			mod = revkv.Revision(m.rng.Intn(int(m.ref.Rev()) + 1))
		}
		a, ae := m.ref.CompareAndPut(k, mod, v)
		b, be := m.st.CompareAndPut(ctx, k, mod, v)
		m.same("compare and put "+k, a, ae, b, be)
	case 5, 6, 7:
		m.keyStep(k)
	case 8:
		a := m.ref.PurgeExpired()
		b, err := m.st.PurgeExpired(ctx)
		require.NoError(m.t, err)
		require.Equal(m.t, a, b, "purge")
	case 9:
		m.update(k, v)
	case 10:
		if m.trim && m.rng.Intn(2) == 0 {
			a := m.ref.Trim()
			b, err := m.st.Trim(ctx)
			require.NoError(m.t, err)
			require.Equal(m.t, a, b, "trim")
			break
		}
		m.compact()
	case 11:
		m.now = m.now.Add(-time.Duration(m.rng.Intn(2000)) * time.Millisecond) // the clock goes back
	case 12:
		if len(m.keys) > 20 && m.rng.Intn(4) == 0 {
			m.burst()
		}
	default:
		m.now = m.now.Add(time.Duration(m.rng.Intn(3000)) * time.Millisecond)
	}
	m.times = append(m.times, m.now)
}

// burst gives every key a TTL of at most a second, from both stores, so that
// more expiries fall due together than one commit carries.
func (m *modelRun) burst() {
	for i, k := range m.keys {
		d := time.Duration(1+m.rng.Intn(1000)) * time.Millisecond
		a, ae := m.ref.PutTTL(k, "burst", d)
		b, be := m.sts[i%len(m.sts)].PutTTL(m.ctx, k, "burst", d)
		m.same("burst "+k, a, ae, b, be)
	}
	m.now = m.now.Add(2 * time.Second)
}

// keyStep is a Delete, Expire or Persist of k.
func (m *modelRun) keyStep(k string) {
	ctx := m.ctx
	switch m.rng.Intn(3) {
	case 0:
		a, ae := m.ref.Delete(k)
		b, be := m.st.Delete(ctx, k)
		m.same("delete "+k, a, ae, b, be)
	case 1:
		d := m.ttl()
		a, ae := m.ref.Expire(k, d)
		b, be := m.st.Expire(ctx, k, d)
		m.same("expire "+k, a, ae, b, be)
	default:
		a, ae := m.ref.Persist(k)
		b, be := m.st.Persist(ctx, k)
		m.same("persist "+k, a, ae, b, be)
	}
}

func (m *modelRun) update(k, v string) {
	k2 := m.key()
	fail := m.rng.Intn(4) == 0
	a, ae := m.ref.Update(func(tx *revkv.Txn[string]) error {
		if err := tx.Put(k, v); err != nil {
			return err
		}
		_ = tx.Delete(k2) // may be ErrNotFound: the Txn goes on
		if fail {
			return errors.New("no")
		}
		return nil
	})
	b, be := m.st.Update(m.ctx, func(tx *etcdstore.Txn[string]) error {
		if err := tx.Put(m.ctx, k, v); err != nil {
			return err
		}
		if err := tx.Delete(m.ctx, k2); err != nil && !errors.Is(err, revkv.ErrNotFound) {
			return err
		}
		if fail {
			return errors.New("no")
		}
		return nil
	})
	if fail {
		require.Error(m.t, ae)
		require.Error(m.t, be)
		return
	}
	m.same("update", a, ae, b, be)
}

func (m *modelRun) compact() {
	rev := m.ref.Rev()
	if rev > 0 {
		rev -= revkv.Revision(m.rng.Intn(int(rev)))
	}
	if testing.Verbose() {
		m.t.Logf("compact %d: history of a before: %v", rev, m.ref.History("a"))
	}
	ae := m.ref.Compact(rev)
	be := m.st.Compact(m.ctx, rev)
	if ae == nil && rev > m.compacted {
		m.compacted = rev
	}
	require.Equal(m.t, errKind(ae), errKind(be), "compact %d: %v / %v", rev, ae, be)
}

// check compares every read of every key.
func (m *modelRun) check() {
	ctx := m.ctx
	for _, k := range m.keys {
		for _, e := range m.ref.History(k) {
			m.revTime[e.Rev] = e.Time
		}
	}
	rev, err := m.st.Rev(ctx)
	require.NoError(m.t, err)
	require.Equal(m.t, m.ref.Rev(), rev, "rev")
	fl, err := m.st.Floor(ctx)
	require.NoError(m.t, err)
	if m.ref.Floor() != fl {
		for _, k := range m.keys {
			h, _ := m.st.History(ctx, k)
			m.t.Logf("%q: ref %v\n   store %v", k, m.ref.History(k), h)
		}
	}
	require.Equal(m.t, m.ref.Floor(), fl, "floor")
	n, err := m.st.Len(ctx)
	require.NoError(m.t, err)
	require.Equal(m.t, m.ref.Len(), n, "len")
	for _, k := range m.sample() {
		a, aok := m.ref.GetEntry(k)
		b, bok, err := m.st.GetEntry(ctx, k)
		require.NoError(m.t, err)
		require.Equal(m.t, aok, bok, "get %s", k)
		if aok {
			sameEntry(m.t, a, b, "get "+k)
		}
		at, ae := m.ref.TTL(k)
		bt, be := m.st.TTL(ctx, k)
		require.Equal(m.t, errKind(ae), errKind(be), "ttl %s", k)
		require.Equal(m.t, at, bt, "ttl %s", k)
		ah := m.ref.History(k)
		bh, err := m.st.History(ctx, k)
		require.NoError(m.t, err)
		require.Equal(m.t, len(ah), len(bh), "history %s: %v / %v", k, ah, bh)
		for i := range ah {
			sameEntry(m.t, ah[i], bh[i], "history "+k)
		}
		r := revkv.Revision(m.rng.Intn(int(m.ref.Rev()) + 3))
		av, aok, ae := m.ref.GetAt(k, r)
		bv, bok, be := m.st.GetAt(ctx, k, r)
		require.Equal(m.t, errKind(ae), errKind(be), "get %s at %d: %v / %v", k, r, ae, be)
		require.Equal(m.t, aok, bok, "get %s at %d", k, r)
		require.Equal(m.t, av, bv, "get %s at %d", k, r)
		tm := m.times[m.rng.Intn(len(m.times))].Add(time.Duration(m.rng.Intn(3)-1) * time.Millisecond)
		av, aok, ae = m.ref.GetAsOf(k, tm)
		bv, bok, be = m.st.GetAsOf(ctx, k, tm)
		if m.timeReadAllowed(tm, ae, be) {
			continue
		}
		require.Equal(m.t, errKind(ae), errKind(be), "get %s as of %v: %v / %v", k, tm, ae, be)
		require.Equal(m.t, aok, bok, "get %s as of %v", k, tm)
		require.Equal(m.t, av, bv, "get %s as of %v", k, tm)
	}
	m.checkViews()
}

// checkViews compares a View at a random revision and one as of a random
// time, and the store's Scan.
func (m *modelRun) checkViews() {
	ctx := m.ctx
	var want []revkv.Entry[string]
	for k := range m.ref.Scan("") {
		e, _ := m.ref.GetEntry(k)
		want = append(want, e)
	}
	var got []revkv.Entry[string]
	for e, err := range m.st.Scan(ctx, "") {
		require.NoError(m.t, err)
		got = append(got, e)
	}
	require.Equal(m.t, len(want), len(got), "scan")
	for i := range want {
		sameEntry(m.t, want[i], got[i], "scan")
	}
	r := revkv.Revision(m.rng.Intn(int(m.ref.Rev()) + 2))
	av, ae := m.ref.At(r)
	bv, be := m.st.At(ctx, r)
	require.Equal(m.t, errKind(ae), errKind(be), "at %d: %v / %v", r, ae, be)
	if ae == nil {
		m.sameView(av, bv, fmt.Sprint("at ", r))
	}
	tm := m.times[m.rng.Intn(len(m.times))]
	av, ae = m.ref.AsOf(tm)
	bv, be = m.st.AsOf(ctx, tm)
	if m.timeReadAllowed(tm, ae, be) {
		av.Close()
		return
	}
	require.Equal(m.t, errKind(ae), errKind(be), "as of %v: %v / %v", tm, ae, be)
	if ae == nil {
		m.sameView(av, bv, fmt.Sprint("as of ", tm))
	}
}

// sample returns the keys check reads: all of a few, six of many.
func (m *modelRun) sample() []string {
	if len(m.keys) <= 6 {
		return m.keys
	}
	var ks []string
	for range 6 {
		ks = append(ks, m.key())
	}
	return ks
}

func (m *modelRun) sameView(a *revkv.View[string], b *etcdstore.View[string], msg string) {
	defer a.Close()
	defer b.Close()
	require.Equal(m.t, a.Rev(), b.Rev(), msg)
	var want []revkv.Entry[string]
	for k := range a.Scan("") {
		e, _ := a.Entry(k)
		want = append(want, e)
	}
	var got []revkv.Entry[string]
	for e, err := range b.Scan(m.ctx, "") {
		require.NoError(m.t, err)
		got = append(got, e)
	}
	require.Equal(m.t, len(want), len(got), "%s: %v / %v", msg, want, got)
	for i := range want {
		sameEntry(m.t, want[i], got[i], msg)
	}
	for _, k := range m.sample() {
		av, aok := a.Get(k)
		bv, bok, err := b.Get(m.ctx, k)
		require.NoError(m.t, err)
		if aok != bok {
			ae, _ := a.Entry(k)
			be, _, _ := b.Entry(m.ctx, k)
			h, _ := m.st.History(m.ctx, k)
			m.t.Fatalf("%s (rev %d) get %q: %v / %v; entries %v / %v; history %v", msg, a.Rev(), k, aok, bok, ae, be, h)
		}
		if aok {
			require.Equal(m.t, av, bv, "%s get %s", msg, k)
		}
	}
}

// TestModel checks the etcdstore against the root package's store, step by
// step, over random operations with a clock that jumps and goes back.
// -seed replays a run; -soak runs many more.
func TestModel(t *testing.T) { testModel(t, "model", 1, fewKeys) }

// TestModelMaxHistory is TestModel with WithMaxHistory(2) on both stores,
// and Trim among the operations: the cut at twice the cap on write, the cut
// to the cap by Trim, ErrCompacted below a trimmed key's oldest entry, and
// Floor.
func TestModelMaxHistory(t *testing.T) {
	testModel(t, "maxhistory", 1, fewKeys, revkv.WithMaxHistory(2))
}

// TestModelTwoStores is TestModel with each step sent to one of two stores
// on one prefix, over 40 keys: every store's cached snapshot goes stale
// when the other writes, and more expiries fall due at once than one
// commit carries.
func TestModelTwoStores(t *testing.T) {
	var keys []string
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	testModel(t, "twostores", 2, keys)
}

var fewKeys = []string{"", "a", "a\x00", "ab", "b"}

func testModel(t *testing.T, name string, stores int, keys []string, refOpts ...revkv.Option) {
	_, cli := single(t)
	seed := *modelSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	runs, steps := 3, 150
	if *soak {
		runs, steps = 30, 1000
	}
	for run := range runs {
		seed := seed + int64(run)
		t.Logf("seed %d", seed)
		m := &modelRun{t: t, ctx: ctxT(t), rng: rand.New(rand.NewSource(seed)), now: time.Unix(1_700_000_000, 0),
			keys: keys, trim: len(refOpts) > 0, revTime: map[revkv.Revision]time.Time{}}
		m.ref = revkv.New[string](append(refOpts, revkv.WithClock(m.clock))...)
		opts := []etcdstore.Option{etcdstore.WithClock(m.clock)}
		if m.trim {
			opts = append(opts, etcdstore.WithMaxHistory(2))
		}
		for range stores {
			st, err := etcdstore.Open(m.ctx, cli, fmt.Sprint(name, seed), revkv.StringCodec(), opts...)
			require.NoError(t, err)
			m.sts = append(m.sts, st)
		}
		m.st = m.sts[0]
		for range steps {
			m.step()
			m.check()
		}
		for _, st := range m.sts {
			require.NoError(t, st.Close())
		}
		require.NoError(t, m.ref.Close())
	}
}
