package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/revkv/revkv"
	"github.com/stretchr/testify/require"
)

// buildServer builds the binary once per test run.
var buildServer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "revkv-server-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "revkv-server")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// runServer starts the built binary with args on a free port and waits
// until it answers.
func runServer(t *testing.T, args ...string) (*exec.Cmd, string) {
	bin, err := buildServer()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"--addr", addr}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	logged := make(chan struct{})
	go func() { // the log, for a failing test
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log(sc.Text())
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // if the test did not stop it
		<-logged
		cmd.Wait()
	})
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	for i := 0; c.Ping(context.Background()).Err() != nil; i++ {
		require.Less(t, i, 200, "the server did not start")
		time.Sleep(25 * time.Millisecond)
	}
	return cmd, addr
}

// TestProfiles: --cpuprofile and --memprofile write their profiles (gzip
// files, as pprof writes them) when the server stops.
func TestProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary: run without -short")
	}
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	cmd, addr := runServer(t, "--cpuprofile", cpu, "--memprofile", mem)
	c := newClient(t, addr)
	for i := range 100 {
		require.Equal(t, "OK", do(c, "set", fmt.Sprint("k", i), "v"))
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "a clean exit after SIGTERM")
	for _, f := range []string{cpu, mem} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.Greater(t, len(b), 100, f)
		require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "%s is a gzip file", f)
	}
}

// TestDurableServer: write, SIGTERM, restart on the same --dir and read the
// history back; then SIGKILL in the middle of writes under --sync always:
// every acknowledged write is there after a restart.
func TestDurableServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary: run without -short")
	}
	ctx := context.Background()
	dir := t.TempDir()
	cmd, addr := runServer(t, "--dir", dir, "--sync", "always")
	c := newClient(t, addr)
	require.Equal(t, "OK", do(c, "set", "cfg", "v1"))
	require.Equal(t, "OK", do(c, "set", "cfg", "v2", "ex", 1000))
	require.Equal(t, []any{"OK", "OK"}, func() []any {
		conn := c.Conn()
		defer conn.Close()
		do(conn, "multi")
		do(conn, "set", "a", "1")
		do(conn, "set", "b", "2")
		return do(conn, "exec").([]any)
	}())
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "a clean exit after SIGTERM")

	cmd, addr = runServer(t, "--dir", dir, "--sync", "always")
	c = newClient(t, addr)
	require.Equal(t, int64(4), do(c, "revkv.rev"))
	require.Equal(t, "v1", do(c, "revkv.getat", "cfg", 1))
	require.Equal(t, "v2", do(c, "get", "cfg"))
	ttl := do(c, "ttl", "cfg").(int64)
	require.True(t, ttl > 990 && ttl <= 1000, "the TTL survives: %d", ttl)
	h := do(c, "revkv.history", "a").([]any)
	require.Equal(t, int64(3), h[0].([]any)[2])

	// SIGKILL during writes from 8 clients.
	acked := make([]int, 8)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range acked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.Set(ctx, fmt.Sprint("w", w), i, 0).Err(); err != nil {
					return
				}
				acked[w] = i
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	close(stop)
	wg.Wait()
	cmd.Wait()
	_, addr = runServer(t, "--dir", dir)
	c = newClient(t, addr)
	total := 0
	for w, n := range acked {
		got := do(c, "get", fmt.Sprint("w", w))
		if n == 0 {
			continue
		}
		require.NotNil(t, got, "writer %d", w)
		var v int
		fmt.Sscan(got.(string), &v)
		require.GreaterOrEqual(t, v, n, "writer %d: acknowledged %d, found %d", w, n, v)
		total += n
	}
	t.Logf("%d writes acknowledged before SIGKILL, all found", total)
}

// TestFlags: bad flags are refused with a message, --version prints.
func TestFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary: run without -short")
	}
	bin, err := buildServer()
	require.NoError(t, err)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	require.NoError(t, err)
	require.Equal(t, "revkv-server "+version+"\n", string(out))
	for _, args := range [][]string{{"--sync", "sometimes"}, {"--max-history", "-1"}, {"extra"}, {"--addr", "256.0.0.1:1"}, {"--dir", "/dev/null"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		require.Error(t, err, "%v", args)
		require.True(t, strings.HasPrefix(string(out), "revkv-server: "), "%v: %s", args, out)
		require.NotContains(t, string(out), "revkv: ", "%v: one prefix", args)
		require.Equal(t, 1, strings.Count(string(out), "\n"), "%v: one line", args)
	}
}

// TestHelp: --help is the server's usage, on stdout with status 0: what
// it is, every flag with its argument and default, and examples (issue
// 35, item 12).
func TestHelp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary: run without -short")
	}
	bin, err := buildServer()
	require.NoError(t, err)
	for _, arg := range []string{"--help", "-h"} {
		cmd := exec.Command(bin, arg)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, arg)
		require.Empty(t, stderr.String())
		require.Contains(t, string(out), "revkv-server serves a revkv store over the Redis protocol")
		require.Contains(t, string(out), "Usage: revkv-server [flags]")
		for _, f := range []string{"--addr HOST:PORT", "--dir DIR", "--sync MODE", "--max-history N", "--retention DURATION",
			"--expiry-interval DURATION", "--requirepass PASSWORD", "--max-clients N", "--max-value BYTES", "--log-level LEVEL",
			"--cpuprofile FILE", "--memprofile FILE", "--zset-rank-cache N", "--version"} {
			require.Contains(t, string(out), "\n  "+f+" ", "%s lists %s", arg, f)
		}
		require.Contains(t, string(out), "Examples:\n")
	}
}

// startLog starts the binary with args and returns the first lines it
// logs, up to and including the one containing until.
func startLog(t *testing.T, until string, args ...string) []string {
	bin, err := buildServer()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"--addr", addr}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	var lines []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), until) {
			return lines
		}
	}
	t.Fatalf("the server did not log %q: %q", until, lines)
	return nil
}

// TestStartupLog: an in-memory server logs no sync mode (it syncs
// nothing); a server on a directory whose log ends in bytes that are not
// whole records logs them at WARN before it is ready, with the file, the
// offset, their size and the first revision they could have held (issue
// 35, items 1 and 12).
func TestStartupLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary: run without -short")
	}
	lines := startLog(t, "ready")
	require.Len(t, lines, 1)
	require.NotContains(t, lines[0], "sync=")
	require.Contains(t, lines[0], `store="in memory"`)

	dir := t.TempDir()
	s, err := revkv.Open(dir, revkv.BytesCodec(), revkv.WithMemory(-1)) // unsealed: Close leaves the log
	require.NoError(t, err)
	for range 10 {
		_, err := s.Put("k", []byte("a value"))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	b[len(b)-3] ^= 0x10
	require.NoError(t, os.WriteFile(logs[0], b, 0o644))

	lines = startLog(t, "ready", "--dir", dir)
	require.Len(t, lines, 2, "a WARN, then ready")
	require.Contains(t, lines[0], "level=WARN")
	require.Contains(t, lines[0], "file="+logs[0])
	require.Contains(t, lines[0], "from_rev=10")
	require.Contains(t, lines[0], "reads_to=10")
	require.Contains(t, lines[0], "cut=true")
	require.Regexp(t, `offset=\d+ bytes=\d+`, lines[0])
	require.Contains(t, lines[1], "sync=always")
}
