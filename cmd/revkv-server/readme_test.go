package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sample is one command of the README and the output it shows.
type sample struct {
	line int    // in README.md
	cmd  string // as written, without "$ " and a trailing comment
	want string
}

// readmeSamples returns the README's console samples whose command starts
// with prefix: "$ CMD" lines inside fenced blocks, each followed by its
// output up to the next "$ " line or the block's end.
func readmeSamples(t *testing.T, prefix string) []sample {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var out []sample
	var cur *sample
	fenced := false
	flush := func() {
		if cur != nil {
			cur.want = strings.TrimRight(cur.want, "\n")
			out = append(out, *cur)
			cur = nil
		}
	}
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			flush()
			fenced = !fenced
		case !fenced:
		case strings.HasPrefix(l, "$ "):
			flush()
			if c, ok := strings.CutPrefix(l, "$ "+prefix); ok {
				if j := strings.Index(c, "  #"); j >= 0 {
					c = c[:j]
				}
				cur = &sample{line: i + 1, cmd: strings.TrimSpace(c)}
			}
		case cur != nil:
			cur.want += l + "\n"
		}
	}
	flush()
	return out
}

// TestReadmeSamples runs every command sample of the README against a
// real process and compares the output, so that the README cannot drift
// from what the programs do: the offline tool, built, on the
// directory examples/audit writes (as the README says to make it), and
// the server, built and started in memory, through a RESP client that
// prints replies as redis-cli does. Times the server takes from its clock
// (Unix milliseconds) differ from run to run: they are compared as
// numbers of that size.
func TestReadmeSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries: run without -short")
	}
	tool := readmeTool(t)
	require.NotEmpty(t, tool, "the README shows the tool")
	server := readmeSamples(t, "redis-cli -p 6380 ")
	require.NotEmpty(t, server, "the README shows the server")

	work := t.TempDir()
	bin := filepath.Join(work, "revkv")
	out, err := exec.Command("go", "build", "-o", bin, "../revkv").CombinedOutput()
	require.NoError(t, err, "%s", out)
	audit := exec.Command("go", "run", "../../examples/audit", "-dir", filepath.Join(work, "data"))
	out, err = audit.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, s := range tool {
		args, err := splitWords(s.cmd)
		require.NoError(t, err, "README.md:%d", s.line)
		if args[len(args)-1] == "serve" {
			got, want := readmeServe(t, bin, work, args, s.want)
			assert.Equal(t, want, got, "README.md:%d: revkv %s", s.line, s.cmd)
			continue
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		got, _ := cmd.CombinedOutput()
		assert.Equal(t, s.want, strings.TrimRight(string(got), "\n"), "README.md:%d: revkv %s", s.line, s.cmd)
	}

	_, addr := runServer(t)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	ms := regexp.MustCompile(`\(integer\) 1\d{12}\b`)
	for _, s := range server {
		args, err := splitWords(s.cmd)
		require.NoError(t, err, "README.md:%d", s.line)
		fmt.Fprintf(conn, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(conn, "$%d\r\n%s\r\n", len(a), a)
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		v, err := readReply(r)
		require.NoError(t, err, "README.md:%d", s.line)
		got := strings.Join(cliFormat(v), "\n")
		assert.Equal(t, ms.ReplaceAllString(s.want, "(integer) <unix ms>"), ms.ReplaceAllString(got, "(integer) <unix ms>"),
			"README.md:%d: redis-cli %s\n%s", s.line, s.cmd, got)
	}
}

// readmeServe runs a sample of 'revkv serve', which serves until it is
// stopped, on a free port in place of the default one the README shows:
// it returns the first line the command printed and the sample's, the
// port swapped in, then stops it.
func readmeServe(t *testing.T, bin, work string, args []string, want string) (string, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append(args, "--addr", addr)...)
	cmd.Dir = work
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimRight(l, "\n")
	}()
	select {
	case got := <-line:
		return got, strings.ReplaceAll(want, "127.0.0.1:8380", addr)
	case <-time.After(30 * time.Second):
		t.Fatalf("revkv %s printed nothing in 30 s", strings.Join(args, " "))
		return "", ""
	}
}

// readmeTool returns the tool's samples, checking that the README says
// how their directory is made.
func readmeTool(t *testing.T) []sample {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(b), "go run ./examples/audit -dir data"), "the README says how the tool's directory is made")
	samples := readmeSamples(t, "revkv ")
	for _, s := range samples {
		require.True(t, strings.HasPrefix(s.cmd, "--dir data "), "README.md:%d: the tool's samples run on the trail in data", s.line)
	}
	return samples
}

// splitWords splits a command line as a shell would for these samples:
// words separated by spaces, "double" or 'single' quoted words whole.
func splitWords(s string) ([]string, error) {
	var out []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		out = append(out, w.String())
	}
	return out, nil
}

// A RESP2 reply, as redis-cli tells them apart.
type (
	status  string
	respErr string
	bulk    string
	integer int64
	nilRep  struct{}
	array   []any
)

// readReply reads one RESP2 reply.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, fmt.Errorf("an empty line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return status(body), nil
	case '-':
		return respErr(body), nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return integer(n), err
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nilRep{}, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		return bulk(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nilRep{}, err
		}
		a := make(array, n)
		for i := range a {
			if a[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("not a reply: %q", line)
}

// cliFormat prints a reply as redis-cli does on a terminal: lines.
func cliFormat(v any) []string {
	switch v := v.(type) {
	case status:
		return []string{string(v)}
	case respErr:
		return []string{"(error) " + string(v)}
	case integer:
		return []string{fmt.Sprintf("(integer) %d", v)}
	case nilRep:
		return []string{"(nil)"}
	case bulk:
		return []string{cliQuote(string(v))}
	case array:
		if len(v) == 0 {
			return []string{"(empty array)"}
		}
		width := len(strconv.Itoa(len(v)))
		var out []string
		for i, e := range v {
			prefix := fmt.Sprintf("%*d) ", width, i+1)
			for j, l := range cliFormat(e) {
				if j == 0 {
					out = append(out, prefix+l)
				} else {
					out = append(out, strings.Repeat(" ", len(prefix))+l)
				}
			}
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}

// cliQuote quotes s as redis-cli does (sdscatrepr).
func cliQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
