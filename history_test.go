package revkv_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// TestHistoryRangeTrimmedWhileStreaming compacts the history under a
// HistoryRange loop from its own body: the loop reports the entries it
// lost as ErrCompacted, naming where the rest is whole, then goes on.
func TestHistoryRangeTrimmedWhileStreaming(t *testing.T) {
	s := revkv.New[int]()
	defer s.Close()
	for i := 1; i <= 1000; i++ {
		_, err := s.Put("k", i)
		require.NoError(t, err)
	}
	var revs []revkv.Revision
	var errs []error
	for e, err := range s.HistoryRange("k", 0, 0) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		revs = append(revs, e.Rev)
		if e.Rev == 10 {
			require.NoError(t, s.Compact(600))
			_, err := s.Put("k", -1) // the loop body may write: above the range
			require.NoError(t, err)
		}
	}
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], revkv.ErrCompacted)
	var oe *revkv.OpError
	require.True(t, errors.As(errs[0], &oe))
	require.Equal(t, revkv.Revision(600), oe.Rev, "the error names the revision the rest is whole from")
	require.Equal(t, revkv.Revision(1000), revs[len(revs)-1], "the range ends at the revision current when it began")
	require.Equal(t, 256+401, len(revs), "the first chunk, then 600..1000")
	for i := 1; i < len(revs); i++ {
		require.Less(t, revs[i-1], revs[i])
	}
}

func TestHistoryRangeBounds(t *testing.T) {
	s := revkv.New[int]()
	defer s.Close()
	for i := 1; i <= 600; i++ {
		_, err := s.Put([]string{"a", "b"}[i%2], i)
		require.NoError(t, err)
	}
	count := func(key string, from, to revkv.Revision) (n int, errs []error) {
		for e, err := range s.HistoryRange(key, from, to) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			require.Equal(t, key, e.Key)
			require.True(t, e.Rev >= from && (to <= 0 || e.Rev <= to), "entry %d outside [%d, %d]", e.Rev, from, to)
			n++
		}
		return n, errs
	}
	n, errs := count("a", 0, 0)
	require.Equal(t, 300, n)
	require.Empty(t, errs)
	n, _ = count("a", 100, 500) // 100, 102, ..., 500 across two chunks' seams
	require.Equal(t, 201, n)
	n, errs = count("a", 9, 4)
	require.Zero(t, n, "from > to is empty")
	require.Empty(t, errs)
	n, errs = count("nobody", 0, 0)
	require.Zero(t, n)
	require.Empty(t, errs)
	n, errs = count("a", 1, 601)
	require.Zero(t, n)
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], revkv.ErrFutureRevision)

	stopped := 0
	for range s.HistoryRange("a", 0, 0) {
		if stopped++; stopped == 300 {
			break // a break at a chunk's last entry must not yield again
		}
	}
	require.Equal(t, 300, stopped)
}

func TestViewErr(t *testing.T) {
	s := revkv.New[int]()
	defer s.Close()
	_, err := s.Put("k", 1)
	require.NoError(t, err)
	v, err := s.At(1)
	require.NoError(t, err)
	_, ok := v.Get("k")
	require.True(t, ok)
	require.NoError(t, v.Err(), "a view read from whole history")
	v.Close()
	_, ok = v.Get("k")
	require.False(t, ok, "a closed view answers nothing")
	require.ErrorIs(t, v.Err(), revkv.ErrClosed, "and says why")
	require.Equal(t, "revkv: read view at 1: store is closed", v.Err().Error())
}
