package bench

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// preadSink keeps BenchmarkSegmentPread's checksums from being optimised away.
var preadSink uint32

// BenchmarkSegmentPread is the floor under a warm GetAt of a sealed store:
// a pread(2) of one block at a random offset of the segment files in
// -w.dir (a W(N) directory BenchmarkHistoryW wrote), and its CRC-32C, for
// the block sizes a segment could have. It reports the median, as W(N)'s
// GetAt figures are medians. Read the directory once before (cat
// DIR/*.seg >/dev/null) to have it in the page cache.
func BenchmarkSegmentPread(b *testing.B) {
	names, _ := filepath.Glob(filepath.Join(*wDir, "*.seg"))
	if len(names) == 0 {
		b.Skip("no segment files: give -w.dir a W(N) directory")
	}
	var files []*os.File
	var sizes []int64
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		files, sizes = append(files, f), append(sizes, st.Size())
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, size := range []int64{4 << 10, 8 << 10} {
		b.Run(fmt.Sprint("block=", size), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			buf := make([]byte, size)
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				i := rng.IntN(len(files))
				off := rng.Int64N(max(sizes[i]-size, 1))
				t := time.Now()
				if _, err := files[i].ReadAt(buf, off); err != nil {
					b.Fatal(err)
				}
				preadSink += crc32.Checksum(buf, castagnoli)
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		})
	}
}
