// Command merges measures what segment merges do for a store: a store
// opened and closed many times (segments, Open, a read of a key not
// written for long), and the space a compaction gives back. See
// bench/README.md, "Merges".
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/revkv/revkv"
)

func dirBytes(dir string) (segs int, total int64) {
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		fi, _ := e.Info()
		total += fi.Size()
		if strings.HasSuffix(e.Name(), ".seg") {
			segs++
		}
	}
	return
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	mode := flag.String("mode", "cycles", "cycles or reclaim")
	dir := flag.String("dir", "/tmp/mergeb-db", "")
	n := flag.Int("n", 300, "cycles, or revisions for reclaim")
	flag.Parse()
	os.RemoveAll(*dir)
	switch *mode {
	case "cycles":
		rng := rand.New(rand.NewPCG(1, 2))
		var last time.Duration
		for c := range *n {
			t0 := time.Now()
			s, err := revkv.Open(*dir, revkv.StringCodec(), revkv.WithSync(revkv.SyncNever))
			must(err)
			last = time.Since(t0)
			_, err = s.Update(func(tx *revkv.Txn[string]) error {
				for range 200 {
					tx.Put(fmt.Sprintf("k/%05d", rng.IntN(10000)), "0123456789abcdef")
				}
				return nil
			})
			must(err)
			if c == 0 || c == *n-1 {
				s.Put("rare", fmt.Sprint(c))
			}
			must(s.Close())
		}
		segs, total := dirBytes(*dir)
		var opens, gets []time.Duration
		for range 21 {
			t0 := time.Now()
			s, err := revkv.Open(*dir, revkv.StringCodec(), revkv.WithSync(revkv.SyncNever), revkv.WithReadOnly())
			must(err)
			opens = append(opens, time.Since(t0))
			t0 = time.Now()
			for r := range 200 {
				v, _, err := s.GetAt("rare", revkv.Revision(int64(s.Rev())-300-int64(r)*250))
				must(err)
				if v != "0" {
					panic("rare: " + v)
				}
			}
			gets = append(gets, time.Since(t0)/200)
			s.Close()
		}
		fmt.Printf("cycles=%d segments=%d bytes=%d last-open=%v open-median=%v getat-rare-median=%v\n", *n, segs, total, last, median(opens), median(gets))
	case "reclaim":
		s, err := revkv.Open(*dir, revkv.StringCodec(), revkv.WithSync(revkv.SyncNever))
		must(err)
		val := "0123456789abcdef"
		for i := 0; i < *n; i += 1000 {
			_, err := s.Update(func(tx *revkv.Txn[string]) error {
				for j := i; j < i+1000; j++ {
					tx.Put(fmt.Sprintf("k/%08d", j%100000), val)
				}
				return nil
			})
			must(err)
		}
		must(s.Checkpoint())
		segs, before := dirBytes(*dir)
		fmt.Printf("written: segments=%d bytes=%d (%.1f B/rev)\n", segs, before, float64(before)/float64(*n))
		cut := s.Rev() * 9 / 10
		t0 := time.Now()
		must(s.Compact(cut))
		fmt.Printf("compact(%d): %v\n", cut, time.Since(t0))
		for k := range 12 {
			s.Put("tick", fmt.Sprint(k))
			t0 := time.Now()
			must(s.Checkpoint())
			d := time.Since(t0)
			segs, b := dirBytes(*dir)
			fmt.Printf("checkpoint %d: %v segments=%d bytes=%d\n", k, d, segs, b)
		}
		must(s.Close())
		var opens []time.Duration
		for range 11 {
			t0 := time.Now()
			s, err := revkv.Open(*dir, revkv.StringCodec(), revkv.WithReadOnly())
			must(err)
			opens = append(opens, time.Since(t0))
			s.Close()
		}
		fmt.Printf("open median %v\n", median(opens))
	}
}
