package main

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
)

// Scores and the bounds of sorted-set ranges, as Redis parses and prints
// them.

// encodeScore is an 8-byte key whose byte order is the scores' order: the
// sign bit flipped for positives, every bit for negatives.
func encodeScore(s float64) string {
	if s == 0 {
		s = 0 // -0 sorts with 0, as Redis compares them equal
	}
	b := math.Float64bits(s)
	if b>>63 == 0 {
		b ^= 1 << 63
	} else {
		b = ^b
	}
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], b)
	return string(k[:])
}

func decodeIndexScore(k string) float64 {
	b := binary.BigEndian.Uint64([]byte(k[:8]))
	if b>>63 == 1 {
		b ^= 1 << 63
	} else {
		b = ^b
	}
	return math.Float64frombits(b)
}

// scoreValue is a member record's value: the score's bits.
func scoreValue(s float64) []byte {
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(s))
}

func decodeScore(v []byte) float64 {
	if len(v) != 8 {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(v))
}

// formatScore prints a score as Redis 7.0 does (%.17g; inf and -inf).
func formatScore(s float64) []byte {
	switch {
	case math.IsInf(s, 1):
		return []byte("inf")
	case math.IsInf(s, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, s, 'g', 17, 64)
}

// parseScore parses a score as Redis does (string2d over strtod): no
// leading space, no trailing bytes, no NaN, no overflow; hexadecimal as
// strtod takes it.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isSpace(b[0]) {
		return 0, false
	}
	f, ok := strtod(string(b))
	return f, ok && !math.IsInf(f, 0) || ok && isInfWord(string(b))
}

// strtod parses what C's strtod parses whole: decimal or hexadecimal
// (with or without a binary exponent), inf, infinity, nan; ok false for
// anything else or an overflow (which strtod reports as ERANGE).
func strtod(s string) (float64, bool) {
	if strings.ContainsRune(s, '_') {
		return 0, false
	}
	t := strings.ToLower(strings.TrimLeft(s, "+-"))
	if strings.HasPrefix(t, "0x") && !strings.ContainsRune(t, 'p') {
		s += "p0"
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func isInfWord(s string) bool {
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity":
		return true
	}
	return false
}

// scoreBound is a ZRANGEBYSCORE bound: a score, "(" for exclusive.
type scoreBound struct {
	v    float64
	excl bool
}

// parseScoreBound parses a range's bound as Redis does (strtod alone):
// leading spaces pass, and an empty one is 0.
func parseScoreBound(b []byte) (scoreBound, bool) {
	var sb scoreBound
	if len(b) > 0 && b[0] == '(' {
		sb.excl, b = true, b[1:]
	}
	t := strings.TrimLeft(string(b), " \t\n\v\f\r")
	if t == "" {
		return sb, true
	}
	v, ok := strtod(t)
	if !ok && (len(t) > 0 && !isSpace(t[0])) { // an overflow is ±inf to strtod
		if _, err := strconv.ParseFloat(t, 64); err != nil && errors.Is(err, strconv.ErrRange) {
			v, _ = strconv.ParseFloat(t, 64)
			ok = true
		}
	}
	sb.v = v
	return sb, ok
}

const errScoreRange = "ERR min or max is not a float"
const errLexRange = "ERR min or max not valid string range item"

// lexBound is a ZRANGEBYLEX bound: "[x" inclusive, "(x" exclusive, "-" and
// "+" the ends (inf -1 and 1).
type lexBound struct {
	s    string
	excl bool
	inf  int
}

func parseLexBound(b []byte) (lexBound, bool) {
	switch {
	case string(b) == "-":
		return lexBound{inf: -1}, true
	case string(b) == "+":
		return lexBound{inf: 1}, true
	case len(b) > 0 && b[0] == '[':
		return lexBound{s: string(b[1:])}, true
	case len(b) > 0 && b[0] == '(':
		return lexBound{s: string(b[1:]), excl: true}, true
	}
	return lexBound{}, false
}

// aboveMin reports whether member is at or past min (as a lower bound).
func (lb lexBound) aboveMin(member string) bool {
	switch lb.inf {
	case -1:
		return true
	case 1:
		return false
	}
	return member > lb.s || !lb.excl && member == lb.s
}

// belowMax reports whether member is at or before max (as an upper bound).
func (lb lexBound) belowMax(member string) bool {
	switch lb.inf {
	case -1:
		return false
	case 1:
		return true
	}
	return member < lb.s || !lb.excl && member == lb.s
}

func (sb scoreBound) aboveMin(s float64) bool { return s > sb.v || !sb.excl && s == sb.v }
func (sb scoreBound) belowMax(s float64) bool { return s < sb.v || !sb.excl && s == sb.v }
