package revkv

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/revkv/revkv/chain"
)

// The export format (Store.Export, Import) is written down for users in
// the package doc's "Export format" section; the types below are its
// lines, and appendLine writes them without encoding/json's allocations.

// exportHeader is the first line.
type exportHeader struct {
	Format     int    `json:"revkv_export"`
	Prefix     string `json:"prefix,omitempty"`
	Rev        int64  `json:"rev"`
	Time       string `json:"time,omitempty"`
	First      string `json:"first,omitempty"`
	Base       int64  `json:"base"`
	Floor      int64  `json:"floor"`
	CompactRev int64  `json:"compact_rev,omitempty"`
	Compacted  string `json:"compacted,omitempty"`
	TrimFloor  int64  `json:"trim_floor,omitempty"`
}

// exportLine is every other line. Its fields are in the order
// appendLine writes them.
type exportLine struct {
	Rev         int64             `json:"rev"`
	Time        string            `json:"time,omitempty"`
	Zone        string            `json:"zone,omitempty"`
	Offset      *int              `json:"offset,omitempty"`
	Key         *string           `json:"key,omitempty"`
	KeyBase64   *string           `json:"key_base64,omitempty"`
	Op          string            `json:"op,omitempty"`
	Value       *string           `json:"value,omitempty"`
	ValueBase64 *string           `json:"value_base64,omitempty"`
	ExpiresAt   string            `json:"expires_at,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// AnnotationsB64 stands for Annotations, keys and values in base64,
	// when one of them is not UTF-8.
	AnnotationsB64 map[string]string `json:"annotations_base64,omitempty"`
	Trimmed        bool              `json:"trimmed,omitempty"`
	Dropped        int64             `json:"dropped,omitempty"`
	Prev           string            `json:"prev,omitempty"`
	Digest         string            `json:"digest,omitempty"`
	// valueBytes, when lineParser read Value, are its bytes, which
	// *Value shares: Import keeps them as the entry's value without
	// another copy. Nothing writes to them.
	valueBytes []byte
}

var opNames = [...]string{OpPut: "put", OpDelete: "delete", OpExpire: "expire"}

// lineOut is what appendLine writes: an exportLine without the
// allocations.
type lineOut struct {
	rev        int64
	t          time.Time
	hasTime    bool // t is known
	entry      bool
	key        string
	op         Op
	value      []byte
	expires    int64
	hasTTL     bool
	notes      []string // sorted pairs
	trimmed    bool
	dropped    int64
	prev       *chain.Digest
	digest     chain.Digest
	hasDigest  bool
	zoneName   string
	zoneOffset int
}

// appendLine appends l as one line of JSON, as encoding/json would write
// the exportLine (the test checks both ways).
func appendLine(b []byte, l *lineOut) []byte {
	b = append(b, `{"rev":`...)
	b = strconv.AppendInt(b, l.rev, 10)
	if l.hasTime {
		b = append(b, `,"time":"`...)
		b = appendExportTime(b, l.t)
		b = append(b, '"')
		// A zone named UTC at offset 0 is UTC: a reopened store reads it
		// as time.UTC, and so does an import.
		if name, off := l.t.Zone(); l.t.Location() != time.UTC && (name != "UTC" || off != 0) {
			b = append(b, `,"zone":`...)
			b = appendJSONString(b, l.t.Location().String())
			if !inOwnOffset(l.t) {
				b = append(b, `,"offset":`...)
				b = strconv.AppendInt(b, int64(off), 10)
			}
		}
	}
	if l.entry {
		if utf8.ValidString(l.key) {
			b = append(b, `,"key":`...)
			b = appendJSONString(b, l.key)
		} else {
			b = append(b, `,"key_base64":"`...)
			b = base64.StdEncoding.AppendEncode(b, []byte(l.key))
			b = append(b, '"')
		}
		b = append(b, `,"op":"`...)
		b = append(b, opNames[l.op]...)
		b = append(b, '"')
		if l.op == OpPut {
			if utf8.Valid(l.value) {
				b = append(b, `,"value":`...)
				b = appendJSONString(b, string(l.value))
			} else {
				b = append(b, `,"value_base64":"`...)
				b = base64.StdEncoding.AppendEncode(b, l.value)
				b = append(b, '"')
			}
		}
		if l.hasTTL {
			b = append(b, `,"expires_at":"`...)
			b = time.Unix(0, l.expires).UTC().AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		}
		if len(l.notes) > 0 {
			text := true
			for _, n := range l.notes {
				text = text && utf8.ValidString(n)
			}
			if text {
				b = append(b, `,"annotations":{`...)
			} else {
				b = append(b, `,"annotations_base64":{`...)
			}
			for i, n := range l.notes {
				switch {
				case i%2 == 1:
					b = append(b, ':')
				case i > 0:
					b = append(b, ',')
				}
				if text {
					b = appendJSONString(b, n)
				} else {
					b = append(b, '"')
					b = base64.StdEncoding.AppendEncode(b, []byte(n))
					b = append(b, '"')
				}
			}
			b = append(b, '}')
		}
		if l.trimmed {
			b = append(b, `,"trimmed":true`...)
		}
		if l.dropped != 0 {
			b = append(b, `,"dropped":`...)
			b = strconv.AppendInt(b, l.dropped, 10)
		}
	}
	if l.prev != nil {
		b = append(b, `,"prev":"`...)
		b = hex.AppendEncode(b, l.prev[:])
		b = append(b, '"')
	}
	if l.hasDigest {
		b = append(b, `,"digest":"`...)
		b = hex.AppendEncode(b, l.digest[:])
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

// inOwnOffset reports whether the export writes t in its own offset: RFC
// 3339 writes offsets in whole minutes and years of four digits.
func inOwnOffset(t time.Time) bool {
	_, off := t.Zone()
	return off%60 == 0 && t.Year() >= 1 && t.Year() <= 9999
}

// appendExportTime appends t as the export writes a time: RFC 3339 with
// its nanoseconds, in t's own offset when that is whole minutes, else in
// UTC (the line's "offset" then gives t's, in seconds); and when the year
// (in UTC) is not 1 to 9999, which RFC 3339 cannot write, "@" followed by
// the Unix seconds, a dot and the nanoseconds in 9 digits
// ("@253402300800.000000009"). Either way it is the instant to the
// nanosecond.
func appendExportTime(b []byte, t time.Time) []byte {
	if u := t.UTC(); u.Year() < 1 || u.Year() > 9999 {
		b = append(b, '@')
		b = strconv.AppendInt(b, t.Unix(), 10)
		b = append(b, '.')
		ns := strconv.AppendInt(nil, int64(t.Nanosecond()), 10)
		b = append(b, "000000000"[len(ns):]...)
		return append(b, ns...)
	}
	if !inOwnOffset(t) {
		t = t.UTC()
	}
	return t.AppendFormat(b, time.RFC3339Nano)
}

// exportTime is appendExportTime's text.
func exportTime(t time.Time) string { return string(appendExportTime(nil, t)) }

// parseExportTime reads a time appendExportTime wrote.
func parseExportTime(s string) (time.Time, error) {
	if rest, ok := strings.CutPrefix(s, "@"); ok {
		sec, frac, ok := strings.Cut(rest, ".")
		if !ok || len(frac) != 9 {
			return time.Time{}, fmt.Errorf("time %q: not @SECONDS.NANOSECONDS with 9 digits of nanoseconds", s)
		}
		n, err1 := strconv.ParseInt(sec, 10, 64)
		ns, err2 := strconv.ParseUint(frac, 10, 32)
		if err1 != nil || err2 != nil {
			return time.Time{}, fmt.Errorf("time %q: not @SECONDS.NANOSECONDS", s)
		}
		return time.Unix(n, int64(ns)).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// appendJSONString appends s quoted as encoding/json quotes it (HTML
// characters escaped too; a byte that is not UTF-8 becomes U+FFFD, as
// there: the callers write only UTF-8 where it matters).
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
