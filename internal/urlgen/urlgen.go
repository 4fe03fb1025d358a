// Package urlgen makes URL-like lines with a chosen share of repeats, the
// input of the dedup benchmarks and tests. Lines average about 54 bytes:
//
//	https://shop.travel417.net/docs/sports-73107/k3x9qa
//
// The output depends only on the parameters: the same seed gives the same
// bytes on every machine and Go version.
package urlgen

import (
	"math/rand/v2"
	"strconv"
)

var words = [...]string{
	"news", "shop", "blog", "docs", "api", "cdn", "static", "media", "video", "img",
	"store", "data", "forum", "wiki", "mail", "maps", "music", "sports", "travel", "food",
	"health", "games", "books", "tech", "cloud", "search", "photos", "jobs", "auto", "home",
	"finance", "weather", "events", "learn", "market", "social", "art", "science", "kids", "style",
	"radio", "tv", "cars", "garden", "pets", "movies", "deals", "help", "status", "dev",
	"support", "careers", "about", "press", "legal", "archive", "feeds", "tags", "users", "items",
	"posts", "topics", "files", "assets",
}

var subdomains = [...]string{"www", "www", "www", "m", "en", "shop", "blog", "api", "cdn", "static"}

var tlds = [...]string{"com", "com", "com", "net", "org", "io", "de", "co.uk", "fr", "info"}

// AppendLine appends distinct line number id of the family seed to b,
// with its "\n". Different ids give different lines.
func AppendLine(b []byte, seed, id uint64) []byte {
	r := rand.NewPCG(seed, id)
	x := r.Uint64()
	pick := func(n int) int { // a few bits of x at a time
		v := int(x % uint64(n))
		x /= uint64(n)
		return v
	}
	b = append(b, "https://"...)
	b = append(b, subdomains[pick(len(subdomains))]...)
	b = append(b, '.')
	b = append(b, words[pick(len(words))]...)
	b = strconv.AppendInt(b, int64(pick(1000)), 10)
	b = append(b, '.')
	b = append(b, tlds[pick(len(tlds))]...)
	b = append(b, '/')
	b = append(b, words[pick(len(words))]...)
	b = append(b, '/')
	b = append(b, words[pick(len(words))]...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(pick(100000)), 10)
	b = append(b, '/')
	// A random base-36 item name makes every distinct line distinct.
	y := r.Uint64()
	n := 4 + int(y%5)
	for range n {
		y /= 36
		b = append(b, "0123456789abcdefghijklmnopqrstuvwxyz"[y%36])
	}
	b = strconv.AppendUint(b, id, 36)
	return append(b, '\n')
}

// Generator yields lines, each a repeat of an earlier line (chosen
// uniformly among the distinct lines so far) with probability repeat, else
// a new distinct line.
type Generator struct {
	seed     uint64
	repeat   float64
	rng      *rand.Rand
	distinct uint64
}

// New returns a generator; repeat must be in [0, 1).
func New(seed uint64, repeat float64) *Generator {
	return &Generator{seed: seed, repeat: repeat, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// Append appends the next line to b, and reports whether it is new.
func (g *Generator) Append(b []byte) ([]byte, bool) {
	id := g.distinct
	isNew := true
	if g.distinct > 0 && g.rng.Float64() < g.repeat {
		id = g.rng.Uint64N(g.distinct)
		isNew = false
	} else {
		g.distinct++
	}
	return AppendLine(b, g.seed, id), isNew
}

// Distinct returns the number of distinct lines generated so far.
func (g *Generator) Distinct() uint64 { return g.distinct }
