package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

func readAll(t *testing.T, in string, r func(io.Reader) io.Reader) ([][]string, error) {
	rd := NewReader(r(strings.NewReader(in)))
	rd.MaxBulk = 1 << 10
	var cmds [][]string
	for {
		args, err := rd.ReadCommand()
		if err != nil {
			return cmds, err
		}
		var cmd []string
		for _, a := range args {
			cmd = append(cmd, string(a))
		}
		cmds = append(cmds, cmd)
	}
}

func TestReadCommands(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [][]string
		err  string // "" is io.EOF
	}{
		{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", [][]string{{"GET", "k"}}, ""},
		{"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$5\r\na\r\nbc\r\n", [][]string{{"SET", "", "a\r\nbc"}}, ""},
		{"*0\r\n*-1\r\n\r\n  \r\nPING\r\n", [][]string{{"PING"}}, ""},
		{"set a \"b c\" 'd e'\n", [][]string{{"set", "a", "b c", "d e"}}, ""},
		{"set k \"\\x41\\n\\\"\" 'it\\'s'\r\n", [][]string{{"set", "k", "A\n\"", "it's"}}, ""},
		{"*1\r\n$3\r\nGE", nil, "unexpected EOF"},
		{"*x\r\n", nil, "Protocol error: invalid multibulk length"},
		{"*2000000\r\n", nil, "Protocol error: invalid multibulk length"},
		{"*1\r\n$-1\r\n", nil, "Protocol error: invalid bulk length"},
		{"*1\r\n$2048\r\n", nil, "Protocol error: invalid bulk length"},
		{"*1\r\n$1\r\nab\r\n", nil, "Protocol error: invalid bulk length"},
		{"*1\r\n:1\r\n", nil, "Protocol error: expected '$', got ':'"},
		{"get \"a\r\n", nil, "Protocol error: unbalanced quotes in request"},
		{"get \"a\"b\r\n", nil, "Protocol error: unbalanced quotes in request"},
		{strings.Repeat("x", MaxInline+10), nil, "Protocol error: too big inline request"},
	} {
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"whole":    func(r io.Reader) io.Reader { return r },
			"bytewise": iotest.OneByteReader, // a client sending one byte at a time
		} {
			got, err := readAll(t, tc.in, wrap)
			require.Equal(t, tc.want, got, "%q (%s)", tc.in, name)
			if tc.err == "" {
				require.Equal(t, io.EOF, err, "%q (%s)", tc.in, name)
				continue
			}
			require.EqualError(t, err, tc.err, "%q (%s)", tc.in, name)
			var pe *ProtocolError
			require.Equal(t, strings.HasPrefix(tc.err, "Protocol"), errors.As(err, &pe))
		}
	}
}

// A bulk length is a promise, not an allocation: memory grows with the
// bytes that arrive.
func TestBulkGrowsWithData(t *testing.T) {
	rd := NewReader(strings.NewReader("*1\r\n$100000000\r\nabc"))
	rd.MaxBulk = DefaultMaxBulk
	_, err := rd.ReadCommand()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Less(t, cap(rd.buf), 1<<20, "a 100 MB promise with 3 bytes sent")
}

func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Simple("OK")
	w.Error("ERR a\r\nb")
	w.Int(-42)
	w.Bulk([]byte("a\r\nb"))
	w.BulkString("")
	w.Null()
	w.NullArray()
	w.Array(2)
	mark := w.Len()
	w.Int(1)
	require.Equal(t, ":1\r\n", string(w.Take(mark)))
	w.Int(2)
	w.Truncate(mark)
	w.Raw([]byte(":3\r\n:4\r\n"))
	require.NoError(t, w.Flush())
	require.Equal(t, "+OK\r\n-ERR a  b\r\n:-42\r\n$4\r\na\r\nb\r\n$0\r\n\r\n$-1\r\n*-1\r\n*2\r\n:3\r\n:4\r\n", out.String())
	require.Equal(t, 0, w.Len())
}

// FuzzReader: no input panics the reader or makes it hold more than the
// input's size plus its buffer.
func FuzzReader(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\nset a \"b\\x41\" 'c'\r\n"))
	f.Add([]byte("*1\r\n$99999\r\nab"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := NewReader(bytes.NewReader(in))
		rd.MaxBulk = 1 << 16
		for {
			args, err := rd.ReadCommand()
			if err != nil {
				break
			}
			n := 0
			for _, a := range args {
				n += len(a)
			}
			if n > len(in) {
				t.Fatalf("arguments of %d bytes from %d bytes of input", n, len(in))
			}
		}
		if cap(rd.buf) > 2*len(in)+(64<<10) {
			t.Fatalf("holds %d bytes for %d of input", cap(rd.buf), len(in))
		}
	})
}

// BenchmarkReadCommand reads a pipeline of SETs and GETs as redis-benchmark
// sends them, a 16 KiB read at a time.
func BenchmarkReadCommand(b *testing.B) {
	var pipe bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&pipe, "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$3\r\nxxx\r\n", i)
		fmt.Fprintf(&pipe, "*2\r\n$3\r\nGET\r\n$16\r\nkey:%012d\r\n", i)
	}
	in := pipe.Bytes()
	src := bytes.NewReader(in)
	rd := NewReader(src)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		src.Reset(in)
		for range 2000 {
			if _, err := rd.ReadCommand(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// Unauthenticated: what AUTH needs and no more, with Redis's texts.
func TestUnauthenticated(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"*11\r\n", "Protocol error: unauthenticated multibulk length"},
		{"*2\r\n$4\r\nauth\r\n$16385\r\n", "Protocol error: unauthenticated bulk length"},
		{"*10\r\n" + strings.Repeat("$16384\r\n"+strings.Repeat("x", 16384)+"\r\n", 10), ""},
	} {
		rd := NewReader(strings.NewReader(tc.in))
		rd.Unauthenticated = true
		_, err := rd.ReadCommand()
		if tc.err == "" {
			require.NoError(t, err)
			continue
		}
		require.EqualError(t, err, tc.err)
	}
}
