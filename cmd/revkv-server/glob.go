package main

// match reports whether s matches the glob pattern as Redis matches KEYS
// and SCAN patterns: * any run, ? one byte, [abc], [^abc], [a-z] classes,
// and \ to quote the next byte.
func match(pattern []byte, s string) bool {
	p, i := 0, 0
	// The last * seen and where s was when it was seen, to backtrack to.
	star, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				star, starI = p, i
				p++
				continue
			case '?':
				p++
				i++
				continue
			case '[':
				if end, ok := matchClass(pattern, p, s[i]); ok {
					p, i = end, i+1
					continue
				}
			case '\\':
				if p+1 < len(pattern) && pattern[p+1] == s[i] {
					p, i = p+2, i+1
					continue
				}
				if p+1 == len(pattern) && s[i] == '\\' {
					p, i = p+1, i+1
					continue
				}
			default:
				if pattern[p] == s[i] {
					p, i = p+1, i+1
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		starI++
		p, i = star+1, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchClass matches c against the class starting at pattern[p] ('['), and
// returns the index after the class.
func matchClass(pattern []byte, p int, c byte) (int, bool) {
	p++
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	found := false
	for ; p < len(pattern) && pattern[p] != ']'; p++ {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			p++
			found = found || pattern[p] == c
		case p+2 < len(pattern) && pattern[p+1] == '-' && pattern[p+2] != ']':
			lo, hi := pattern[p], pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			found = found || lo <= c && c <= hi
			p += 2
		default:
			found = found || pattern[p] == c
		}
	}
	if p < len(pattern) {
		p++ // the ]
	}
	return p, found != not
}

// literalPrefix returns the part of pattern before its first special byte:
// only keys with it can match, so KEYS scans just those.
func literalPrefix(pattern []byte) string {
	for i, c := range pattern {
		switch c {
		case '*', '?', '[', '\\':
			return string(pattern[:i])
		}
	}
	return string(pattern)
}
