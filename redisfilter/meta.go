package redisfilter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/redis/go-redis/v9"
)

// A filter's metadata is one string key of space-separated name=value
// fields, readable with GET:
//
//	format=1 kind=cuckoo hash=xxh3 b=4 f=13 buckets=1179648 segments=16
//	seed=42 kicks=500 capacity=1000000 id=9f86d081884c7d65 state=ready
//
//	format=1 kind=bloom hash=xxh3 k=10 blocks=20480 segments=16 seed=42
//	capacity=1000000 fpr=0.001 id=... state=ready
//
//	format=1 kind=window hash=xxh3 b=4 f=12 buckets=294912 segments=16
//	seed=42 kicks=500 capacity=1000000 window=86400000000000 id=...
//	state=ready
//
// A window's capacity is its keys a window, and window its length in
// nanoseconds; its f is the fingerprint's width, a slot holding the
// stamp's bits too.
// state is creating (New claimed the name and is making the segments: any
// New or Open of the same parameters finishes the job), pushing (Push is
// uploading segments) or ready. id is drawn at random when the name is
// claimed; every cuckoo segment records it, and every write checks it, so a
// client of a filter that was dropped and created again fails instead of
// writing into the new one. Frozen: format=1 names this layout.
type meta struct {
	kind     string // "cuckoo", "bloom" or "window"
	b, f     int    // cuckoo, window: slots per bucket, fingerprint bits
	buckets  uint64 // cuckoo, window: buckets of the whole table (all segments)
	k        int    // bloom: bits per key
	blocks   uint64 // bloom: 512-bit blocks of the whole table
	segments int
	seed     uint64
	kicks    int // cuckoo, window
	capacity uint64
	window   int64   // window: its length in ns
	fpr      float64 // bloom: the target rate
	id       string
	state    string
}

const (
	stateCreating = "creating"
	statePushing  = "pushing"
	stateReady    = "ready"
)

func (m *meta) encode() string {
	var b strings.Builder
	field := func(name string, v any) { fmt.Fprintf(&b, " %s=%v", name, v) }
	b.WriteString("format=1")
	field("kind", m.kind)
	field("hash", "xxh3")
	if m.tabled() {
		field("b", m.b)
		field("f", m.f)
		field("buckets", m.buckets)
		field("segments", m.segments)
		field("seed", m.seed)
		field("kicks", m.kicks)
		field("capacity", m.capacity)
		if m.kind == "window" {
			field("window", m.window)
		}
	} else {
		field("k", m.k)
		field("blocks", m.blocks)
		field("segments", m.segments)
		field("seed", m.seed)
		field("capacity", m.capacity)
		field("fpr", strconv.FormatFloat(m.fpr, 'g', -1, 64))
	}
	field("id", m.id)
	field("state", m.state)
	return b.String()
}

// parseMeta decodes metadata of the given kind; errors wrap ErrCorrupt.
func parseMeta(s, kind string) (meta, error) {
	fields := map[string]string{}
	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return meta{}, fmt.Errorf("%w: metadata field %q", ErrCorrupt, kv)
		}
		fields[k] = v
	}
	if fields["format"] != "1" {
		return meta{}, fmt.Errorf("%w: metadata format %q (this version reads 1)", ErrCorrupt, fields["format"])
	}
	if fields["kind"] != kind {
		return meta{}, fmt.Errorf("%w: metadata of a %q filter where a %s filter belongs", ErrCorrupt, fields["kind"], kind)
	}
	if fields["hash"] != "xxh3" {
		return meta{}, fmt.Errorf("%w: hash %q", ErrCorrupt, fields["hash"])
	}
	var errs []error
	num := func(name string, lo, hi uint64) uint64 {
		v, err := strconv.ParseUint(fields[name], 10, 64)
		if err != nil || v < lo || v > hi {
			errs = append(errs, fmt.Errorf("%s=%q", name, fields[name]))
		}
		return v
	}
	m := meta{kind: kind, id: fields["id"], state: fields["state"]}
	m.segments = int(num("segments", 1, 1<<16))
	m.seed = num("seed", 0, 1<<64-1)
	m.capacity = num("capacity", 1, 1<<62)
	if m.tabled() {
		m.b = int(num("b", 1, cuckoo.MaxBucketSize))
		m.f = int(num("f", 4, 32))
		m.buckets = num("buckets", 2, 1<<32)
		m.kicks = int(num("kicks", 1, 1<<20))
		if kind == "window" {
			m.window = int64(num("window", uint64(MinWindow), uint64(cuckoo.MaxWindow)))
		}
	} else {
		m.k = int(num("k", 1, 64))
		m.blocks = num("blocks", 1, 1<<37)
		p, err := strconv.ParseFloat(fields["fpr"], 64)
		if err != nil || !(p > 0 && p < 1) {
			errs = append(errs, fmt.Errorf("fpr=%q", fields["fpr"]))
		}
		m.fpr = p
	}
	if len(m.id) == 0 || len(m.id) > 64 {
		errs = append(errs, fmt.Errorf("id=%q", m.id))
	}
	switch m.state {
	case stateCreating, statePushing, stateReady:
	default:
		errs = append(errs, fmt.Errorf("state=%q", m.state))
	}
	if len(errs) == 0 {
		errs = append(errs, m.checkShape())
	}
	if err := errors.Join(errs...); err != nil {
		return meta{}, fmt.Errorf("%w: metadata %q: %v", ErrCorrupt, s, err)
	}
	return m, nil
}

