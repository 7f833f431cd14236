package wal

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStateHeld: a state whose times start above its known ones' carries
// Held; one without decodes with Held = Base, as a snapshot from before
// segments does; a Held outside (Base, Last] is refused.
func TestStateHeld(t *testing.T) {
	st := State{Last: 9, LastTime: Instant{9, 0}, First: Instant{1, 0}, Base: 2, Held: 8,
		Times: []Instant{{8, 5}, {9, 0}}, CompactRev: 2, TrimFloor: 1}
	got, err := DecodeState(AppendState(nil, &st))
	require.NoError(t, err)
	require.Equal(t, &st, got)

	st.Held, st.Times = 0, []Instant{{2, 0}, {3, 0}, {4, 0}, {5, 0}, {6, 0}, {7, 0}, {8, 0}, {9, 0}}
	p := AppendState(nil, &st)
	got, err = DecodeState(p)
	require.NoError(t, err)
	require.Equal(t, int64(2), got.Held, "no Held field: the times start at Base")

	for _, held := range []int64{-1, 1, 10} {
		_, err := DecodeState(binary.AppendVarint(p[:len(p):len(p)], held))
		require.Error(t, err, "Held %d", held)
	}
	_, err = DecodeState(binary.AppendVarint(p[:len(p):len(p)], 9))
	require.NoError(t, err, "Held at Last")

	// Keys follows Held, which is then written even at Base.
	st.Held, st.Keys = 2, 100000
	got, err = DecodeState(AppendState(nil, &st))
	require.NoError(t, err)
	require.Equal(t, &st, got)
	p = binary.AppendVarint(p[:len(p):len(p)], 2)
	for _, keys := range []int64{0, -5} {
		_, err := DecodeState(binary.AppendVarint(p[:len(p):len(p)], keys))
		require.Error(t, err, "Keys %d", keys)
	}
}
