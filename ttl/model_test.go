package ttl

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestIndexModel runs random operations on an Index and on a sorted slice
// of items, and checks that they agree after every step: the front, what
// each removal and pop finds, CountDue and Lookup. The adds mix the two
// kinds the index tells apart: mostly after every earlier item (the run),
// sometimes before (the tree), with ties on At broken by key.
func TestIndexModel(t *testing.T) {
	for seed := range int64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { indexModel(t, seed, 3000) })
	}
}

func indexModel(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	x := New[int]()
	var ref []Item[int] // sorted by less
	at := int64(1000)
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
	}
	has := func(key string) (int, bool) {
		for i, it := range ref {
			if it.Key == key {
				return i, true
			}
		}
		return 0, false
	}
	for step := range steps {
		switch op := rng.Intn(10); {
		case op < 5: // add a key that has no item
			key := keys[rng.Intn(len(keys))]
			if _, ok := has(key); ok {
				continue
			}
			a := at
			switch rng.Intn(4) {
			case 0:
				a = at - int64(rng.Intn(500)) // out of order
			case 1:
				a = at // a tie, maybe
			default:
				at += int64(rng.Intn(20))
				a = at
			}
			x.Add(key, a, step)
			it := Item[int]{a, key, step}
			i, _ := slices.BinarySearchFunc(ref, it, cmp)
			ref = slices.Insert(ref, i, it)
		case op < 7: // remove an item that is there, or one that is not
			key := keys[rng.Intn(len(keys))]
			i, ok := has(key)
			a := at
			if ok && rng.Intn(4) > 0 {
				a = ref[i].At
			}
			want := ok && ref[i].At == a
			if got := x.Remove(key, a); got != want {
				t.Fatalf("step %d: Remove(%s, %d) = %v, want %v", step, key, a, got, want)
			}
			if want {
				ref = slices.Delete(ref, i, i+1)
			}
		default: // pop what is due at some time around the items
			now := at - int64(rng.Intn(600))
			for {
				got, ok := x.PopDue(now)
				wantOK := len(ref) > 0 && ref[0].At <= now
				if ok != wantOK || ok && got != ref[0] {
					t.Fatalf("step %d: PopDue(%d) = %v %v, want %v", step, now, got, ok, ref[:min(1, len(ref))])
				}
				if !ok {
					break
				}
				ref = ref[1:]
				if rng.Intn(3) == 0 {
					break
				}
			}
		}
		check(t, step, x, ref, at-int64(rng.Intn(600)))
	}
}

func cmp(a, b Item[int]) int {
	switch {
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return 0
}

func check(t *testing.T, step int, x *Index[int], ref []Item[int], now int64) {
	t.Helper()
	if x.Len() != len(ref) {
		t.Fatalf("step %d: Len %d, want %d", step, x.Len(), len(ref))
	}
	want := 0
	for _, it := range ref {
		if it.At <= now {
			want++
		}
	}
	if got := x.CountDue(now); got != want {
		t.Fatalf("step %d: CountDue(%d) = %d, want %d", step, now, got, want)
	}
	if due := x.Due(now); due != (want > 0) {
		t.Fatalf("step %d: Due(%d) = %v", step, now, due)
	}
	for _, it := range ref {
		if v, ok := x.Lookup(it.Key, it.At); !ok || v != it.Val {
			t.Fatalf("step %d: Lookup(%s, %d) = %d %v, want %d", step, it.Key, it.At, v, ok, it.Val)
		}
	}
	if x.head < len(x.run) && x.run[x.head].dead {
		t.Fatalf("step %d: the run's front is dead", step)
	}
}
