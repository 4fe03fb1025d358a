package server

// globMatch reports whether s matches the glob pattern as Redis's KEYS and
// SCAN MATCH read it: * any run of bytes, ? one byte, [abc] [^abc] [a-z]
// a set, \x the byte x. It takes time linear in len(pattern)·len(s).
func globMatch(pattern, s []byte) bool {
	// Iterative matching with one backtrack point for the last '*'.
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
				starP, starI = p, i
				continue
			case '?':
				p++
				i++
				continue
			case '[':
				if ok, next := matchClass(pattern, p, s[i]); ok {
					p, i = next, i+1
					continue
				}
			case '\\':
				if p+1 < len(pattern) {
					if pattern[p+1] == s[i] {
						p, i = p+2, i+1
						continue
					}
				} else if s[i] == '\\' {
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
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchClass matches the byte c against the class that starts at
// pattern[p] == '[', and returns whether it matched and the index after
// the class. An unclosed class runs to the end of the pattern, as in Redis.
func matchClass(pattern []byte, p int, c byte) (bool, int) {
	p++
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	match := false
	for p < len(pattern) && pattern[p] != ']' {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			p++
			if pattern[p] == c {
				match = true
			}
		case p+2 < len(pattern) && pattern[p+1] == '-' && pattern[p+2] != ']':
			lo, hi := pattern[p], pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if lo <= c && c <= hi {
				match = true
			}
			p += 2
		default:
			if pattern[p] == c {
				match = true
			}
		}
		p++
	}
	if p < len(pattern) {
		p++ // the ']'
	}
	return match != not, p
}
