package revkv_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/chain"
)

// The model of contract §11: annotations and the hash chain.

func (tx *mTxn) Annotate(key, value string) {
	if tx.dead {
		return
	}
	for i := 0; i < len(tx.notes); i += 2 {
		if tx.notes[i] == key {
			tx.notes[i+1] = value
			return
		}
	}
	tx.notes = append(tx.notes, key, value)
}

// sortedPairs returns key, value pairs sorted by key.
func sortedPairs(kv []string) []string {
	idx := make([]int, len(kv)/2)
	for i := range idx {
		idx[i] = 2 * i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if kv[a] < kv[b] {
			return -1
		}
		return 1
	})
	var out []string
	for _, i := range idx {
		out = append(out, kv[i], kv[i+1])
	}
	return out
}

// kept reports whether revision rev still has its entry (History shows it).
func (m *model) kept(rev int64) bool {
	return slices.Contains(m.retained(m.at(rev).key), rev)
}

func (m *model) Annotations(rev revkv.Revision) (map[string]string, error) {
	r := int64(rev)
	switch {
	case r > m.rev():
		return nil, revkv.ErrFutureRevision
	case r < 1 || !m.kept(r):
		return nil, revkv.ErrCompacted
	}
	kv := m.notes[r]
	if kv == nil {
		return nil, nil
	}
	out := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out, nil
}

// digest returns D(rev), computed from every revision the model holds,
// with values as JSONCodec encodes an int.
func (m *model) digest(rev int64) chain.Digest {
	if len(m.chain) == 0 {
		m.chain = []chain.Digest{{}}
	}
	var h chain.Hasher
	for r := int64(len(m.chain)); r <= rev; r++ {
		e := m.at(r)
		link := chain.Rev{Rev: r, Key: e.key, Op: uint8(e.op), Sec: e.time.Unix(), Nsec: int32(e.time.Nanosecond()), Notes: m.notes[r]}
		if e.op == revkv.OpPut {
			link.Value = []byte(strconv.Itoa(e.value))
		}
		if !e.expiresAt.IsZero() {
			link.HasTTL, link.Expires = true, e.expiresAt.UnixNano()
		}
		m.chain = append(m.chain, h.Next(m.chain[r-1], &link))
	}
	return m.chain[rev]
}

// checkAudit compares annotations, and on a directory the chain, with the
// model: every revision's annotations, the head's digest, and D of every
// revision from the floor's predecessor on and of every kept entry below.
func (h *harness) checkAudit() {
	top := h.m.rev()
	for r := max(0, top-300); r <= top+1; r++ {
		want, wantErr := h.m.Annotations(revkv.Revision(r))
		got, gotErr := h.s.Annotations(revkv.Revision(r))
		what := fmt.Sprintf("Annotations(%d)", r)
		h.sameErr(wantErr, gotErr, what)
		h.eq(want, got, what)
	}
	rev, d, err := h.s.Digest()
	if h.dir == "" {
		if !errors.Is(err, errors.ErrUnsupported) {
			h.t.Fatalf("Digest of New's store: %v, want ErrUnsupported\n%s", err, h)
		}
		return
	}
	h.eq(nil, err, "Digest error")
	h.eq(revkv.Revision(top), rev, "Digest revision")
	h.eq(h.m.digest(top), chain.Digest(d), "Digest")
	floor := h.m.floor()
	for r := max(0, top-300); r <= top; r++ {
		got, err := h.s.DigestAt(revkv.Revision(r))
		must := r >= floor-1 || r >= 1 && h.m.kept(r) || r < top && h.m.kept(r+1)
		switch {
		case err == nil:
			h.eq(h.m.digest(r), chain.Digest(got), fmt.Sprintf("DigestAt(%d)", r))
		case must || !errors.Is(err, revkv.ErrCompacted):
			h.t.Fatalf("DigestAt(%d) (floor %d): %v\n%s", r, floor, err, h)
		}
	}
}
