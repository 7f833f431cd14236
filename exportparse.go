package revkv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// lineBatch is lines of an export, parsed: each line's error is in errs,
// and err, in the last batch, is the reader's.
type lineBatch struct {
	lines []exportLine
	errs  []error
	err   error
}

// parseLines parses the lines sc reads on a goroutine of its own, a batch
// at a time, so that Import checks and writes one batch while the next is
// parsed. A batch goes when it is full, at a line that does not parse,
// and at the end. stop ends it and waits for it: it reads no further line
// once stop is called (a read under way is waited for), and never after
// stop returns.
func parseLines(sc *bufio.Scanner) (<-chan lineBatch, func()) {
	const batchLines = 512
	out := make(chan lineBatch, 4)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(out)
		b := lineBatch{}
		var p lineParser
		for {
			select {
			case <-done:
				return
			default:
			}
			more := sc.Scan()
			var err error
			if more {
				b.lines = append(b.lines, exportLine{})
				l := &b.lines[len(b.lines)-1]
				if !p.parse(sc.Bytes(), l) {
					*l = exportLine{}
					err = json.Unmarshal(sc.Bytes(), l)
				}
				b.errs = append(b.errs, err)
			} else {
				b.err = sc.Err()
			}
			if !more || len(b.lines) == batchLines || err != nil { // a bad line goes at once: Import stops there

				select {
				case out <- b:
				case <-done:
					return
				}
				b = lineBatch{lines: make([]exportLine, 0, batchLines), errs: make([]error, 0, batchLines)}
			}
			if !more || err != nil { // Import stops at a bad line: read no further
				return
			}
		}
	})
	return out, func() { close(done); wg.Wait() }
}

// parseLine fills l, which must be zero, from one line of an export in the
// form Export writes it: one object of the fields of exportLine, by their
// exact names, each at most once; strings without escapes, of valid UTF-8;
// integers without fraction or exponent. It reports false for any other
// line (or with l partly filled), which the caller then decodes with
// encoding/json: where it reports true, l is what encoding/json gives.
// Import reads every line of an export, and encoding/json's reflection is
// slow for that.
func parseLine(b []byte, l *exportLine) bool {
	var p lineParser
	return p.parse(b, l)
}

// lineParser is parseLine for a stream of lines, which it parses with
// fewer allocations: the lines of one commit share their time, which it
// makes a string of once, and ops are the three constant strings. The
// strings a line points to (its key and value) have their headers in
// chunks it allocates a thousand at a time, not one by one.
type lineParser struct {
	time, zone string   // the last line's
	strs       []string // the chunk in use: a line's *string points into it
}

// str returns a pointer to a string of v's bytes, its header in the chunk.
func (p *lineParser) str(v []byte) *string { return p.put(string(v)) }

// put returns a pointer to s, its header in the chunk.
func (p *lineParser) put(s string) *string {
	if len(p.strs) == cap(p.strs) {
		p.strs = make([]string, 0, 1024) // the lines holding the last chunk's keep it
	}
	p.strs = append(p.strs, s)
	return &p.strs[len(p.strs)-1]
}

// again returns last if v holds its bytes, else a new string of them.
func again(last *string, v []byte) string {
	if *last != string(v) {
		*last = string(v)
	}
	return *last
}

func (p *lineParser) parse(b []byte, l *exportLine) bool {
	s := lineScan{b: b, p: p}
	if !s.byte('{') {
		return false
	}
	var seen uint32
	for first := true; ; first = false {
		if s.byte('}') {
			s.ws()
			return s.i == len(s.b)
		}
		if !first && !s.byte(',') {
			return false
		}
		name, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		f := lineField(string(name))
		if f < 0 || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		if !s.field(f, l) {
			return false
		}
	}
}

// The fields of a line, by their JSON names.
const (
	fRev = iota
	fTime
	fZone
	fOffset
	fKey
	fKeyB64
	fOp
	fValue
	fValueB64
	fExpires
	fNotes
	fNotesB64
	fTrimmed
	fDropped
	fPrev
	fDigest
)

func lineField(name string) int {
	switch name {
	case "rev":
		return fRev
	case "time":
		return fTime
	case "zone":
		return fZone
	case "offset":
		return fOffset
	case "key":
		return fKey
	case "key_base64":
		return fKeyB64
	case "op":
		return fOp
	case "value":
		return fValue
	case "value_base64":
		return fValueB64
	case "expires_at":
		return fExpires
	case "annotations":
		return fNotes
	case "annotations_base64":
		return fNotesB64
	case "trimmed":
		return fTrimmed
	case "dropped":
		return fDropped
	case "prev":
		return fPrev
	case "digest":
		return fDigest
	}
	return -1
}

