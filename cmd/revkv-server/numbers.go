package main

import (
	"bytes"
	"math/big"
	"strconv"
	"strings"
)

// Numbers as Redis parses them.

// parseLongDouble parses a float as Redis does (strtold, to a long
// double's precision): decimal, hex ("0x1.8p1"), and inf or infinity in any
// case; not NaN, not a space before or after, nothing past a long double's
// range either way (5,120 bytes at most).
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= 5<<10 || isSpace(b[0]) {
		return nil, false
	}
	s := string(b)
	sign, body := "", s
	if s[0] == '+' || s[0] == '-' {
		sign, body = s[:1], s[1:]
	}
	var f *big.Float
	var err error
	switch lower := strings.ToLower(body); {
	case lower == "inf" || lower == "infinity":
		return new(big.Float).SetInf(sign == "-"), true
	case strings.HasPrefix(lower, "0x"):
		if strings.ContainsRune(lower, '_') { // base 0 takes 0x1_0; strtold does not
			return nil, false
		}
		f, _, err = big.ParseFloat(s, 0, 64, big.ToNearestEven)
	default:
		if strings.ContainsAny(lower, "p_") { // a binary exponent is hex's alone
			return nil, false
		}
		f, _, err = big.ParseFloat(s, 10, 64, big.ToNearestEven)
	}
	if err != nil || f.IsInf() {
		return nil, false
	}
	// strtold's ERANGE: past the largest long double, or so small that it
	// is zero (below the least subnormal, 2^-16445).
	if exp := f.MantExp(nil); exp > maxLongDoubleExp || f.Sign() != 0 && exp < -16444 {
		return nil, false
	}
	return f, true
}

// maxLongDoubleExp is the x87 long double's largest binary exponent, as
// big.Float's MantExp counts it (mantissa in [0.5, 1)).
const maxLongDoubleExp = 16384

func isSpace(ch byte) bool { return ch == ' ' || '\t' <= ch && ch <= '\r' }

// parseInt parses a decimal int64 as Redis does: an optional minus, no
// plus, no spaces, no leading zeros.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	d := b
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || d[0] < '1' || d[0] > '9' {
		return 0, false
	}
	for _, ch := range d {
		if ch < '0' || ch > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

const errNaN = "ERR increment would produce NaN or Infinity"

// addLongDouble adds incr to the number cur (0 when !exists) as Redis's
// INCRBYFLOAT and HINCRBYFLOAT do: in the x87 long double (a 64-bit
// mantissa), printed with 17 digits after the point and its trailing zeros
// cut, so that the same additions give the same strings (10.1 + 0.2 is
// "10.3"). A cur that is no number is notNum's error.
func addLongDouble(cur []byte, exists bool, incr *big.Float, notNum string) ([]byte, string) {
	n := new(big.Float).SetPrec(64)
	if exists {
		var ok bool
		if n, ok = parseLongDouble(cur); !ok {
			return nil, notNum
		}
	}
	if n.IsInf() || incr.IsInf() { // inf, or inf - inf: no number (and big.Float panics on the latter)
		return nil, errNaN
	}
	n.Add(n, incr)
	if n.MantExp(nil) > maxLongDoubleExp {
		return nil, errNaN
	}
	v := []byte(n.Text('f', 17))
	if bytes.IndexByte(v, '.') >= 0 {
		v = bytes.TrimRight(v, "0")
		v = bytes.TrimSuffix(v, []byte("."))
	}
	if string(v) == "-0" { // as Redis: never a negative zero
		v = v[1:]
	}
	return v, ""
}