// checkShape checks the table's geometry against the segment count.
func (m *meta) checkShape() error {
	switch {
	case m.tabled() && (m.b < 1 || m.b > cuckoo.MaxBucketSize):
		return fmt.Errorf("bucket size %d", m.b)
	case m.kind == "window" && (m.b != 2 && m.b != 4 && m.b != 8 || m.f > cuckoo.MaxWindowFingerprintBits):
		return fmt.Errorf("a window of %d-slot buckets of %d-bit fingerprints", m.b, m.f)
	case m.tabled() && m.buckets%2 != 0:
		return fmt.Errorf("odd bucket count %d", m.buckets)
	case m.tabled() && m.segments > 1 && m.buckets%(uint64(m.segments)*64) != 0:
		return fmt.Errorf("%d buckets do not split into %d segments of whole 64-bucket groups", m.buckets, m.segments)
	case m.tabled() && m.capacity > m.buckets*uint64(m.b):
		return fmt.Errorf("capacity %d above %d slots", m.capacity, m.buckets*uint64(m.b))
	case m.kind == "bloom" && m.blocks%uint64(m.segments) != 0:
		return fmt.Errorf("%d blocks do not split into %d segments", m.blocks, m.segments)
	}
	return nil
}

// diff lists the parameters in which m and want differ, for ErrMismatch:
// not the id and the state, the seed only if seedSet, and the segment count
// (and so the table's size) only if segmentsSet: a filter made with the
// default count matches a request that leaves the count to the default,
// whatever count the default gives today.
func (m *meta) diff(want *meta, seedSet, segmentsSet bool) string {
	a, b := m.params(seedSet, segmentsSet), want.params(seedSet, segmentsSet)
	var d []string
	for k, v := range b {
		if a[k] != v {
			d = append(d, fmt.Sprintf("%s %s (asked %s)", k, a[k], v))
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

func (m *meta) params(seed, segments bool) map[string]string {
	p := map[string]string{
		"capacity": strconv.FormatUint(m.capacity, 10),
	}
	if segments {
		p["segments"] = strconv.Itoa(m.segments)
	}
	if m.kind == "window" {
		p["window"] = time.Duration(m.window).String()
	}
	if m.tabled() {
		p["bucket size"] = strconv.Itoa(m.b)
		p["fingerprint bits"] = strconv.Itoa(m.f)
		p["max kicks"] = strconv.Itoa(m.kicks)
		// Not the bucket count: the library's plan for the same parameters
		// may add a few buckets from one version to the next (cuckoo.New
		// raises the least count so that the alternate buckets spread),
		// and the stored count is what locates the keys already in.
	} else {
		p["k"] = strconv.Itoa(m.k)
		p["rate"] = strconv.FormatFloat(m.fpr, 'g', -1, 64)
		if segments {
			p["blocks"] = strconv.FormatUint(m.blocks, 10)
		}
	}
	if seed {
		p["seed"] = strconv.FormatUint(m.seed, 10)
	}
	return p
}

// tabled reports whether the filter is a cuckoo table (a cuckoo filter or
// a window), not a Bloom filter.
func (m *meta) tabled() bool { return m.kind != "bloom" }

// newID returns a random instance id.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// claimMeta sets the metadata key to value unless it exists, and returns
// the existing value ("" when it set it, or when the existing value is
// value: go-redis sends the SET again when no reply came, and that copy
// finds what the first set; value holds a new instance id, so no other
// client's claim is equal to it).
func claimMeta(ctx context.Context, rdb redis.UniversalClient, key, value string) (string, error) {
	old, err := rdb.SetArgs(ctx, key, value, redis.SetArgs{Mode: "NX", Get: true}).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil && strings.Contains(err.Error(), "syntax error") {
		// Servers before 7.0 refuse NX with GET: two steps.
		ok, err := rdb.SetNX(ctx, key, value, 0).Result()
		if err != nil || ok {
			return "", err
		}
		old, err = rdb.Get(ctx, key).Result()
	}
	if err == nil && old == value {
		return "", nil
	}
	return old, err
}

// readMeta returns the metadata of a filter, or ErrNotFound.
func readMeta(ctx context.Context, rdb redis.UniversalClient, prefix, kind, name string) (meta, error) {
	s, err := rdb.Get(ctx, metaKey(prefix, name)).Result()
	if errors.Is(err, redis.Nil) {
		return meta{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if err != nil {
		// A server without GET (cuckoo serve) is told apart as one
		// without Functions is.
		return meta{}, noFunctions(ctx, rdb, err)
	}
	return parseMeta(s, kind)
}
