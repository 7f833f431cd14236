// Package resp reads Redis protocol (RESP2) commands and writes replies,
// with the limits a server facing untrusted clients needs: a command's
// bulk strings, argument count and inline length are bounded, and memory
// grows only with what a client has actually sent, never with what it
// declares it will send. Its errors are Redis's own texts.
package resp

import (
	"bufio"
	"errors"
	"io"
	"strconv"
)

// ProtocolError is input that is not RESP. Redis answers it with
// "-ERR Protocol error: ..." and closes the connection; so should its user.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

// Limits of what one command may hold, as in Redis.
const (
	DefaultMaxBulk = 512 << 20 // proto-max-bulk-len
	MaxInline      = 64 << 10  // PROTO_INLINE_MAX_SIZE
	MaxArgs        = 1 << 20   // a multibulk count above this is refused
)

// Reader reads commands from a connection. Not safe for concurrent use.
type Reader struct {
	r *bufio.Reader
	// MaxBulk bounds one bulk string (DefaultMaxBulk unless set).
	MaxBulk int64
	args    [][]byte
	data    []byte // the arguments' bytes, reused by each command
	ends    []int  // where each argument ends in data, reused
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 16<<10), MaxBulk: DefaultMaxBulk}
}

// Buffered returns how many bytes have been read from the connection and
// not yet parsed: zero when the client has sent no further command, which
// is when a server flushes its replies (so that a pipeline gets them in one
// write).
func (rd *Reader) Buffered() int { return rd.r.Buffered() }

// ReadCommand returns the next command's arguments, skipping empty ones.
// They are valid until the next call. An error is the connection's (io.EOF
// at a clean end) or a *ProtocolError.
func (rd *Reader) ReadCommand() ([][]byte, error) {
	for {
		args, err := rd.read()
		if err != nil || len(args) > 0 {
			return args, err
		}
	}
}

func (rd *Reader) read() ([][]byte, error) {
	b, err := rd.r.Peek(1)
	if err != nil {
		return nil, err
	}
	if b[0] != '*' {
		return rd.inline()
	}
	line, err := rd.line("too big mbulk count string")
	if err != nil {
		return nil, err
	}
	n, ok := parseLen(line[1:])
	if !ok || n > MaxArgs {
		return nil, &ProtocolError{"invalid multibulk length"}
	}
	rd.args, rd.data, rd.ends = rd.args[:0], rd.data[:0], rd.ends[:0]
	for range n { // ends, not slices: data may move as it grows
		line, err := rd.line("too big bulk count string")
		if err != nil {
			return nil, err
		}
		if len(line) == 0 || line[0] != '$' {
			got := "\\r"
			if len(line) > 0 {
				got = string(line[0])
			}
			return nil, &ProtocolError{"expected '$', got '" + got + "'"}
		}
		size, ok := parseLen(line[1:])
		if !ok || size < 0 || size > rd.MaxBulk {
			return nil, &ProtocolError{"invalid bulk length"}
		}
		if err := rd.bulk(int(size)); err != nil {
			return nil, err
		}
		rd.ends = append(rd.ends, len(rd.data))
	}
	start := 0
	for _, end := range rd.ends {
		rd.args = append(rd.args, rd.data[start:end:end])
		start = end
	}
	return rd.args, nil
}

