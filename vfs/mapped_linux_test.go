package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A mapped file that goes plain (the file system refused fallocate or
// mmap) mid-stream goes on with write(2) where the mapping left off: no
// room, no gap, and truncation and later writes as before.
func TestMappedGoesPlain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	f, err := OS.Create(path)
	require.NoError(t, err)
	mf := MapAppend(f, 0).(*mappedFile)
	var want []byte
	write := func(s string) {
		_, err := mf.Write([]byte(s))
		require.NoError(t, err)
		want = append(want, s...)
	}
	write("mapped one;")
	write("mapped two;")
	require.NotNil(t, mf.m)
	// What grow does when fallocate or mmap fails.
	require.NoError(t, mf.unmap())
	require.NoError(t, mf.goPlain())
	write("plain three;")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, mf.Truncate(5))
	want = want[:5]
	write("after the cut")
	require.NoError(t, mf.Sync())
	require.NoError(t, mf.Close())
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "%q", got)
}
