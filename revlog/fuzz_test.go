package revlog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// refLog is the reference for a Log: every entry ever appended, and where the
// retained ones start.
type refLog struct {
	all     []Entry[int]
	from    int  // all[from:] are retained
	trimmed bool // entries were dropped since the log was last empty
}

func (r *refLog) retained() []Entry[int] { return r.all[r.from:] }

// lookup is the newest retained entry matching ok, with the Compacted rule:
// reads the dropped entries would decide are Compacted.
func (r *refLog) lookup(ok func(Entry[int]) bool, below func(Entry[int]) bool) (Entry[int], Status) {
	ret := r.retained()
	if r.trimmed && len(ret) > 0 && below(ret[0]) {
		return Entry[int]{}, Compacted
	}
	for i := len(ret) - 1; i >= 0; i-- {
		if ok(ret[i]) {
			return ret[i], Found
		}
	}
	if r.trimmed {
		return Entry[int]{}, Compacted
	}
	return Entry[int]{}, Absent
}

// FuzzRevlog decodes its input into appends (with equal times and all three
// ops), lookups by revision and by time, cuts and trims, and checks the Log
// against refLog after every step.
func FuzzRevlog(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 0, 1, 3, 2, 4, 3, 2, 4, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 5, 4, 0, 1, 9, 3, 9, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var (
			l   Log[int]
			ref refLog
			rev int64
			sec int
		)
		for i := 0; i+1 < len(data); i += 2 {
			op, arg := data[i]%5, int64(data[i+1])
			at := func(s int64) time.Time { return t0.Add(time.Duration(s) * time.Second) }
			switch op {
			case 0: // append: revisions skip (other keys), times may repeat
				rev += 1 + arg%3
				sec += int(arg/3) % 3
				e := Entry[int]{Rev: rev, Op: Op(1 + arg%3), Value: int(arg)}
				e.SetTime(at(int64(sec)), nil)
				if e.Op != Put {
					e.Value = 0
				} else if arg%2 == 0 {
					e.Expires, e.HasTTL = at(int64(sec)+1).UnixNano(), true
				}
				l.Append(e)
				ref.all = append(ref.all, e)
			case 1: // At
				q := arg - 1
				e, st := l.At(q)
				we, wst := ref.lookup(func(e Entry[int]) bool { return e.Rev <= q }, func(e Entry[int]) bool { return q < e.Rev })
				require.Equal(t, wst, st, "At(%d)", q)
				require.Equal(t, we, e, "At(%d)", q)
			case 2: // AsOf, sometimes with unpublished entries above maxRev
				q, maxRev := at(arg%8-1), rev-arg%3
				e, st := l.AsOf(q, maxRev)
				we, wst := ref.lookup(func(e Entry[int]) bool { return !e.Time(nil).After(q) && e.Rev <= maxRev },
					func(e Entry[int]) bool { return q.Before(e.Time(nil)) })
				require.Equal(t, wst, st, "AsOf(%v, %d)", q, maxRev)
				require.Equal(t, we, e, "AsOf(%v, %d)", q, maxRev)
			case 3: // CutBefore
				q := arg
				n, empty := l.CutBefore(q)
				ret := ref.retained()
				keep := -1
				for j, e := range ret {
					if e.Rev <= q {
						keep = j
					}
				}
				wn, wempty := 0, false
				switch {
				case keep < 0:
				case keep == len(ret)-1 && ret[keep].Op != Put && ret[keep].Rev < q: // a tombstone at q stays
					wn, wempty = len(ret), true
					ref.from, ref.trimmed = len(ref.all), false
				default:
					wn = keep
					if keep > 0 {
						ref.from += keep
						ref.trimmed = true
					}
				}
				require.Equal(t, wn, n, "CutBefore(%d)", q)
				require.Equal(t, wempty, empty, "CutBefore(%d)", q)
			case 4: // TrimTo with a pin
				n, pin := int(arg%4), rev-arg%7
				if arg%5 == 0 {
					pin = 1 << 62
				}
				got := l.TrimTo(n, pin)
				ret := ref.retained()
				drop := len(ret) - max(n, 1)
				seen := -1
				for j, e := range ret {
					if e.Rev <= pin {
						seen = j
					}
				}
				if seen < drop {
					drop = max(seen, 0)
				}
				drop = max(drop, 0)
				if drop > 0 {
					ref.from += drop
					ref.trimmed = true
				}
				require.Equal(t, drop, got, "TrimTo(%d, %d)", n, pin)
			}
			require.Equal(t, len(ref.retained()), l.Len())
			checkRevs(t, &l)
			if l.Len() > 0 {
				require.Equal(t, ref.retained(), l.Entries())
			}
			lo := int64(0)
			if ref.trimmed && len(ref.retained()) > 0 {
				lo = ref.retained()[0].Rev
			}
			require.Equal(t, lo, l.Lo())
		}
	})
}
