package revkv_test

import (
	"fmt"
	"iter"
	"time"

	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"
)

func (h *harness) getAt(k string, r revkv.Revision) {
	wv, wok, we := h.m.GetAt(k, r)
	gv, gok, ge := h.s.GetAt(k, r)
	h.sameRead(func() string { return fmt.Sprintf("GetAt(%q, %d)", k, r) }, wv, wok, we, gv, gok, ge)
}

func (h *harness) getAsOf(k string, at time.Time) {
	wv, wok, we := h.m.GetAsOf(k, at)
	gv, gok, ge := h.s.GetAsOf(k, at)
	h.sameRead(func() string { return fmt.Sprintf("GetAsOf(%q, %v)", k, at) }, wv, wok, we, gv, gok, ge)
}

// sameRead compares a read of the past by the model (w) and the store (g);
// what names the read, and is formatted only on a mismatch.
func (h *harness) sameRead(what func() string, wv int, wok bool, we error, gv int, gok bool, ge error) {
	if sameErr(ge, we) && wv == gv && wok == gok {
		return
	}
	h.sameErr(we, ge, what())
	h.eq([2]any{wv, wok}, [2]any{gv, gok}, what())
}

func (h *harness) openView() {
	var (
		mv     *mView
		sv     *revkv.View[int]
		we, ge error
		what   string
	)
	if h.rng.Intn(2) == 0 {
		r := h.rev()
		what = fmt.Sprintf("At(%d)", r)
		mv, we = h.m.At(r)
		sv, ge = h.s.At(r)
	} else {
		at := h.when()
		what = fmt.Sprintf("AsOf(%v)", at)
		mv, we = h.m.AsOf(at)
		sv, ge = h.s.AsOf(at)
	}
	h.did("%s → %v", what, we)
	h.sameErr(we, ge, what)
	if we != nil {
		return
	}
	h.eq(revkv.Revision(mv.rev), sv.Rev(), what+": Rev")
	h.views = append(h.views, hview{sv: sv, mv: mv})
	if len(h.views) > 4 {
		h.closeView()
	}
}

func (h *harness) closeView() {
	if len(h.views) == 0 {
		return
	}
	i := h.rng.Intn(len(h.views))
	v := h.views[i]
	h.did("View(%d).Close()", v.mv.rev)
	h.m.CloseView(v.mv)
	v.sv.Close()
	v.sv.Close() // idempotent
	_, ok := v.sv.Get(testKeys[0])
	h.eq(false, ok, "Get on a closed view")
	h.eq(0, v.sv.Len(), "Len on a closed view")
	h.views = append(h.views[:i], h.views[i+1:]...)
}

// scanWhileWriting deletes or rewrites every key a Scan yields, from inside
// the loop: the Scan must yield what it would have without the writes.
func (h *harness) scanWhileWriting() {
	p := testPrefixes[h.rng.Intn(len(testPrefixes))]
	want := h.m.Scan(p)
	h.did("Scan(%q) with writes inside → %v", p, want)
	pin := h.m.open(h.m.rev(), h.m.now()) // a Scan pins its revision while it runs
	defer h.m.CloseView(pin)
	var got []kv
	for k, v := range h.s.Scan(p) {
		got = append(got, kv{k, v})
		if h.rng.Intn(2) == 0 {
			wr, we := h.m.Delete(k)
			gr, ge := h.s.Delete(k)
			h.writeResult(fmt.Sprintf("  Delete(%q) inside Scan", k), wr, we, gr, ge)
		} else {
			wr, we := h.m.Put(k, v+1)
			gr, ge := h.s.Put(k, v+1)
			h.writeResult(fmt.Sprintf("  Put(%q) inside Scan", k), wr, we, gr, ge)
		}
	}
	h.eq(want, got, fmt.Sprintf("Scan(%q) with writes inside", p))
}

func collect(seq iter.Seq2[string, int]) []kv {
	var out []kv
	for k, v := range seq {
		out = append(out, kv{k, v})
	}
	return out
}

// check compares the whole visible state; full also sweeps GetAt over every
// revision and GetAsOf over every revision's time, and every open view.
func (h *harness) check(full bool) {
	h.pullWatches() // first: the checks below may return early
	require.NoError(h.t, h.s.Check(), "%s", h)
	h.eq(revkv.Revision(h.m.rev()), h.s.Rev(), "Rev")
	h.eq(revkv.Revision(h.m.floor()), h.s.Floor(), "Floor")
	h.eq(h.m.Len(), h.s.Len(), "Len")
	h.eq(h.m.Scan(""), collect(h.s.Scan("")), "Scan(\"\")")
	for _, k := range testKeys {
		// Compared with == first: these run after every step, and boxing
		// them for reflect.DeepEqual was most of a fuzz input's time.
		if wv, wok := h.m.Get(k); true {
			if gv, gok := h.s.Get(k); wv != gv || wok != gok {
				h.eq([2]any{wv, wok}, [2]any{gv, gok}, "Get "+k)
			}
		}
		we, wok := h.m.GetEntry(k)
		if ge, gok := h.s.GetEntry(k); we != ge || wok != gok {
			h.eq(we, ge, "GetEntry "+k)
			h.eq(wok, gok, "GetEntry ok "+k)
		}
	}
	if !full {
		return
	}
	h.checkAudit()
	top := h.m.rev()
	lowest := max(int64(-1), top-300)
	for _, k := range testKeys {
		h.eq(h.m.History(k), h.s.History(k), "History "+k)
		for r := lowest; r <= top+1; r++ {
			h.getAt(k, revkv.Revision(r))
		}
		for r := max(1, lowest); r <= top; r++ {
			at := h.m.at(r).time
			h.getAsOf(k, at)
			h.getAsOf(k, at.Add(-1))
		}
	}
	for _, v := range h.views {
		what := fmt.Sprintf("view at %d/%v", v.mv.rev, v.mv.t)
		h.eq(revkv.Revision(v.mv.rev), v.sv.Rev(), what+": Rev")
		n := 0
		for _, k := range testKeys {
			we, wok := h.m.ViewGet(v.mv, k)
			ge, gok := v.sv.Entry(k)
			h.eq(we, ge, what+": Entry "+k)
			h.eq(wok, gok, what+": Entry ok "+k)
			if wok {
				n++
			}
		}
		h.eq(n, v.sv.Len(), what+": Len")
		for _, p := range testPrefixes {
			h.eq(h.m.scanAt(v.mv.rev, v.mv.t, p), collect(v.sv.Scan(p)), what+": Scan "+p)
		}
	}
}
