// Package resp reads Redis protocol (RESP2) commands and writes replies,
// with the limits a server facing untrusted clients needs: a command's
// bulk strings, argument count and inline length are bounded, and memory
// grows only with what a client has actually sent, never with what it
// declares it will send. Its errors are Redis's own texts.
package resp

import (
	"bytes"
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
	UnauthArgs     = 10        // the most arguments before authentication
	UnauthBulk     = 16 << 10  // the longest bulk string before authentication
)

// Reader reads commands from a connection: it reads into its buffer and
// splits whole commands out of it with a parser. Not safe for concurrent
// use.
type Reader struct {
	r io.Reader
	// MaxBulk bounds one bulk string (DefaultMaxBulk unless set).
	MaxBulk int64
	// Unauthenticated bounds the next commands to what AUTH needs, as
	// Redis bounds a client that has not authenticated: UnauthArgs
	// arguments, UnauthBulk bytes each.
	Unauthenticated bool
	p               parser
	buf             []byte // what was read; buf[off:] is not parsed yet
	off             int
}

// readSize is the buffer a Reader starts with, and the least it grows by.
const readSize = 16 << 10

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r, MaxBulk: DefaultMaxBulk} }

// Buffered returns how many bytes have been read from the connection and
// not yet parsed: zero when the client has sent no further command, which
// is when a server flushes its replies (so that a pipeline gets them in one
// write).
func (rd *Reader) Buffered() int { return len(rd.buf) - rd.off }

// ReadCommand returns the next command's arguments, skipping empty ones,
// reading as much as it needs. They are valid until the next call. An
// error is the connection's (io.EOF at a clean end, io.ErrUnexpectedEOF
// inside a command) or a *ProtocolError.
func (rd *Reader) ReadCommand() ([][]byte, error) {
	for {
		args, err := rd.next()
		if err != nil || args != nil {
			return args, err
		}
		if err := rd.fill(); err != nil {
			return nil, err
		}
	}
}

// next returns the next whole command already read, skipping empty ones,
// or nil if there is none yet; it never reads. An error is a
// *ProtocolError: the connection cannot be read further.
func (rd *Reader) next() ([][]byte, error) {
	rd.p.maxBulk, rd.p.unauth = rd.MaxBulk, rd.Unauthenticated
	for {
		args, n, err := rd.p.parse(rd.buf[rd.off:])
		if err != nil || n == 0 {
			return nil, err
		}
		rd.off += n
		if len(args) > 0 {
			return args, nil
		}
	}
}

// fill reads once from the connection into the buffer, which grows only as
// a command in progress fills it: memory follows what a client has sent,
// never what it declares it will send. Its error is the reader's
// (io.ErrUnexpectedEOF for an io.EOF inside a command).
func (rd *Reader) fill() error {
	switch {
	case rd.off == len(rd.buf): // all parsed: start over
		rd.buf, rd.off = rd.buf[:0], 0
		if cap(rd.buf) > 4*readSize { // do not keep a big command's buffer
			rd.buf = nil
		}
	case cap(rd.buf)-len(rd.buf) < readSize/4 && rd.off > 0: // nearly full: move the command in progress to the front
		rd.buf, rd.off = rd.buf[:copy(rd.buf, rd.buf[rd.off:])], 0
	}
	if cap(rd.buf)-len(rd.buf) < readSize/4 {
		rd.buf = append(rd.buf, make([]byte, max(readSize, cap(rd.buf)))...)[:len(rd.buf)]
	}
	n, err := rd.r.Read(rd.buf[len(rd.buf):cap(rd.buf)])
	rd.buf = rd.buf[:len(rd.buf)+n]
	switch {
	case n > 0:
		return nil
	case err == nil:
		return io.ErrNoProgress
	case err == io.EOF && rd.Buffered() > 0:
		return io.ErrUnexpectedEOF
	}
	return err
}

// parser splits commands out of a stream of bytes that arrives in pieces:
// multibulk commands (what clients send) and inline ones (a line of words,
// as typed into telnet). It keeps where it got to in a command in progress,
// so that a command arriving a byte at a time is parsed in linear time.
type parser struct {
	maxBulk int64 // bounds one bulk string
	unauth  bool  // bounds commands to UnauthArgs and UnauthBulk
	// The multibulk command in progress, while want > 0: its number of
	// arguments, where the next argument's header starts, and the start
	// and end of each argument read so far.
	want  int
	next  int
	spans []int
	// nl is how far the line starting at line is known to hold no '\n'.
	line, nl int
	args     [][]byte
	data     []byte // an inline command's words, unescaped
	ends     []int
}

