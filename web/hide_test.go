package web_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/revkv/revkv/web"
	"github.com/stretchr/testify/require"
)

// TestHide: Options.Hide leaves the keys with its prefix out of the keys
// view and its counts, the state and the diff, as revkv-server hides its
// collections' internal records.
func TestHide(t *testing.T) {
	const hide = "config/limits/"
	st := serve(t, web.Options{Hide: hide})
	shown := func(path, field string) (keys []string, live float64) {
		status, m := get(t, st.url, path)
		require.Equal(t, 200, status, path)
		for _, k := range m[field].([]any) {
			keys = append(keys, k.(map[string]any)["key"].(string))
		}
		live, _ = m["live_keys"].(float64)
		return keys, live
	}
	live, revs := 0, 0
	for k := range st.s.Scan("") {
		if !strings.HasPrefix(k, hide) {
			live++
		}
	}
	for e, err := range st.s.Changes("", 1, st.s.Rev()) {
		require.NoError(t, err)
		if !strings.HasPrefix(e.Key, hide) {
			revs++
		}
	}
	keys, n := shown("/api/keys", "keys")
	require.Equal(t, []string{"big/text", "blob/1", "cart/42", "config/feature/dark", "config/name", "session/abc"}, keys)
	require.Equal(t, float64(live), n)
	_, m := get(t, st.url, "/api/keys")
	require.Equal(t, float64(revs), m["revisions"])
	v, err := st.s.At(st.s.Rev()) // the state's reads are at a revision: a TTL run out is live until its expiry's
	require.NoError(t, err)
	defer v.Close()
	live = 0
	for k := range v.Scan("") {
		if !strings.HasPrefix(k, hide) {
			live++
		}
	}
	keys, n = shown("/api/state", "keys")
	require.Equal(t, float64(live), n)
	for _, k := range keys {
		require.False(t, strings.HasPrefix(k, hide), k)
	}
	keys, _ = shown(fmt.Sprintf("/api/diff?from=0&to=%d", st.s.Rev()), "changes")
	require.NotEmpty(t, keys)
	for _, k := range keys {
		require.False(t, strings.HasPrefix(k, hide), k)
	}
	_, m = get(t, st.url, "/api/history?key="+url.QueryEscape(hide+"api"))
	require.NotNil(t, m["entries"], "a key asked for by name is still shown")
}
