package main

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// TestAnnotateAndDigest: REVKV.ANNOTATE inside MULTI annotates the EXEC's
// revisions, REVKV.HISTORY shows them, and REVKV.DIGEST answers the chain
// as the store does, at the head and at a revision.
func TestAnnotateAndDigest(t *testing.T) {
	store, err := revkv.Open(t.TempDir(), revkv.BytesCodec())
	require.NoError(t, err)
	_, addr := startServerOn(t, config{}, store)
	c := newClient(t, addr)
	require.Equal(t, "OK", do(c, "set", "cfg", "1"))
	require.Contains(t, do(c, "revkv.annotate", "who", "ana"), "between MULTI and EXEC")
	ctx := context.Background()
	pipe := c.TxPipeline()
	pipe.Do(ctx, "revkv.annotate", "who", "ana")
	pipe.Do(ctx, "revkv.annotate", "why", "raise the limit")
	pipe.Do(ctx, "set", "cfg", "2")
	pipe.Do(ctx, "set", "other", "x")
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)
	require.Equal(t, "OK", do(c, "set", "cfg", "3"))
	h := do(c, "revkv.history", "cfg").([]any)
	require.Len(t, h, 3)
	notes := []any{}
	for _, e := range h {
		require.Len(t, e, 7)
		notes = append(notes, e.([]any)[6])
	}
	ch := do(c, "revkv.changes", 2, 3).([]any)
	require.Equal(t, []any{"who", "ana", "why", "raise the limit"}, ch[0].([]any)[6], "CHANGES carries the annotations too")
	require.Equal(t, []any{"who", "ana", "why", "raise the limit"}, ch[1].([]any)[6])
	require.Equal(t, []any{[]any{}, []any{"who", "ana", "why", "raise the limit"}, []any{}}, notes)
	got, err := store.Annotations(3)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"who": "ana", "why": "raise the limit"}, got)

	rev, d, err := store.Digest()
	require.NoError(t, err)
	require.Equal(t, []any{int64(rev), hex.EncodeToString(d[:])}, do(c, "revkv.digest"))
	d2, err := store.DigestAt(2)
	require.NoError(t, err)
	require.Equal(t, []any{int64(2), hex.EncodeToString(d2[:])}, do(c, "revkv.digest", "2"))
	require.Contains(t, do(c, "revkv.digest", "99"), "FUTUREREV")
	require.Equal(t, "error: ERR revision is not a whole number, 0 or more", do(c, "revkv.digest", "x"))
	require.Contains(t, do(c, "revkv.digest", "1", "2"), "syntax")

	_, memAddr := startServer(t, config{})
	require.Contains(t, do(newClient(t, memAddr), "revkv.digest"), "keeps no hash chain")
}
