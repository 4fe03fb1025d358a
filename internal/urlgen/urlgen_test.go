package urlgen

import (
	"bytes"
	"testing"
)

// TestGolden pins the output: benchmark inputs must be reproducible on
// every machine and Go version.
func TestGolden(t *testing.T) {
	g := New(1, 0.3)
	var b bytes.Buffer
	line := []byte{}
	for range 6 {
		line, _ = g.Append(line[:0])
		b.Write(line)
	}
	want := "https://www.wiki605.com/items/science-88716/7s20m0\n" +
		"https://www.wiki605.com/items/science-88716/7s20m0\n" +
		"https://www.wiki605.com/items/science-88716/7s20m0\n" +
		"https://www.wiki605.com/items/science-88716/7s20m0\n" +
		"https://www.pets900.net/data/legal-42778/69y3d4il1\n"
	if got := b.String(); got[:len(want)] != want {
		t.Fatalf("output changed:\n%s", got)
	}
}

func TestShape(t *testing.T) {
	g := New(7, 0.3)
	seen := map[string]bool{}
	var total, repeats int
	line := []byte{}
	const n = 200_000
	for range n {
		var isNew bool
		line, isNew = g.Append(line[:0])
		total += len(line)
		if seen[string(line)] == isNew {
			t.Fatalf("line %q: new=%v but seen=%v", line, isNew, seen[string(line)])
		}
		if !isNew {
			repeats++
		}
		seen[string(line)] = true
	}
	if avg := float64(total) / n; avg < 50 || avg > 58 {
		t.Errorf("average line of %.1f bytes, want about 54", avg)
	}
	// Repeats are Bernoulli(0.3): σ = sqrt(n·0.21) ≈ 205; allow 5σ.
	if repeats < 0.3*n-1025 || repeats > 0.3*n+1025 {
		t.Errorf("%d repeats of %d, want 30 %% ± 5σ", repeats, n)
	}
	if uint64(len(seen)) != g.Distinct() {
		t.Errorf("%d distinct lines, Distinct says %d", len(seen), g.Distinct())
	}
}
