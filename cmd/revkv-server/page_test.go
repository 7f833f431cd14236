package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// freeAddr is a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// TestPage: --http serves the page over the live store: a write through
// the Redis protocol is an event on /api/events and is on the key's
// timeline; binding beyond loopback without a token is refused at start.
func TestPage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary: run without -short")
	}
	page := freeAddr(t)
	_, addr := runServer(t, "--dir", t.TempDir(), "--http", page)
	base := "http://" + page
	var resp *http.Response
	var err error
	for i := 0; ; i++ {
		if resp, err = http.Get(base + "/api/info"); err == nil {
			break
		}
		require.Less(t, i, 200, "the page did not start: %v", err)
		time.Sleep(25 * time.Millisecond)
	}
	var info map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	resp.Body.Close()
	require.Equal(t, true, info["live"])
	require.Equal(t, true, info["chain"])

	events, err := http.Get(base + "/api/events")
	require.NoError(t, err)
	defer events.Body.Close()
	c := newClient(t, addr)
	require.Equal(t, "OK", do(c, "set", "greeting", "hello", "ex", 100))
	sc := bufio.NewScanner(events.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			require.JSONEq(t, `{"rev":1,"keys":["greeting"],"more":false}`, data)
			break
		}
	}
	resp, err = http.Get(base + "/api/timeline?key=greeting")
	require.NoError(t, err)
	var tl struct {
		Marks []struct {
			Op        string
			ExpiresAt string `json:"expires_at"`
			Value     struct{ Text string }
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tl))
	resp.Body.Close()
	require.Len(t, tl.Marks, 1)
	require.Equal(t, "hello", tl.Marks[0].Value.Text)
	require.NotEmpty(t, tl.Marks[0].ExpiresAt)

	// A collection is its key on the page: its elements' internal records
	// are in no list, count, state, diff or event.
	require.Equal(t, int64(2), do(c, "hset", "h", "f", "1", "g", "2"))
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev struct{ Keys []string }
			require.NoError(t, json.Unmarshal([]byte(data), &ev))
			require.Equal(t, []string{"h"}, ev.Keys)
			break
		}
	}
	listed := func(path, field string) []any {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		if field == "live_keys" {
			return []any{m[field]}
		}
		var keys []any
		for _, k := range m[field].([]any) {
			keys = append(keys, k.(map[string]any)["key"])
		}
		return keys
	}
	require.Equal(t, []any{"greeting", "h"}, listed("/api/keys", "keys"))
	require.Equal(t, []any{float64(2)}, listed("/api/keys", "live_keys"), "as DBSIZE counts")
	require.Equal(t, []any{"greeting", "h"}, listed("/api/state", "keys"))
	require.Equal(t, []any{float64(2)}, listed("/api/state", "live_keys"))
	require.Equal(t, []any{"greeting", "h"}, listed("/api/diff?from=0&to="+fmt.Sprint(do(c, "revkv.rev")), "changes"))

	bin, err := buildServer()
	require.NoError(t, err)
	out, err := exec.Command(bin, "--addr", freeAddr(t), "--http", "0.0.0.0:0").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "binding to 0.0.0.0:0 serves the page beyond this machine, which needs a token (or bind to 127.0.0.1): give one with --http-token or $REVKV_TOKEN")
}
