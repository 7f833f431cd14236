package revkv

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/revkv/revkv/chain"
	"github.com/revkv/revkv/vfs"
)

// An export whose revision 2 (above the floor: nothing was compacted) has
// lost its entry, and whose revision 1 was rewritten with its digest
// recomputed: Import accepts it, and the imported store's head digest is
// the original one, so `revkv verify --rev 3 --digest <published>` passes.
func TestRegressImportHidesAndForgesARevision(t *testing.T) {
	m := vfs.NewMem()
	s, err := Open("/a", StringCodec(), WithFS(m))
	if err != nil {
		t.Fatal(err)
	}
	s.Put("a", "1")
	s.Put("secret", "leaked")
	s.Put("c", "3")
	_, want, _ := s.Digest()
	var buf bytes.Buffer
	if err := s.Export(&buf, ""); err != nil {
		t.Fatal(err)
	}
	s.Close()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	// Line of revision 1: forge its value, recompute D(1) from D(0).
	var l1 exportLine
	json.Unmarshal([]byte(lines[1]), &l1)
	forged := "FORGED"
	l1.Value = &forged
	var h chain.Hasher
	x := chain.Rev{Rev: 1, Key: *l1.Key, Op: 1, Value: []byte(forged)}
	var pl exportLine
	_ = pl
	// the time as the export wrote it
	tm, _ := parseTime(l1.Time)
	x.Sec, x.Nsec = tm.Unix(), int32(tm.Nanosecond())
	d1 := h.Next(chain.Digest{}, &x)
	l1.Digest = d1.String()
	b1, _ := json.Marshal(l1)
	lines[1] = string(b1)
	// Line of revision 2: drop its entry, keep its (genuine) digest.
	var l2 exportLine
	json.Unmarshal([]byte(lines[2]), &l2)
	l2 = exportLine{Rev: 2, Time: l2.Time, Digest: l2.Digest}
	b2, _ := json.Marshal(l2)
	lines[2] = string(b2)
	in := strings.Join(lines, "\n") + "\n"
	t.Logf("tampered export:\n%s", in)
	if _, err := Import("/b", StringCodec(), strings.NewReader(in), WithFS(m)); err != nil {
		t.Logf("Import refused it: %v", err)
		return
	}
	b, err := Open("/b", StringCodec(), WithFS(m), WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v, _ := b.Get("a")
	_, got, _ := b.Digest()
	_, secretThere := b.Get("secret")
	t.Errorf("Import accepted it: a=%q, secret present=%v, floor %d, head digest equal to the original: %v", v, secretThere, b.Floor(), got == want)
}

func parseTime(s string) (tm timeT, err error) { return timeParse(s) }
