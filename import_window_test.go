package revkv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/wal"
)

// SetImportWindow makes Import seal a segment every n entries (at the
// first line after them that may end one), for the tests of package
// revkv_test, and returns a function that puts the default back.
func SetImportWindow(n int) func() {
	old := importWindowEntries
	importWindowEntries = n
	return func() { importWindowEntries = old }
}

// TestImportKeyRecordIsSeal: what Import keeps of a key in its snapshot
// is what a seal of all history leaves in the key's log (revlog.Log.Seal),
// for every history of up to six puts, deletes and expiries.
func TestImportKeyRecordIsSeal(t *testing.T) {
	ops := []revlog.Op{revlog.Put, revlog.Delete, revlog.Expire}
	for n := 1; n <= 6; n++ {
		for code := 0; code < pow(3, n); code++ {
			var l revlog.Log[string]
			k := importKey{key: "k", first: 10}
			c := code
			for i := range n {
				op := ops[c%3]
				c /= 3
				rev := int64(10 + 3*i)
				l.Append(revlog.Entry[string]{Rev: rev, Op: op})
				k.n++
				k.tail[0], k.tail[1] = k.tail[1], wal.Entry{Rev: rev, Op: uint8(op)}
			}
			l.Seal(int64(10 + 3*n))
			r := k.record()
			var kept, got []int64
			for _, e := range l.Entries() {
				kept = append(kept, e.Rev)
			}
			for _, e := range r.Entries {
				got = append(got, e.Rev)
			}
			require.Equal(t, kept, got, "history %d of %d entries", code, n)
			require.Equal(t, l.SealedBelow() > 0, r.Sealed, "history %d of %d entries", code, n)
			require.Equal(t, l.SealedFrom(), map[bool]int64{true: r.Lo}[r.Sealed], "history %d of %d entries", code, n)
		}
	}
}

func pow(b, e int) int {
	n := 1
	for range e {
		n *= b
	}
	return n
}