// field reads the value of field f into l.
func (s *lineScan) field(f int, l *exportLine) bool {
	switch f {
	case fRev, fDropped, fOffset:
		n, ok := s.int()
		switch {
		case !ok:
			return false
		case f == fRev:
			l.Rev = n
		case f == fDropped:
			l.Dropped = n
		case n != int64(int(n)):
			return false
		default:
			o := int(n)
			l.Offset = &o
		}
		return true
	case fTrimmed:
		switch {
		case s.word("true"):
			l.Trimmed = true
		case s.word("false"):
		default:
			return false
		}
		return true
	case fNotes, fNotesB64:
		m, ok := s.object()
		if f == fNotes {
			l.Annotations = m
		} else {
			l.AnnotationsB64 = m
		}
		return ok
	}
	v, ok := s.str()
	if !ok {
		return false
	}
	p := s.p
	switch f {
	case fTime:
		l.Time = again(&p.time, v)
	case fZone:
		l.Zone = again(&p.zone, v)
	case fKey:
		l.Key = p.str(v)
	case fKeyB64:
		l.KeyBase64 = p.str(v)
	case fOp:
		l.Op = opName(v)
	case fValue:
		if len(v) == 0 {
			l.Value = p.str(v)
			break
		}
		l.valueBytes = bytes.Clone(v)
		l.Value = p.put(unsafe.String(unsafe.SliceData(l.valueBytes), len(v)))
	case fValueB64:
		l.ValueBase64 = p.str(v)
	case fExpires:
		l.ExpiresAt = string(v)
	case fPrev:
		l.Prev = string(v)
	case fDigest:
		l.Digest = string(v)
	}
	return true
}

// opName returns v as a string: one of opNames without an allocation.
func opName(v []byte) string {
	for _, name := range opNames[1:] {
		if string(v) == name {
			return name
		}
	}
	return string(v)
}

// lineScan reads a line's bytes from i on, for p.
type lineScan struct {
	b []byte
	i int
	p *lineParser
}

// ws skips JSON's white space.
func (s *lineScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// byte reads c, after white space.
func (s *lineScan) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// word reads the literal w, after white space.
func (s *lineScan) word(w string) bool {
	s.ws()
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// str reads a string without escapes or control characters, of valid
// UTF-8 (encoding/json would replace what is not), and returns its bytes.
func (s *lineScan) str() ([]byte, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	n := bytes.IndexByte(s.b[start:], '"')
	if n < 0 {
		return nil, false
	}
	v := s.b[start : start+n]
	if !plainString(v) {
		return nil, false
	}
	s.i = start + n + 1
	return v, true
}

// plainString reports whether v, a JSON string's contents up to its first
// quote, has no escape and no control character and is valid UTF-8. It
// looks at eight bytes at a time while they are ASCII, as exports mostly
// are.
func plainString(v []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := uint64(v[i]) | uint64(v[i+1])<<8 | uint64(v[i+2])<<16 | uint64(v[i+3])<<24 |
			uint64(v[i+4])<<32 | uint64(v[i+5])<<40 | uint64(v[i+6])<<48 | uint64(v[i+7])<<56
		bs := w ^ (ones * '\\')
		switch {
		case w&highs != 0: // not ASCII: byte by byte from here
			return plainTail(v[i:])
		case (w-ones*0x20)&^w&highs != 0, (bs-ones)&^bs&highs != 0: // a byte below 0x20, or a backslash
			return false
		}
	}
	return plainTail(v[i:])
}

// plainTail is plainString byte by byte.
func plainTail(v []byte) bool {
	for _, c := range v {
		if c == '\\' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(v)
}

// int reads an integer as JSON writes one: an optional minus, then 0 or
// digits without a leading zero; no fraction, no exponent.
func (s *lineScan) int() (int64, bool) {
	s.ws()
	start, j := s.i, s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	digits := j
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		j++
	}
	switch {
	case j == digits, s.b[digits] == '0' && j-digits > 1:
		return 0, false
	case j < len(s.b) && (s.b[j] == '.' || s.b[j] == 'e' || s.b[j] == 'E'):
		return 0, false
	}
	n, err := strconv.ParseInt(string(s.b[start:j]), 10, 64)
	s.i = j
	return n, err == nil
}

// object reads an object of strings.
func (s *lineScan) object() (map[string]string, bool) {
	if !s.byte('{') {
		return nil, false
	}
	m := map[string]string{}
	if s.byte('}') {
		return m, true
	}
	for {
		k, ok := s.str()
		if !ok || !s.byte(':') {
			return nil, false
		}
		v, ok := s.str()
		if !ok {
			return nil, false
		}
		m[string(k)] = string(v)
		if s.byte('}') {
			return m, true
		}
		if !s.byte(',') {
			return nil, false
		}
	}
}
