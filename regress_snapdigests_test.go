package revkv

import (
	"encoding/binary"
	"os"
	"os/exec"
	"testing"

	"github.com/revkv/revkv/vfs"
	"github.com/revkv/revkv/wal"
)

// A snapshot whose digests record has an overflowing count: Open's
// snapshot reader goroutine panics, which no recover catches: the process
// dies (run in a child process).
func TestRegressOpenHostileDigestsRecord(t *testing.T) {
	if os.Getenv("REVIEW_CHILD") == "1" {
		fs := vfs.NewMem()
		fs.MkdirAll("/d")
		st := wal.State{Last: 1, Base: 1, Times: []wal.Instant{{Sec: 1}}, LastTime: wal.Instant{Sec: 1}, First: wal.Instant{Sec: 1}}
		w, err := wal.CreateSnapshot(fs, "/d", 1, wal.AppendState(nil, &st))
		if err != nil {
			t.Fatal(err)
		}
		p := binary.AppendVarint(nil, 0)
		p = binary.AppendUvarint(p, 1<<59+2)
		p = append(p, make([]byte, 64)...)
		w.Add(wal.KindDigests, p)
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		defer func() { recover() }() // Open's caller cannot catch it
		_, err = Open("/d", StringCodec(), WithFS(fs))
		t.Logf("Open: %v", err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=TestRegressOpenHostileDigestsRecord$", "-test.v")
	cmd.Env = append(os.Environ(), "REVIEW_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		n := len(out)
		if n > 1500 {
			out = out[:1500]
		}
		t.Errorf("the process died: %v\n%s", err, out)
	}
}
