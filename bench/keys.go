package main

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// keyKind names a way of making keys. Keys are a pure function of (kind,
// family, index, seed): the same index always gives the same bytes, so a
// pass that regenerates keys sees exactly the keys an earlier pass added.
type keyKind string

const (
	// rand16 keys are 16 uniformly random bytes.
	rand16 keyKind = "rand16"
	// url keys look like crawled URLs, about 60 bytes on average, sharing
	// long prefixes the way real URLs do.
	url keyKind = "url"
)

// Key families. Keys of different families never coincide: url keys embed
// the family letter and index, and a collision between two rand16 keys has
// probability below 2^-70 at 10^8 keys.
const (
	present = 0 // keys that are added
	absent  = 1 // keys that are never added (false-positive probes)
)

func parseKeyKind(s string) (keyKind, error) {
	switch keyKind(s) {
	case rand16, url:
		return keyKind(s), nil
	}
	return "", fmt.Errorf("bench: unknown key kind %q (want rand16 or url)", s)
}

// parseKeyKinds parses a comma-separated list of key kinds.
func parseKeyKinds(s string) ([]keyKind, error) {
	var out []keyKind
	for _, f := range strings.Split(s, ",") {
		k, err := parseKeyKind(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// mix64 is the splitmix64 finalizer: a bijection on uint64 whose outputs
// for consecutive inputs look independent.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// URL parts. The words are invented for this harness.
var (
	urlSchemes = [...]string{"https://", "https://", "https://", "http://"}
	urlHosts   = [...]string{
		"www.", "cdn.", "shop.", "blog.", "news.", "img.", "api.", "m.",
	}
	urlDomains = [...]string{
		"northwind", "acme-widgets", "bluepeak", "riverstone", "example",
		"greenfield", "lumen", "orbitcart", "paperplane", "quietbay",
		"redkite", "silverline", "tinyfox", "urbanloop", "velvetsky", "zen",
	}
	urlTLDs     = [...]string{".com", ".org", ".net", ".io", ".de", ".co.uk", ".com", ".com"}
	urlSegments = [...]string{
		"products", "blog", "2024", "2025", "category", "news", "item",
		"users", "docs", "search", "archive", "tags", "p", "images",
		"en-us", "static",
	}
	urlEnds = [...]string{"", ".html", "", "?ref=home", "", "?page=2", ".php", "?utm_source=feed"}
)

const base36 = "0123456789abcdefghijklmnopqrstuvwxyz"

// appendKey appends key (kind, family, index) to dst.
func appendKey(dst []byte, kind keyKind, family, index, seed uint64) []byte {
	r := mix64(seed ^ family<<56 ^ index)
	switch kind {
	case rand16:
		dst = binary.LittleEndian.AppendUint64(dst, r)
		return binary.LittleEndian.AppendUint64(dst, mix64(r))
	default:
		// The random choices come from r; uniqueness comes from the
		// family letter and the index at the end.
		dst = append(dst, urlSchemes[r&3]...)
		dst = append(dst, urlHosts[r>>2&7]...)
		dst = append(dst, urlDomains[r>>5&15]...)
		dst = append(dst, urlTLDs[r>>9&7]...)
		for s := uint64(0); s < 1+(r>>12&3)%3; s++ {
			dst = append(dst, '/')
			dst = append(dst, urlSegments[r>>(14+4*s)&15]...)
		}
		dst = append(dst, '/', "pq"[family&1])
		h := mix64(r)
		for j := 0; j < 8; j++ { // a slug of 8 random base-36 digits
			dst = append(dst, base36[h%36])
			h /= 36
		}
		dst = append(dst, '-')
		var digits [14]byte
		k := len(digits)
		for v := index; ; v /= 36 {
			k--
			digits[k] = base36[v%36]
			if v < 36 {
				break
			}
		}
		dst = append(dst, digits[k:]...)
		return append(dst, urlEnds[r>>30&7]...)
	}
}

// keySet is the keys [0, n) of one family and kind. A small set is built
// once and held in memory (materialized); a large one is regenerated chunk
// by chunk into reused buffers whenever it is walked, so 2·10^8 URL keys
// never sit in memory at once.
type keySet struct {
	kind   keyKind
	family uint64
	seed   uint64
	n      uint64
	keys   [][]byte // all n keys when materialized, else nil

	arena arena    // chunk memory when not materialized
	view  [][]byte // chunk view when not materialized
}

// chunkKeys is how many keys a walk hands over at a time: large enough
// that the per-chunk timer reads cost nothing, small enough to keep a
// regenerated chunk's buffer modest.
const chunkKeys = 1 << 20

// maxKeyBytes bounds the length of one key.
const maxKeyBytes = 128

// newKeySet returns the keys [0, n) of (kind, family). It materializes them
// when they take at most about maxBytes.
func newKeySet(kind keyKind, family, seed, n, maxBytes uint64) *keySet {
	s := &keySet{kind: kind, family: family, seed: seed, n: n}
	if n*(avgKeyBytes(kind)+24) <= maxBytes {
		var a arena
		s.keys = s.generate(0, n, &a, make([][]byte, 0, n))
	}
	return s
}

// avgKeyBytes is a generous estimate of the mean key length of kind.
func avgKeyBytes(kind keyKind) uint64 {
	if kind == rand16 {
		return 16
	}
	return 64
}

// arena hands out key memory in 16 MiB blocks, so that a key set costs its
// bytes plus a little, and slices handed out stay valid as it grows.
// reset recycles the blocks.
type arena struct {
	blocks [][]byte
	cur    int // index of the block being filled
}

const arenaBlock = 16 << 20

func (a *arena) reset() {
	a.cur = 0
	if len(a.blocks) > 0 {
		a.blocks[0] = a.blocks[0][:0]
	}
}

// tail returns the block being filled, with room for at least maxKeyBytes.
func (a *arena) tail() *[]byte {
	if len(a.blocks) == 0 {
		a.blocks = append(a.blocks, make([]byte, 0, arenaBlock))
	}
	if b := a.blocks[a.cur]; cap(b)-len(b) < maxKeyBytes {
		a.cur++
		if a.cur == len(a.blocks) {
			a.blocks = append(a.blocks, make([]byte, 0, arenaBlock))
		}
		a.blocks[a.cur] = a.blocks[a.cur][:0]
	}
	return &a.blocks[a.cur]
}

// generate appends keys [lo, hi) to views, their bytes in a.
func (s *keySet) generate(lo, hi uint64, a *arena, views [][]byte) [][]byte {
	for i := lo; i < hi; i++ {
		b := a.tail()
		start := len(*b)
		*b = appendKey(*b, s.kind, s.family, i, s.seed)
		views = append(views, (*b)[start:len(*b):len(*b)])
	}
	return views
}

func (s *keySet) materialized() bool { return s.keys != nil }

// walk hands keys [lo, hi) to fn, chunkKeys at a time. The slices passed
// are valid only during the call.
func (s *keySet) walk(lo, hi uint64, fn func(keys [][]byte)) {
	for a := lo; a < hi; a += chunkKeys {
		b := min(a+chunkKeys, hi)
		if s.materialized() {
			fn(s.keys[a:b])
			continue
		}
		s.arena.reset()
		s.view = s.generate(a, b, &s.arena, s.view[:0])
		fn(s.view)
	}
}

// meanLen returns the mean key length over the first up-to-100k keys.
func (s *keySet) meanLen() float64 {
	var total, count uint64
	s.walk(0, min(s.n, 100_000), func(keys [][]byte) {
		for _, k := range keys {
			total += uint64(len(k))
		}
		count += uint64(len(keys))
	})
	if count == 0 {
		return 0
	}
	return float64(total) / float64(count)
}
