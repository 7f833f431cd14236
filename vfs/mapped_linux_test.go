package vfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A mapped file whose file system refuses fallocate or mmap at a growth,
// after writes that left room, cuts the room and goes on with write(2)
// where the mapping left off: no zeros between the two, and truncation
// and later writes as before.
func TestMappedGoesPlain(t *testing.T) {
	refuse := fmt.Errorf("refused: %w", syscall.EOPNOTSUPP)
	for name, set := range map[string]func(){
		"fallocate": func() {
			fallocate = func(int, uint32, int64, int64) error { return refuse }
		},
		"mmap": func() {
			mmap = func(int, int64, int, int, int) ([]byte, error) { return nil, refuse }
		},
	} {
		t.Run(name, func(t *testing.T) {
			oldF, oldM := fallocate, mmap
			defer func() { fallocate, mmap = oldF, oldM }()
			path := filepath.Join(t.TempDir(), "log")
			f, err := OS.Create(path)
			require.NoError(t, err)
			mf := MapAppend(f, 0).(*mappedFile)
			var want []byte
			write := func(b []byte) {
				_, err := mf.Write(b)
				require.NoError(t, err)
				want = append(want, b...)
			}
			write([]byte("mapped one;"))
			require.NotNil(t, mf.m)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.Greater(t, fi.Size(), int64(len(want)), "room past the writes")
			set()
			write(bytes.Repeat([]byte("x"), 2*RoomAlign)) // past the room: a growth, refused
			require.True(t, mf.plain)
			write([]byte("plain three;"))
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "the file is the writes, no room between")
			require.NoError(t, mf.Truncate(5))
			want = want[:5]
			write([]byte("after the cut"))
			require.NoError(t, mf.Sync())
			require.NoError(t, mf.Close())
			got, err = os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "%q", got)
		})
	}
}
