package bench

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/revkv/revkv"
)

var auditRevs = flag.Int("audit.revs", 1_000_000, "revisions of BenchmarkExportImport and BenchmarkVerify's directory (10000000 for bench/README's figures)")

// auditDir writes a directory of *auditRevs revisions: Updates of 100
// puts over 100,000 keys, every tenth annotated, 100-byte values, under
// SyncNever, all in the log (no checkpoint), and closes it.
func auditDir(b *testing.B) string {
	dir := filepath.Join(b.TempDir(), "db")
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithSync(revkv.SyncNever), revkv.WithCheckpointBytes(1<<40))
	if err != nil {
		b.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), 100)
	for i := 0; i < *auditRevs; i += 100 {
		_, err := s.Update(func(tx *revkv.Txn[[]byte]) error {
			if i%1000 == 0 {
				tx.Annotate("who", fmt.Sprint("user", i%7))
				tx.Annotate("why", "bench")
			}
			for j := range min(100, *auditRevs-i) {
				if err := tx.Put(fmt.Sprintf("key%06d", (i+j)%100_000), value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkExportImport: Export of the whole directory to a file, and
// Import of that file into an empty directory; rev/s is revisions a second.
func BenchmarkExportImport(b *testing.B) {
	dir := auditDir(b)
	export := filepath.Join(b.TempDir(), "export.jsonl")
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	exportTo := func(b *testing.B) {
		f, err := os.Create(export)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Export(f, ""); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	exportTo(b) // for op=import, run alone
	b.Run("op=export", func(b *testing.B) {
		for b.Loop() {
			exportTo(b)
		}
		b.ReportMetric(float64(*auditRevs)*float64(b.N)/b.Elapsed().Seconds(), "rev/s")
	})
	b.Run("op=import", func(b *testing.B) {
		n := 0
		for b.Loop() {
			f, err := os.Open(export)
			if err != nil {
				b.Fatal(err)
			}
			n++
			if _, err := revkv.Import(filepath.Join(b.TempDir(), fmt.Sprint("imported", n)), revkv.BytesCodec(), f); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		b.ReportMetric(float64(*auditRevs)*float64(b.N)/b.Elapsed().Seconds(), "rev/s")
	})
}

// BenchmarkVerify: a read-only Open of the directory, which replays the
// log and recomputes the chain (what `revkv verify` does), against
// SHA-256 alone over the same number of links of the same size.
func BenchmarkVerify(b *testing.B) {
	dir := auditDir(b)
	b.Run("op=open-verify", func(b *testing.B) {
		for b.Loop() {
			s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithReadOnly())
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
		b.ReportMetric(float64(*auditRevs)*float64(b.N)/b.Elapsed().Seconds(), "rev/s")
	})
	b.Run("op=sha256-raw", func(b *testing.B) {
		// A link: the digest before, and the encoding of a 100-byte put of
		// a 9-byte key (package chain): 32 + 8+13+1+12+9+104+4 bytes.
		link := make([]byte, 32+151)
		for b.Loop() {
			for range *auditRevs {
				d := sha256.Sum256(link)
				copy(link, d[:])
			}
		}
		b.ReportMetric(float64(*auditRevs)*float64(b.N)/b.Elapsed().Seconds(), "rev/s")
	})
}
