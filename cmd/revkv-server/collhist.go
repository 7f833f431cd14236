package main

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"

	"github.com/revkv/revkv"
)

// A collection's history, in the REVKV replies' one entry shape (see
// entryLen), under the user's key:
//   - the key's own entries: its creation (value: its type's name), a
//     change of its TTL, its delete or its expiry; the metadata's rewrites
//     that only count elements are left out;
//   - each element's write or delete, its value an array: [field, value]
//     for a hash, [member] for a set, [member, score] for a sorted set,
//     [position, value] for a list (positions grow rightwards, and a
//     left push takes the one before the head).

// collectionHistory merges a key's entries with its elements' (every
// generation it had), oldest first; es is the key's own history. A merge
// past revkv-max-reply-entries is errTooMany.
func (s *server) collectionHistory(es []revkv.Entry[[]byte]) ([]revkv.Entry[[]byte], error) {
	var gens []string
	var out []revkv.Entry[[]byte]
	var prev *revkv.Entry[[]byte]
	// ends is where each generation's life ended (the key deleted, expired
	// or overwritten): the sweeper's deletes of its elements come after, and
	// are not the key's history.
	ends := map[string]revkv.Revision{}
	cur := ""
	for i := range es {
		e := &es[i]
		g := ""
		if e.Op == revkv.OpPut && isMeta(e.Value) {
			g = decodeMeta(e.Key, *e).gen
		}
		if cur != "" && g != cur {
			ends[cur] = e.Rev
		}
		cur = g
		if g != "" {
			if !slices.Contains(gens, g) {
				gens = append(gens, g)
			}
			// Shown: a creation, or a change of TTL.
			if prev != nil && prev.Op == revkv.OpPut && isMeta(prev.Value) &&
				decodeMeta(e.Key, *prev).gen == g && prev.ExpiresAt.Equal(e.ExpiresAt) {
				prev = e
				continue
			}
		}
		prev = e
		out = append(out, *e)
	}
	for _, g := range gens {
		for e, err := range s.store.Changes(internal+g, s.store.Floor(), s.store.Rev()) {
			if err != nil {
				return nil, err
			}
			end, ended := ends[g]
			if kind := e.Key[len(internal)+8]; kind != 'z' && (!ended || e.Rev < end) { // the score index repeats the members
				if out = append(out, e); s.over(len(out)) {
					return nil, errTooMany
				}
			}
		}
	}
	slices.SortStableFunc(out, func(x, y revkv.Entry[[]byte]) int { return cmp.Compare(x.Rev, y.Rev) })
	return out, nil
}

// hasCollection reports whether any of a key's entries is a collection's.
func hasCollection(es []revkv.Entry[[]byte]) bool {
	for _, e := range es {
		if e.Op == revkv.OpPut && isMeta(e.Value) {
			return true
		}
	}
	return false
}

// entryUnder writes e in the entry shape under the user's key: an
// element's entry (its key internal) shows its element; a collection's
// key its type.
func entryUnder(c *client, e revkv.Entry[[]byte], key string, notes *notesOf) {
	if !strings.HasPrefix(e.Key, internal) && !(e.Op == revkv.OpPut && isMeta(e.Value)) {
		entry(c, e, notes)
		return
	}
	c.w.Array(entryLen)
	c.w.BulkString(key)
	c.w.BulkString(e.Op.String())
	c.w.Int(int64(e.Rev))
	c.w.Int(e.Time.UnixMilli())
	if e.ExpiresAt.IsZero() {
		c.w.Null()
	} else {
		c.w.Int(e.ExpiresAt.UnixMilli())
	}
	switch {
	case !strings.HasPrefix(e.Key, internal):
		c.w.BulkString(typeName(e.Value[len(metaMagic)]))
	default:
		writeElement(c, e)
	}
	flat := notes.get(e.Rev)
	c.w.Array(len(flat))
	for _, x := range flat {
		c.w.BulkString(x)
	}
}

// writeElement writes an element entry's element: see the file's comment.
func writeElement(c *client, e revkv.Entry[[]byte]) {
	rest := e.Key[len(internal)+9:]
	put := e.Op == revkv.OpPut
	switch e.Key[len(internal)+8] {
	case tHash:
		c.w.Array(2)
		c.w.BulkString(rest)
		valueOrNull(c, e.Value, put)
	case tSet:
		c.w.Array(1)
		c.w.BulkString(rest)
	case 'm':
		c.w.Array(2)
		c.w.BulkString(rest)
		if put {
			c.w.Bulk(formatScore(decodeScore(e.Value)))
		} else {
			c.w.Null()
		}
	case tList:
		c.w.Array(2)
		pos := int64(binary.BigEndian.Uint64([]byte(rest)) ^ 1<<63)
		c.w.BulkString(strconv.FormatInt(pos, 10))
		valueOrNull(c, e.Value, put)
	default:
		c.w.Null()
	}
}

func valueOrNull(c *client, v []byte, ok bool) {
	if ok {
		c.w.Bulk(v)
	} else {
		c.w.Null()
	}
}

// elementDiffs are the element changes of a collection key between two
// revisions: [key, before, after] rows, each an element entry or nil.
// More than revkv-max-reply-entries with the reply's rows before them
// is errTooMany.
func (s *server) elementDiffs(d revkv.KeyDiff[[]byte], from, to revkv.Revision, before int) ([]revkv.KeyDiff[[]byte], error) {
	gen := func(e revkv.Entry[[]byte]) string {
		if e.Rev == 0 || !isMeta(e.Value) {
			return ""
		}
		return decodeMeta(e.Key, e).gen
	}
	gb, ga := gen(d.Before), gen(d.After)
	var out []revkv.KeyDiff[[]byte]
	add := func(g string, f, t revkv.Revision, gone bool) error {
		if g == "" {
			return nil
		}
		for x, err := range s.store.Diff(internal+g, f, t) {
			if err != nil {
				return err
			}
			if gone {
				x.Before, x.After = x.After, x.Before
			}
			if x.Key[len(internal)+8] != 'z' {
				if out = append(out, x); s.over(before + len(out)) {
					return errTooMany
				}
			}
		}
		return nil
	}
	if gb == ga {
		return out, add(gb, from, to, false)
	}
	// Another generation: the old elements all go, the new all come: each
	// side against the empty state (the old one's, reversed).
	if err := add(gb, 0, from, true); err != nil {
		return nil, err
	}
	err := add(ga, 0, to, false)
	return out, err
}
