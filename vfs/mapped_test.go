package vfs_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

// A file written through MapAppend holds what was written, in order, across
// writes of every size, syncs, truncations and reopens: followed by zeros
// while it is open (the room allocated ahead, on Linux), and by nothing
// once closed.
func TestMapAppend(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) (vfs.FS, string){
		"os":  func(t *testing.T) (vfs.FS, string) { return vfs.OS, t.TempDir() },
		"mem": func(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "/db" },
	} {
		t.Run(name, func(t *testing.T) {
			fsys, dir := mk(t)
			require.NoError(t, fsys.MkdirAll(dir))
			path := filepath.Join(dir, "log")
			rng := rand.New(rand.NewPCG(1, 2))
			var model []byte
			f, err := fsys.Create(path)
			require.NoError(t, err)
			f = vfs.MapAppend(f, 0)
			check := func(open bool, step int) {
				got, err := readFile(fsys, path)
				require.NoError(t, err)
				require.GreaterOrEqual(t, len(got), len(model), "step %d", step)
				require.True(t, bytes.Equal(got[:len(model)], model), "step %d: the bytes written", step)
				if !open {
					require.Len(t, got, len(model), "step %d: a closed file ends at its last write", step)
				}
				require.Zero(t, len(bytes.TrimLeft(got[len(model):], "\x00")), "step %d: only zeros after the last write", step)
				require.True(t, len(got) == len(model) || len(got)%vfs.RoomAlign == 0, "step %d: room to a multiple of RoomAlign", step)
			}
			for step := range 400 {
				switch r := rng.IntN(20); {
				case r < 14:
					n := rng.IntN(300)
					if r == 0 {
						n = rng.IntN(600 << 10) // past a step of the room, and past the largest
					}
					b := make([]byte, n)
					for i := range b {
						b[i] = byte(1 + rng.IntN(255))
					}
					k, err := f.Write(b)
					require.NoError(t, err)
					require.Equal(t, n, k)
					model = append(model, b...)
				case r < 16:
					require.NoError(t, f.Sync())
				case r < 18:
					n := rng.IntN(len(model) + 1)
					require.NoError(t, f.Truncate(int64(n)))
					model = model[:n]
				default:
					require.NoError(t, f.Close())
					check(false, step)
					f, err = fsys.OpenAppend(path)
					require.NoError(t, err)
					f = vfs.MapAppend(f, int64(len(model)))
				}
				check(true, step)
			}
			require.NoError(t, f.Close())
			check(false, -1)
		})
	}
}

// A fault while writing through the mapping is an error, not a crash:
// here the file is cut under the mapping by another handle, so that the
// page written to lies past its end (SIGBUS).
func TestMapAppendFault(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the mapping is Linux's")
	}
	path := filepath.Join(t.TempDir(), "log")
	f, err := vfs.OS.Create(path)
	require.NoError(t, err)
	f = vfs.MapAppend(f, 0)
	_, err = f.Write([]byte("first"))
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, 0))
	_, err = f.Write([]byte("second"))
	require.ErrorContains(t, err, "through its mapping")
	f.Close()
}

// A process killed right after its writes returned loses none of them:
// they were in the operating system's hands. The child writes numbered
// records through MapAppend, says so, and kills itself with SIGKILL,
// neither syncing nor closing the file.
func TestMapAppendKill(t *testing.T) {
	if path := os.Getenv("VFS_MAP_KILL"); path != "" {
		f, err := vfs.OS.Create(path)
		if err != nil {
			panic(err)
		}
		f = vfs.MapAppend(f, 0)
		for i := range 5000 {
			if _, err := f.Write(record(i)); err != nil {
				panic(err)
			}
		}
		os.Stdout.WriteString("5000\n")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	path := filepath.Join(t.TempDir(), "log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestMapAppendKill$")
	cmd.Env = append(os.Environ(), "VFS_MAP_KILL="+path)
	out, err := cmd.Output()
	require.Error(t, err, "the child kills itself")
	require.Equal(t, "5000\n", string(out))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	var want []byte
	for i := range 5000 {
		want = append(want, record(i)...)
	}
	require.GreaterOrEqual(t, len(got), len(want))
	require.True(t, bytes.Equal(got[:len(want)], want), "every write the child made survives it")
	require.Zero(t, len(bytes.TrimLeft(got[len(want):], "\x00")), "zeros after them")
}

func record(i int) []byte { return []byte("record " + strconv.Itoa(i) + ";") }
