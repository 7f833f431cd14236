package revkv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/revkv/revkv/vfs"
)

// A three-line export (header and one line, no entries) of a revision
// far away: Import checks it, writes a snapshot, and its Open builds the
// index of revisions from 1, one pointer a revision.
func TestRegressImportHugeRevision(t *testing.T) {
	const r = int64(1) << 50
	zero := strings.Repeat("0", 64)
	in := fmt.Sprintf(`{"revkv_export":1,"rev":%d,"time":"2026-01-01T00:00:00Z","first":"2026-01-01T00:00:00Z","base":%d,"floor":0}
{"rev":%d,"time":"2026-01-01T00:00:00Z","prev":"%s","digest":"%s"}
`, r, r, r, zero, zero)
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("Import panicked: %v\n%s", p, debugStack())
		}
	}()
	_, err := Import("/b", StringCodec(), strings.NewReader(in), WithFS(vfs.NewMem()))
	if err == nil {
		t.Fatal("Import took a store whose times start at revision 2^50, above its floor 0")
	}
}
