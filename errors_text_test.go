package revkv_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// TestErrorTimesAreRFC3339: a time in an error's text is RFC 3339, with
// its nanoseconds and its offset, never Go's default format with its
// monotonic clock reading; and the text says "revkv:" once.
func TestErrorTimesAreRFC3339(t *testing.T) {
	s := revkv.New[string]()
	defer s.Close()
	_, err := s.Put("k", "v")
	require.NoError(t, err)
	future := time.Now().Add(time.Hour) // carries a monotonic reading
	for _, err := range []error{
		func() error { _, _, err := s.GetAsOf("k", future); return err }(),
		func() error { _, err := s.AsOf(future); return err }(),
	} {
		require.ErrorIs(t, err, revkv.ErrFutureRevision)
		msg := err.Error()
		require.NotContains(t, msg, "m=+", msg)
		require.NotContains(t, msg, " +0000 UTC", msg)
		require.Contains(t, msg, future.Format(time.RFC3339Nano), msg)
		require.Equal(t, 1, strings.Count(msg, "revkv:"), msg)
	}
}

// TestCompactedNamesTheOldest: a read below what history keeps is
// ErrCompacted naming the oldest revision to ask for instead, which
// answers: after a Compact, and for a key whose own history was trimmed
// above the floor.
func TestCompactedNamesTheOldest(t *testing.T) {
	s := revkv.New[string](revkv.WithMaxHistory(2))
	defer s.Close()
	for _, k := range []string{"x", "y", "x", "y", "x", "x"} { // x at 1, 3, 5, 6: keeps 5, 6
		_, err := s.Put(k, "v")
		require.NoError(t, err)
	}
	s.Trim()
	require.NoError(t, s.Compact(2))
	for _, tc := range []struct {
		key string
		at  revkv.Revision
	}{{"y", 1}, {"x", 1}, {"x", 4}} {
		_, _, err := s.GetAt(tc.key, tc.at)
		require.ErrorIs(t, err, revkv.ErrCompacted)
		var oldest revkv.Revision
		_, serr := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "(oldest readable is "):], "(oldest readable is %d)", &oldest)
		require.NoError(t, serr, err.Error())
		_, _, err = s.GetAt(tc.key, oldest)
		require.NoError(t, err, "%s at the oldest it named", tc.key)
		_, _, err = s.GetAt(tc.key, oldest-1)
		require.ErrorIs(t, err, revkv.ErrCompacted, "%s: %d is the oldest", tc.key, oldest)
	}
	_, _, err := s.GetAt("x", 4)
	require.ErrorContains(t, err, "(oldest readable is 5)", "x keeps 5 and 6")
}

// TestHistoryNotes: HistoryNotes yields History's entries, each with its
// revision's annotations, as Annotations answers them.
func TestHistoryNotes(t *testing.T) {
	s := revkv.New[string]()
	defer s.Close()
	_, err := s.Put("cfg", "1")
	require.NoError(t, err)
	_, err = s.Update(func(tx *revkv.Txn[string]) error {
		tx.Annotate("who", "ana")
		tx.Annotate("why", "INC-7")
		return tx.Put("cfg", "2")
	})
	require.NoError(t, err)
	_, err = s.Delete("cfg")
	require.NoError(t, err)
	var revs []revkv.Revision
	var notes []map[string]string
	for e, m := range s.HistoryNotes("cfg") {
		revs = append(revs, e.Rev)
		notes = append(notes, m)
		want, err := s.Annotations(e.Rev)
		require.NoError(t, err)
		require.Equal(t, want, m)
	}
	require.Equal(t, []revkv.Revision{1, 2, 3}, revs)
	require.Equal(t, []map[string]string{nil, {"who": "ana", "why": "INC-7"}, nil}, notes)
	for range s.HistoryNotes("never") {
		t.Fatal("a key never written has no history")
	}
	for e := range s.HistoryNotes("cfg") {
		require.Equal(t, revkv.Revision(1), e.Rev)
		break
	}
}
