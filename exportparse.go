package revkv

import (
	"bufio"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
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
				if !parseLine(sc.Bytes(), l) {
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
	s := lineScan{b: b}
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
	str := string(v)
	switch f {
	case fTime:
		l.Time = str
	case fZone:
		l.Zone = str
	case fKey:
		l.Key = &str
	case fKeyB64:
		l.KeyBase64 = &str
	case fOp:
		l.Op = str
	case fValue:
		l.Value = &str
	case fValueB64:
		l.ValueBase64 = &str
	case fExpires:
		l.ExpiresAt = str
	case fPrev:
		l.Prev = str
	case fDigest:
		l.Digest = str
	}
	return true
}

// lineScan reads a line's bytes from i on.
type lineScan struct {
	b []byte
	i int
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
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			v := s.b[start:j]
			return v, utf8.Valid(v)
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
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
