package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServe: serve opens the directory read-only, says where it listens,
// answers the page's API, stops when told and leaves every byte of the
// directory as it was; it refuses an address beyond loopback without a
// token (exit 2) and a directory it cannot open (exit 1), as every
// command does.
func TestServe(t *testing.T) {
	dir := fixture(t)
	tear(t, dir) // a torn tail, which an Open that writes would cut
	before := hashDir(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr strings.Builder
	c := newCLI(strings.NewReader(""), pw, &stderr)
	c.ctx = ctx
	code := make(chan int, 1)
	go func() { code <- c.run([]string{"--dir", dir, "serve", "--addr", "127.0.0.1:0"}); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err, stderr.String())
	go io.Copy(io.Discard, pr)
	url := regexp.MustCompile(`http://\S+/`).FindString(line)
	require.NotEmpty(t, url, line)
	require.Contains(t, line, "serving "+dir+" read-only at http://127.0.0.1:")

	resp, err := http.Get(url + "api/keys?prefix=config/")
	require.NoError(t, err)
	var keys struct {
		Rev      int64 `json:"rev"`
		LiveKeys int   `json:"live_keys"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&keys))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Positive(t, keys.Rev)
	for _, path := range []string{"", "key?key=config/a", "verify", "api/verify/all"} {
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	cancel()
	require.Equal(t, 0, <-code, stderr.String())
	require.Equal(t, before, hashDir(t, dir), "serve changed the directory")

	r := runTool(t, "", "--dir", dir, "serve", "--addr", "0.0.0.0:0")
	require.Equal(t, exitUsage, r.code)
	require.Equal(t, "revkv: serve: binding to 0.0.0.0:0 serves the page beyond this machine, which needs a token (or bind to 127.0.0.1): give one with --token or $REVKV_TOKEN\n", r.stderr)
	r = runTool(t, "", "--dir", filepath.Join(t.TempDir(), "missing"), "serve", "--addr", "127.0.0.1:0")
	require.Equal(t, exitFail, r.code)
	require.Contains(t, r.stderr, "no revkv directory at")
	hold(t, dir)
	r = runTool(t, "", "--dir", dir, "serve", "--addr", "127.0.0.1:0")
	require.Equal(t, exitFail, r.code)
	require.Contains(t, r.stderr, "is in use by another process")
}