// parse returns the first command in buf and its length in bytes. A
// length of 0 means buf holds only the start of a command: call again with
// the same start and more bytes after it. An empty command (a blank line,
// *0) has a length and no arguments. The arguments point into buf or the
// parser and are valid until the next call. After an error the stream
// cannot be parsed further.
func (p *parser) parse(buf []byte) (args [][]byte, n int, err error) {
	if p.want == 0 {
		if len(buf) == 0 {
			return nil, 0, nil
		}
		if buf[0] != '*' {
			return p.inline(buf)
		}
		line, n, err := p.readLine(buf, 0, "too big mbulk count string")
		if err != nil || n == 0 {
			return nil, 0, err
		}
		count, ok := parseLen(line[1:])
		if !ok || count > MaxArgs {
			return nil, 0, &ProtocolError{"invalid multibulk length"}
		}
		if count > UnauthArgs && p.unauth {
			return nil, 0, &ProtocolError{"unauthenticated multibulk length"}
		}
		if count <= 0 {
			return nil, n, nil
		}
		p.want, p.next, p.spans = int(count), n, p.spans[:0]
	}
	for len(p.spans) < 2*p.want {
		line, n, err := p.readLine(buf, p.next, "too big bulk count string")
		if err != nil || n == 0 {
			return nil, 0, p.fail(err)
		}
		if len(line) == 0 || line[0] != '$' {
			got := "\\r"
			if len(line) > 0 {
				got = string(line[0])
			}
			return nil, 0, p.fail(&ProtocolError{"expected '$', got '" + got + "'"})
		}
		size, ok := parseLen(line[1:])
		if !ok || size < 0 || size > p.maxBulk {
			return nil, 0, p.fail(&ProtocolError{"invalid bulk length"})
		}
		if size > UnauthBulk && p.unauth {
			return nil, 0, p.fail(&ProtocolError{"unauthenticated bulk length"})
		}
		start := p.next + n
		if int64(len(buf)-start) < size+2 {
			return nil, 0, nil // the rest has not arrived
		}
		end := start + int(size)
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return nil, 0, p.fail(&ProtocolError{"invalid bulk length"})
		}
		p.spans = append(p.spans, start, end)
		p.next = end + 2
	}
	args = p.args[:0]
	for i := 0; i < len(p.spans); i += 2 {
		args = append(args, buf[p.spans[i]:p.spans[i+1]:p.spans[i+1]])
	}
	p.args, p.want = args, 0
	return args, p.next, nil
}

// fail ends the command in progress with err.
func (p *parser) fail(err error) error {
	p.want = 0
	return err
}

// readLine returns the line of buf starting at from, without its CRLF (or
// LF), and its length with them; a length of 0 if it has not all arrived.
// A line of MaxInline bytes or more is a *ProtocolError saying tooBig.
func (p *parser) readLine(buf []byte, from int, tooBig string) ([]byte, int, error) {
	seen := 0
	if p.line == from {
		seen = min(p.nl, len(buf)-from)
	}
	i := bytes.IndexByte(buf[from+seen:], '\n')
	if i < 0 {
		if len(buf)-from >= MaxInline {
			return nil, 0, &ProtocolError{tooBig}
		}
		p.line, p.nl = from, len(buf)-from
		return nil, 0, nil
	}
	i += seen
	p.line, p.nl = -1, 0
	if i+1 >= MaxInline {
		return nil, 0, &ProtocolError{tooBig}
	}
	line := buf[from : from+i]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, i + 1, nil
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

// inline parses a command typed as a line of words (telnet, redis-cli's
// raw mode), quoted as Redis quotes: "..." with backslash escapes, '...'.
func (p *parser) inline(buf []byte) ([][]byte, int, error) {
	line, n, err := p.readLine(buf, 0, "too big inline request")
	if err != nil || n == 0 {
		return nil, 0, err
	}
	p.args, p.data, p.ends = p.args[:0], p.data[:0], p.ends[:0]
	for i := 0; ; {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		var err error
		i, err = p.word(line, i)
		if err != nil {
			return nil, 0, err
		}
		p.ends = append(p.ends, len(p.data))
	}
	start := 0
	for _, end := range p.ends {
		p.args = append(p.args, p.data[start:end:end])
		start = end
	}
	return p.args, n, nil
}

var errQuotes = &ProtocolError{"unbalanced quotes in request"}

// word appends the word of line starting at i to data and returns where it
// ends.
func (p *parser) word(line []byte, i int) (int, error) {
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
				p.data = append(p.data, '\'')
				i++
			case c == '\\' && i+1 < len(line) && q == '"':
				i++
				if line[i] == 'x' && i+2 < len(line) && isHex(line[i+1]) && isHex(line[i+2]) {
					v, _ := strconv.ParseUint(string(line[i+1:i+3]), 16, 8)
					p.data = append(p.data, byte(v))
					i += 2
					continue
				}
				p.data = append(p.data, unescape(line[i]))
			default:
				p.data = append(p.data, c)
			}
		}
	default:
		for ; i < len(line) && line[i] != ' ' && line[i] != '\t'; i++ {
			p.data = append(p.data, line[i])
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
	// resp3 says the client chose RESP3 (HELLO 3): see resp3.go.
	resp3 bool
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
func (w *Writer) Null() {
	if w.resp3 {
		w.buf = append(w.buf, "_\r\n"...)
		return
	}
	w.buf = append(w.buf, "$-1\r\n"...)
}

// NullArray writes the null array (*-1): EXEC's answer to a changed WATCH.
func (w *Writer) NullArray() {
	if w.resp3 {
		w.buf = append(w.buf, "_\r\n"...)
		return
	}
	w.buf = append(w.buf, "*-1\r\n"...)
}

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
