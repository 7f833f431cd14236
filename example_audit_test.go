package revkv_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
)

// auditStore is a store on a directory in memory with a fixed clock, with
// three revisions: two puts, then an annotated Update.
func auditStore(fs *vfs.Mem) *revkv.Store[string] {
	now, advance := fakeClock()
	s, err := revkv.Open("trail", revkv.StringCodec(), revkv.WithFS(fs), revkv.WithClock(now))
	if err != nil {
		panic(err)
	}
	s.Put("config/api", "100")
	advance(time.Minute)
	s.Put("config/pool", "20")
	advance(time.Minute)
	s.Update(func(tx *revkv.Txn[string]) error {
		tx.Annotate("who", "sam")
		tx.Annotate("why", "INC-7")
		return tx.Put("config/api", "500")
	})
	return s
}

// Annotate says who made an Update's changes and why; Annotations answers
// it for a revision, and HistoryNotes gives a key's history with them.
func ExampleTxn_Annotate() {
	s := revkv.New[string]()
	defer s.Close()
	s.Put("config/api", "100")
	rev, _ := s.Update(func(tx *revkv.Txn[string]) error {
		tx.Annotate("who", "sam")
		tx.Annotate("why", "INC-7: partner traffic spike")
		return tx.Put("config/api", "500")
	})
	notes, _ := s.Annotations(rev)
	fmt.Println(rev, notes["who"], notes["why"])
	for e, notes := range s.HistoryNotes("config/api") {
		fmt.Println(e.Rev, e.Value, notes)
	}
	// Output:
	// 2 sam INC-7: partner traffic spike
	// 1 100 map[]
	// 2 500 map[who:sam why:INC-7: partner traffic spike]
}

// Diff lists the keys whose live entry differs between two revisions,
// with the entry before and after (Rev 0: absent).
func ExampleStore_Diff() {
	s := revkv.New[string]()
	defer s.Close()
	s.Put("config/api", "100")  // 1
	s.Put("config/pool", "20")  // 2
	s.Put("config/api", "500")  // 3
	s.Delete("config/pool")     // 4
	s.Put("config/batch", "10") // 5
	for d, err := range s.Diff("config/", 1, 5) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %d %q -> %d %q\n", d.Key, d.Before.Rev, d.Before.Value, d.After.Rev, d.After.Value)
	}
	// Output:
	// config/api: 1 "100" -> 3 "500"
	// config/batch: 0 "" -> 5 "10"
}

// Digest is the hash chain's latest revision and digest: keep it
// elsewhere, and DigestAt checks the store against it later, even after
// more writes.
func ExampleStore_Digest() {
	s := auditStore(vfs.NewMem())
	defer s.Close()
	rev, kept, _ := s.Digest()
	fmt.Printf("revision %d: %x\n", rev, kept)

	s.Put("config/api", "100") // later writes extend the chain
	d, _ := s.DigestAt(rev)
	fmt.Println("revision", rev, "unchanged:", d == kept)
	// Output:
	// revision 3: 2ad216bd2abff53601e8241cadbdaa809eb97f26eba2881e9855909e150228e1
	// revision 3 unchanged: true
}

// Export writes a store's whole history as JSON lines, chain included;
// Import rebuilds a directory from them with the same revisions, times,
// annotations and digests.
func ExampleImport() {
	fs := vfs.NewMem()
	s := auditStore(fs)
	var export bytes.Buffer
	if err := s.Export(&export, ""); err != nil {
		panic(err)
	}
	_, want, _ := s.Digest()
	s.Close()
	for _, line := range strings.SplitAfter(export.String(), "\n")[2:3] {
		fmt.Print(line)
	}

	rev, err := revkv.Import("copy", revkv.StringCodec(), &export, revkv.WithFS(fs))
	if err != nil {
		panic(err)
	}
	c, _ := revkv.Open("copy", revkv.StringCodec(), revkv.WithFS(fs))
	defer c.Close()
	_, got, _ := c.Digest()
	fmt.Println("imported up to revision", rev, "same digest:", got == want)
	// Output:
	// {"rev":2,"time":"2026-11-21T14:03:00Z","key":"config/pool","op":"put","value":"20","digest":"b5cb0483363781e707e627eb4ce07e487974ea4ebe47f3a6f308d3f62ac2d7bc"}
	// imported up to revision 3 same digest: true
}

// Recovery says what Open found at the end of the log that was not whole
// records: here the last record, one byte flipped, which Open cut.
func ExampleStore_Recovery() {
	dir, _ := os.MkdirTemp("", "revkv-example-")
	defer os.RemoveAll(dir)
	// Unsealed, so that Close leaves the log this example damages (a
	// sealing store's Close moves it into a segment).
	s, _ := revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	for range 3 {
		s.Put("config/api", "100")
	}
	s.Close()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	b, _ := os.ReadFile(logs[0])
	b[len(b)-2] ^= 1 // damage to the last record
	os.WriteFile(logs[0], b, 0o644)

	s, _ = revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	defer s.Close()
	r, ok := s.Recovery()
	fmt.Println(ok, s.Rev(), r.Rev, r.Reads, r.Cut)
	// Output: true 2 3 3 true
}
