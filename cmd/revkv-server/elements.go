package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// What the collection types share: random picks (HRANDFIELD, SRANDMEMBER,
// ZRANDMEMBER, SPOP) and cursor scans (HSCAN, SSCAN, ZSCAN).

func randN(n int) int { return rand.IntN(n) }

// randArgs parses RANDFIELD-style arguments: key [count [opt]]. single says
// no count was given.
func randArgs(c *client, a [][]byte, opt string) (count int64, with, single, ok bool) {
	if len(a) == 2 {
		return 0, false, true, true
	}
	count, ok = parseInt(a[2]) // the count first, as Redis
	if !ok {
		c.w.Error(errNotInt)
		return 0, false, false, false
	}
	if len(a) > 4 || len(a) == 4 && (opt == "" || !strings.EqualFold(string(a[3]), opt)) {
		c.w.Error(errSyntax)
		return 0, false, false, false
	}
	with = len(a) == 4
	// As Redis: a count whose double would overflow a reply is refused.
	if count < -math.MaxInt64/2 || with && count < -math.MaxInt64/4 {
		c.w.Error("ERR value is out of range")
		return 0, false, false, false
	}
	// Repeats make a reply of -count elements, whatever the collection's
	// size: a client may not make the server build one without bound.
	if count < -maxRandReply {
		c.w.Error(fmt.Sprintf("ERR count is out of range: a reply holds at most %d elements", maxRandReply))
		return 0, false, false, false
	}
	return count, with, false, true
}

// maxRandReply is the most elements a random command with a negative
// count answers.
const maxRandReply = 1 << 20

// randPicks picks indexes into n elements as Redis's random commands do: a
// positive count is up to count distinct ones, a negative one exactly
// -count, repeats allowed.
func randPicks(n int, count int64) []int {
	if n == 0 || count == 0 {
		return nil
	}
	if count < 0 {
		picks := make([]int, 0, min(-count, 1<<20))
		for range -count {
			picks = append(picks, rand.IntN(n))
		}
		return picks
	}
	perm := rand.Perm(n)
	if count < int64(n) {
		perm = perm[:count]
	}
	return perm
}

// scanElements is HSCAN, SSCAN and ZSCAN: key cursor [MATCH p] [COUNT n].
// The cursor remembers the last element returned, as SCAN's does (see
// cursors), so that writes between calls never make it miss an element
// that was there throughout.
func scanElements(c *client, r reader, a [][]byte, typ byte) {
	id, ok := scanCursor(a[2])
	if !ok {
		c.w.Error("ERR invalid cursor")
		return
	}
	count := int64(10)
	var pattern []byte
	for i := 3; i < len(a); i += 2 {
		if i+1 >= len(a) {
			c.w.Error(errSyntax)
			return
		}
		switch strings.ToUpper(string(a[i])) {
		case "MATCH":
			pattern = a[i+1]
		case "COUNT":
			n, ok := parseInt(a[i+1])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			if n < 1 {
				c.w.Error(errSyntax)
				return
			}
			count = n
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	k := r.kv()
	m := load(c, k, string(a[1]), typ)
	if m == nil {
		return
	}
	kind := typ
	if typ == tZset {
		kind = 'm'
	}
	after, from := "", id != 0
	if from {
		var ok bool
		if after, ok = c.srv.cursors.get(id); !ok && !c.srv.cursors.handedOut(id) {
			c.w.Array(2)
			c.w.BulkString("0")
			c.w.Array(0)
			return
		}
		from = ok
		after = strings.TrimPrefix(after, m.gen) // a cursor of another key's generation starts over
	}
	var out [][]byte
	last, more, seen := "", false, int64(0)
	walk := func(el string, v []byte) bool {
		if from && el <= after {
			return true
		}
		if seen == count {
			more = true
			return false
		}
		seen++
		last = el
		if pattern == nil || match(pattern, el) {
			out = append(out, []byte(el))
			switch typ {
			case tHash:
				out = append(out, v)
			case tZset:
				out = append(out, formatScore(decodeScore(v)))
			}
		}
		return true
	}
	if from {
		k2 := m.el(kind, after)
		p := m.el(kind, "")
		for key, v := range k.Ascend(k2) {
			if !strings.HasPrefix(key, p) || !walk(key[len(p):], v) {
				break
			}
		}
	} else {
		m.each(k, kind, walk)
	}
	next := uint64(0)
	if more {
		next = c.srv.cursors.put(m.gen + last)
	}
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(out))
	for _, x := range out {
		c.w.Bulk(x)
	}
}
