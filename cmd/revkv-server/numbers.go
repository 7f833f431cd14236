package main

import (
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
