package revkv_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"
)

// txOp is one call inside an Update the harness issues.
type txOp struct {
	kind  int // 0 Put, 1 PutTTL, 2 Delete, 3 Expire, 4 Persist, 5 Get, 6 PutExpiresAt, 7 ExpireAt, 8 Annotate
	key   string
	value int
	ttl   time.Duration
	at    time.Time // 6, 7
}

func (op txOp) String() string {
	name := [...]string{"Put", "PutTTL", "Delete", "Expire", "Persist", "Get", "PutExpiresAt", "ExpireAt", "Annotate"}[op.kind]
	if op.kind >= 6 {
		return fmt.Sprintf("%s(%q, %d, %v)", name, op.key, op.value, op.at)
	}
	return fmt.Sprintf("%s(%q, %d, %v)", name, op.key, op.value, op.ttl)
}

// txWriter is what the model's and the store's transactions have in common.
type txWriter interface {
	Put(string, int) error
	PutTTL(string, int, time.Duration) error
	Delete(string) error
	Expire(string, time.Duration) error
	Persist(string) error
	PutExpiresAt(string, int, time.Time) error
	ExpireAt(string, time.Time) error
	Annotate(key, value string)
}

var errAbort = errors.New("abort")

// txPanic is what a batch that panics panics with.
type txPanic struct{}

// runTx runs ops on tx and records every answer; at stop it gives up with
// errAbort (how 1) or panics (how 2).
func runTx(tx txWriter, get func(string) (revkv.Entry[int], bool), ops []txOp, stop, how int) ([]any, error) {
	var out []any
	for i, op := range ops {
		if i == stop {
			if how == 2 {
				panic(txPanic{})
			}
			return out, errAbort
		}
		var err error
		switch op.kind {
		case 0:
			err = tx.Put(op.key, op.value)
		case 1:
			err = tx.PutTTL(op.key, op.value, op.ttl)
		case 2:
			err = tx.Delete(op.key)
		case 3:
			err = tx.Expire(op.key, op.ttl)
		case 4:
			err = tx.Persist(op.key)
		case 5:
			e, ok := get(op.key)
			out = append(out, e, ok)
			continue
		case 6:
			err = tx.PutExpiresAt(op.key, op.value, op.at)
		case 7:
			err = tx.ExpireAt(op.key, op.at)
		case 8:
			tx.Annotate(op.key, fmt.Sprint(op.value%3))
			continue
		}
		out = append(out, errKind(err))
	}
	if how != 0 && stop == len(ops) {
		if how == 2 {
			panic(txPanic{})
		}
		return out, errAbort
	}
	return out, nil
}

// errKind is the sentinel err wraps (nil for nil), so answers compare.
func errKind(err error) error {
	for _, s := range []error{revkv.ErrNotFound, revkv.ErrNoTTL, revkv.ErrInvalidTTL, revkv.ErrClosed} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// update issues an Update of 1-8 random calls to the model and the store;
// a quarter of them give up with an error and an eighth panic, at a random
// call or after the last. Every call's answer, the reads inside included,
// and Update's own must agree; a Txn kept past its Update answers ErrClosed.
func (h *harness) update() {
	ops := make([]txOp, 1+h.rng.Intn(8))
	for i := range ops {
		ops[i] = txOp{kind: h.rng.Intn(9), key: h.key(), value: h.rng.Intn(1000), ttl: h.ttl(), at: h.expiresAt()}
	}
	how, stop := 0, len(ops)
	switch r := h.rng.Intn(8); {
	case r < 2:
		how, stop = 1, h.rng.Intn(len(ops)+1)
	case r < 3:
		how, stop = 2, h.rng.Intn(len(ops)+1)
	}
	what := fmt.Sprintf("Update(%v, how %d at %d)", ops, how, stop)

	var (
		wantOut, gotOut []any
		mtx             *mTxn
		stx             *revkv.Txn[int]
	)
	wr, we, wp := catch(func() (revkv.Revision, error) {
		return h.m.Update(func(tx *mTxn) (err error) {
			mtx = tx
			wantOut, err = runTx(tx, tx.Get, ops, stop, how)
			return err
		})
	})
	gr, ge, gp := catch(func() (revkv.Revision, error) {
		return h.s.Update(func(tx *revkv.Txn[int]) (err error) {
			stx = tx
			gotOut, err = runTx(tx, tx.GetEntry, ops, stop, how)
			return err
		})
	})
	h.did("%s → %d %v %v", what, wr, we, wp)
	h.eq(wp, gp, what+": panic")
	h.eq(wantOut, gotOut, what+": answers inside")
	h.writeResult(what, wr, we, gr, ge)
	if h.rng.Intn(4) == 0 && stx != nil {
		h.sameErr(mtx.Put("a", 1), stx.Put("a", 1), "Txn.Put after Update")
		h.sameErr(revkv.ErrClosed, stx.Delete("a"), "Txn.Delete after Update")
		_, ok := stx.Get("a")
		h.eq(false, ok, "Txn.Get after Update")
	}
}

// catch runs f and returns what it returned, or what it panicked with.
func catch(f func() (revkv.Revision, error)) (rev revkv.Revision, err error, panicked any) {
	defer func() { panicked = recover() }()
	rev, err = f()
	return rev, err, nil
}

// changes compares Changes over a random range and prefix with the model's
// list of revisions, the error and its restart revision included.
func (h *harness) changes() {
	p := testPrefixes[h.rng.Intn(len(testPrefixes))]
	from, to := h.rev(), h.rev()
	if from > to && h.rng.Intn(3) > 0 {
		from, to = to, from
	}
	want, wantErr := h.m.Changes(p, from, to)
	var got []revkv.Entry[int]
	var gotErr error
	for e, err := range h.s.Changes(p, from, to) {
		if err != nil {
			gotErr = err
			break
		}
		got = append(got, e)
	}
	what := fmt.Sprintf("Changes(%q, %d, %d)", p, from, to)
	h.did("%s → %d entries, %v", what, len(want), wantErr)
	h.sameErr(errKindRev(wantErr), gotErr, what)
	if wantErr != nil {
		var oe *revkv.OpError
		if errors.As(wantErr, &oe) {
			var ge *revkv.OpError
			require.True(h.t, errors.As(gotErr, &ge), "%s: %v", what, gotErr)
			h.eq(oe.Rev, ge.Rev, what+": restart revision")
			h.followAdvice(p, ge.Rev, to)
		}
		return
	}
	h.eq(want, got, what)
}

// followAdvice restarts from the revision an ErrCompacted named, with
// nothing compacted or trimmed since: that must not fail again (§9.3), or a
// consumer that follows the advice loops forever.
func (h *harness) followAdvice(p string, from, to revkv.Revision) {
	for _, err := range h.s.Changes(p, from, to) {
		require.NoError(h.t, err, "Changes(%q, %d, %d): restarting where ErrCompacted said fails again\n%s", p, from, to, h)
	}
}

func errKindRev(err error) error {
	var oe *revkv.OpError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}