// parseLen parses a length as Redis does (string2ll): an optional minus
// and decimal digits, without allocating.
func parseLen(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// bulk appends size bytes and the CRLF after them to data (without the
// CRLF), growing data only as the bytes arrive.
func (rd *Reader) bulk(size int) error {
	for size > 0 {
		chunk := min(size, 64<<10)
		start := len(rd.data)
		rd.data = append(rd.data, make([]byte, chunk)...)
		if _, err := io.ReadFull(rd.r, rd.data[start:]); err != nil {
			return unexpected(err)
		}
		size -= chunk
	}
	var crlf [2]byte
	if _, err := io.ReadFull(rd.r, crlf[:]); err != nil {
		return unexpected(err)
	}
	if crlf != [2]byte{'\r', '\n'} {
		return &ProtocolError{"invalid bulk length"}
	}
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// line reads a line of at most MaxInline bytes, without its CRLF (or LF).
func (rd *Reader) line(tooBig string) ([]byte, error) {
	line, err := rd.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// Longer than the buffer: gather it, up to the limit.
		buf := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) && len(buf) < MaxInline {
			line, err = rd.r.ReadSlice('\n')
			buf = append(buf, line...)
		}
		if len(buf) >= MaxInline {
			return nil, &ProtocolError{tooBig}
		}
		line = buf
	}
	if err != nil {
		if len(line) > 0 {
			return nil, unexpected(err)
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// inline reads a command typed as a line of words (telnet, redis-cli's
// raw mode), quoted as Redis quotes: "..." with backslash escapes, '...'.
func (rd *Reader) inline() ([][]byte, error) {
	line, err := rd.line("too big inline request")
	if err != nil {
		return nil, err
	}
	rd.args, rd.data = rd.args[:0], rd.data[:0]
	var ends []int
	for i := 0; ; {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		var err error
		i, err = rd.word(line, i)
		if err != nil {
			return nil, err
		}
		ends = append(ends, len(rd.data))
	}
	start := 0
	for _, end := range ends {
		rd.args = append(rd.args, rd.data[start:end:end])
		start = end
	}
	return rd.args, nil
}

var errQuotes = &ProtocolError{"unbalanced quotes in request"}

// word appends the word of line starting at i to data and returns where it
// ends.
func (rd *Reader) word(line []byte, i int) (int, error) {
	switch q := line[i]; q {
	case '"', '\'':
		for i++; ; i++ {
			if i >= len(line) {
				return 0, errQuotes
			}
			c := line[i]
			switch {
			case c == q:
				if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
					return 0, errQuotes // a closing quote must end the word
				}
				return i + 1, nil
			case c == '\\' && i+1 < len(line) && q == '\'' && line[i+1] == '\'':
				rd.data = append(rd.data, '\'')
				i++
			case c == '\\' && i+1 < len(line) && q == '"':
				i++
				if line[i] == 'x' && i+2 < len(line) && isHex(line[i+1]) && isHex(line[i+2]) {
					v, _ := strconv.ParseUint(string(line[i+1:i+3]), 16, 8)
					rd.data = append(rd.data, byte(v))
					i += 2
					continue
				}
				rd.data = append(rd.data, unescape(line[i]))
			default:
				rd.data = append(rd.data, c)
			}
		}
	default:
		for ; i < len(line) && line[i] != ' ' && line[i] != '\t'; i++ {
			rd.data = append(rd.data, line[i])
		}
		return i, nil
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

// Writer builds replies in memory; Flush writes them out. Building never
// blocks, so replies can be built while a lock is held and written after
// it is released.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Len returns the number of bytes built and not yet flushed.
func (w *Writer) Len() int { return len(w.buf) }

// Flush writes what was built.
func (w *Writer) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	if cap(w.buf) > 1<<20 { // do not keep a huge reply's buffer
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	return err
}

// Simple writes a simple string (+OK).
func (w *Writer) Simple(s string) { w.line('+', s) }

// Error writes an error reply; msg starts with its code (ERR, WRONGTYPE...).
func (w *Writer) Error(msg string) { w.line('-', msg) }

func (w *Writer) line(c byte, s string) {
	w.buf = append(w.buf, c)
	for i := 0; i < len(s); i++ { // a CR or LF would end the reply early
		if s[i] == '\r' || s[i] == '\n' {
			w.buf = append(w.buf, ' ')
		} else {
			w.buf = append(w.buf, s[i])
		}
	}
	w.buf = append(w.buf, '\r', '\n')
}

// Int writes an integer.
func (w *Writer) Int(n int64) {
	w.buf = append(w.buf, ':')
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
}

// Array starts an array of n elements.
func (w *Writer) Array(n int) {
	w.buf = append(w.buf, '*')
	w.buf = strconv.AppendInt(w.buf, int64(n), 10)
	w.buf = append(w.buf, '\r', '\n')
}

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.buf = append(w.buf, '$')
	w.buf = strconv.AppendInt(w.buf, int64(len(b)), 10)
	w.buf = append(w.buf, '\r', '\n')
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, '\r', '\n')
}

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) {
	w.buf = append(w.buf, '$')
	w.buf = strconv.AppendInt(w.buf, int64(len(s)), 10)
	w.buf = append(w.buf, '\r', '\n')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// Null writes the null bulk string ($-1), RESP2's nil.
func (w *Writer) Null() { w.buf = append(w.buf, "$-1\r\n"...) }

// NullArray writes the null array (*-1): EXEC's answer to a changed WATCH.
func (w *Writer) NullArray() { w.buf = append(w.buf, "*-1\r\n"...) }

// Truncate drops what was built after the first n bytes: a reply replaced
// by an error.
func (w *Writer) Truncate(n int) { w.buf = w.buf[:n] }

// Take removes what was built after the first n bytes and returns it.
func (w *Writer) Take(n int) []byte {
	b := append([]byte(nil), w.buf[n:]...)
	w.buf = w.buf[:n]
	return b
}

// Raw appends an already encoded reply.
func (w *Writer) Raw(b []byte) { w.buf = append(w.buf, b...) }
