package revkv_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// Ascend and Descend, on the store, a View and a Txn: ordered from any
// key, stopping when the loop does; a Txn's own writes (new keys, deletes)
// merged in; expired keys left out.
func TestAscendDescend(t *testing.T) {
	s := revkv.New[int]()
	defer s.Close()
	for i, k := range []string{"a", "c", "e", "g"} {
		_, err := s.Put(k, i)
		require.NoError(t, err)
	}
	_, err := s.PutTTL("f", 9, time.Nanosecond)
	require.NoError(t, err)
	time.Sleep(time.Millisecond)
	keys := func(seq func(func(string, int) bool), n int) []string {
		var out []string
		for k := range seq {
			if len(out) == n {
				break
			}
			out = append(out, k)
		}
		return out
	}
	require.Equal(t, []string{"c", "e", "g"}, keys(s.Ascend("b"), 9))
	require.Equal(t, []string{"e", "c"}, keys(s.Descend("e"), 2), "f expired")
	require.Equal(t, []string{"g", "e", "c", "a"}, keys(s.Descend(""), 9))
	v, err := s.At(2)
	require.NoError(t, err)
	require.Equal(t, []string{"c", "a"}, keys(v.Descend("z"), 9))
	v.Close()
	_, err = s.Update(func(tx *revkv.Txn[int]) error {
		tx.Put("d", 1)
		tx.Delete("e")
		tx.Put("h", 2)
		require.Equal(t, []string{"c", "d", "g", "h"}, keys(tx.Ascend("b"), 9))
		require.Equal(t, []string{"g", "d", "c"}, keys(tx.Descend("g"), 3))
		require.Equal(t, []string{"h", "g"}, keys(tx.Descend(""), 2))
		return nil
	})
	require.NoError(t, err)
	l := s.Latest()
	defer l.Close()
	require.Equal(t, []string{"a", "c", "d", "g", "h"}, keys(l.Ascend(""), 9))
}
