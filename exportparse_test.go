package revkv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/revkv/revkv/vfs"
)

// FuzzParseLine: where parseLine takes a line, encoding/json takes it too
// and gives the same line. Seeded with every line of an export of every
// kind of entry, and with lines that must go to encoding/json.
func FuzzParseLine(f *testing.F) {
	m := vfs.NewMem()
	s, err := Open("/db", StringCodec(), WithFS(m), WithClock(func() time.Time { return time.Date(2026, 11, 24, 14, 2, 0, 0, time.FixedZone("CET", 3600)) }))
	if err != nil {
		f.Fatal(err)
	}
	s.PutTTL("a", "x\"y", time.Hour)
	s.Update(func(tx *Txn[string]) error {
		tx.Annotate("who", "é")
		tx.Annotate("bin\xff", "\x00")
		return tx.Put("\xffb", "v")
	})
	s.Delete("a")
	var out bytes.Buffer
	if err := s.Export(&out, ""); err != nil {
		f.Fatal(err)
	}
	s.Close()
	taken := 0
	for _, line := range bytes.Split(out.Bytes(), []byte("\n")) {
		f.Add(line)
		if parseLine(line, &exportLine{}) {
			taken++
		}
	}
	if taken < 2 { // the header is not a line of revisions, nor is a line with an escape
		f.Fatalf("parseLine took %d lines of the export:\n%s", taken, out.Bytes())
	}
	for _, line := range []string{
		`{"rev":1,"REV":2}`, `{"rev":1,"rev":2}`, `{"rev":01}`, `{"rev":1.0}`, `{"rev":-0}`, `{"rev":9223372036854775808}`,
		`{"rev":1,}`, `{"rev":1} x`, ` {"rev" : 1 } `, `{"key":null}`, `{"trimmed":null}`, `{"annotations":{}}`,
		`{"annotations":{"a":"1","a":"2"}}`, `{"key":"\u00e9"}`, "{\"key\":\"\xff\"}", `{"offset":-3600,"zone":"X"}`, `{}`, `{"op":1}`,
	} {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, slow exportLine
		if !parseLine(b, &fast) {
			return
		}
		if err := json.Unmarshal(b, &slow); err != nil {
			t.Fatalf("parseLine took %q, which encoding/json refuses: %v", b, err)
		}
		if fast.valueBytes != nil && (fast.Value == nil || string(fast.valueBytes) != *fast.Value) {
			t.Fatalf("%q: parseLine's value bytes %q are not its value", b, fast.valueBytes)
		}
		fast.valueBytes = nil // Import's own: encoding/json has no such field
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: parseLine gives %s, encoding/json %s", b, show(fast), show(slow))
		}
	})
}

func show(l exportLine) string {
	b, _ := json.Marshal(l)
	return fmt.Sprintf("%s", b)
}

// TestPlainString: the eight-bytes-at-a-time check agrees with the byte by
// byte one for every byte value at every position of strings of 0 to 24
// bytes (so in each lane of a word, and in the tail).
func TestPlainString(t *testing.T) {
	for n := range 25 {
		for pos := range n {
			for c := range 256 {
				v := bytes.Repeat([]byte("v"), n)
				v[pos] = byte(c)
				if got, want := plainString(v), plainTail(v); got != want {
					t.Fatalf("plainString(%q) = %v, byte by byte %v", v, got, want)
				}
			}
		}
	}
	if plainString([]byte("ééééé\\")) || !plainString([]byte("abcdefgh€ijk")) {
		t.Fatal("a backslash after UTF-8, or UTF-8 after a whole word")
	}
}
