package main

// closest returns the candidate nearest to typed, a misspelled name, when
// it is near enough to be what was meant: one edit (an adjacent swap
// counts one: "dedpu"), or two in names of eight bytes or more; none for
// names shorter than three. "" when none is, or two are equally near.
func closest(typed string, candidates []string) string {
	best, bestDist, tie := "", 3, false
	for _, c := range candidates {
		longer := max(len(typed), len(c))
		d := editDistance(typed, c)
		if longer < 3 || d > 1+longer/8 || d > bestDist {
			continue
		}
		if d == bestDist {
			tie = true
			continue
		}
		best, bestDist, tie = c, d, false
	}
	if tie || best == "" || bestDist == 0 {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of adjacent bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// didYouMean is " (did you mean X?)" for the candidate closest to typed,
// with its prefix (a flag's dashes), or "".
func didYouMean(typed string, candidates []string, prefix func(string) string) string {
	if c := closest(typed, candidates); c != "" {
		return " (did you mean " + prefix(c) + "?)"
	}
	return ""
}
