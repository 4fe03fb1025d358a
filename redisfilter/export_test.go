package redisfilter

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/format"
	"github.com/redis/go-redis/v9"
)

// Segment is one segment's state in the terms of the library's encoding: the
// table's bytes, the duplicate counters keyed as the encoding keys them
// (the pair's lower bucket, counted over the whole table, << 32 | fp),
// and the items, copies included.
type Segment struct {
	Table    []byte
	Counters map[uint64]uint64
	Items    uint64
}

// SegmentState returns segment s of f as the Lua functions keep it.
func SegmentState(ctx context.Context, f *Filter, s int) (Segment, error) {
	cmd := f.rdb.FCallRO(ctx, fnDump, []string{f.tables[s], f.counters[s]}, f.m.id)
	v, err := cmd.Slice()
	if err != nil {
		return Segment{}, err
	}
	table, _ := v[0].(string)
	fields, _ := v[1].([]any)
	sh := Segment{Table: []byte(table), Counters: map[uint64]uint64{}}
	for k := 0; k+1 < len(fields); k += 2 {
		name, _ := fields[k].(string)
		val, _ := fields[k+1].(string)
		n, err := strconv.ParseUint(val, 10, 64)
		if name == "id" {
			continue
		}
		if err != nil {
			return Segment{}, fmt.Errorf("field %q = %q", name, val)
		}
		if name == "n" {
			sh.Items = n
			continue
		}
		lo, fp, ok := parseCounterField(name)
		if !ok {
			return Segment{}, fmt.Errorf("field %q", name)
		}
		sh.Counters[(uint64(s)*f.g.perSegment+lo)<<32|fp] = n
	}
	return sh, nil
}

// PutSegment replaces segment s of f with sh (through the Lua functions).
func PutSegment(ctx context.Context, f *Filter, s int, sh Segment) error {
	args := []any{f.m.id, sh.Table, sh.Items}
	for k, c := range sh.Counters {
		i, fp := k>>32-uint64(s)*f.g.perSegment, k&0xffffffff
		args = append(args, counterField(i, f.g.alt(i, fp), fp), c)
	}
	cmd := f.fcall(ctx, fnPut, s, args)
	f.rdb.Process(ctx, cmd)
	return cmd.Err()
}

// EngineSegment returns segment s of src, a library filter of f's geometry,
// as SegmentState returns a segment: read from src's encoding (WriteTo) as it
// streams by, keeping only the segment's bytes and the counters. Items are
// the segment's occupied slots plus its counted copies.
func EngineSegment(f *Filter, src *cuckoo.Filter, s int) (Segment, error) {
	g := &f.g
	w := segmentWriter{lo: format.TableHeaderSize + uint64(s)*g.segmentBytes, tableEnd: format.TableHeaderSize + 8*g.segmentBytes/8*g.segments}
	w.hi = w.lo + g.segmentBytes
	if _, err := src.WriteTo(&w); err != nil {
		return Segment{}, err
	}
	if uint64(len(w.table)) != g.segmentBytes || len(w.tail) < 4 || (len(w.tail)-4)%16 != 0 {
		return Segment{}, fmt.Errorf("encoding of %d table bytes and %d after, not a filter of segments of %d bytes", len(w.table), len(w.tail), g.segmentBytes)
	}
	sh := Segment{Table: w.table, Counters: map[uint64]uint64{}, Items: g.occupied(w.table)}
	le := binary.LittleEndian
	for d := w.tail[:len(w.tail)-4]; len(d) > 0; d = d[16:] {
		k, c := le.Uint64(d), le.Uint64(d[8:])
		if (k>>32)/g.perSegment == uint64(s) {
			sh.Counters[k] = c
			sh.Items += c
		}
	}
	return sh, nil
}

// segmentWriter keeps the bytes of an encoding in [lo, hi) and those from
// tableEnd on.
type segmentWriter struct {
	off, lo, hi, tableEnd uint64
	table, tail           []byte
}

func (w *segmentWriter) Write(p []byte) (int, error) {
	start, end := w.off, w.off+uint64(len(p))
	if a, b := max(start, w.lo), min(end, w.hi); a < b {
		w.table = append(w.table, p[a-start:b-start]...)
	}
	if end > w.tableEnd {
		w.tail = append(w.tail, p[max(start, w.tableEnd)-start:]...)
	}
	w.off = end
	return len(p), nil
}

// Locate returns key's segment, its two buckets (counted from the segment's
// first) and its fingerprint, as f's client computes them.
func Locate(f *Filter, key []byte) (segment int, i1, i2, fp uint64) { return f.g.locateKey(key) }

// Alt returns the other bucket of fp in bucket i of a segment of f.
func Alt(f *Filter, i, fp uint64) uint64 { return f.g.alt(i, fp) }

// Slot returns slot j of bucket i of a segment's table bytes.
func Slot(f *Filter, table []byte, i, j uint64) uint64 {
	lo, n, sh := f.g.span(i)
	return f.g.slot(table[lo:lo+n], sh, j)
}

// WindowSegment is one window segment's state as the Lua functions keep it.
type WindowSegment struct {
	Table  []byte // the table, without the trailer
	Epoch  int64  // the trailer: the epoch of the latest write
	Cursor uint64
	Counts [16]uint64 // the non-empty slots of each stamp, as counted
	End    [2]int64   // eh, el
}

// WindowSegmentState returns segment s of w.
func WindowSegmentState(ctx context.Context, w *Window, s int) (WindowSegment, error) {
	v, err := w.rdb.FCallRO(ctx, fnDump, []string{w.tables[s], w.counters[s]}, w.m.id).Slice()
	if err != nil {
		return WindowSegment{}, err
	}
	str, _ := v[0].(string)
	fields, _ := v[1].([]any)
	if uint64(len(str)) != w.g.strLen {
		return WindowSegment{}, fmt.Errorf("a string of %d bytes, want %d", len(str), w.g.strLen)
	}
	sh := WindowSegment{Table: []byte(str[:w.g.segmentBytes]), Epoch: int64(binary.BigEndian.Uint64([]byte(str[w.g.segmentBytes:])))}
	for k := 0; k+1 < len(fields); k += 2 {
		name, _ := fields[k].(string)
		val, _ := fields[k+1].(string)
		if name == "id" {
			continue
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return WindowSegment{}, fmt.Errorf("field %q = %q", name, val)
		}
		switch {
		case name == "c":
			sh.Cursor = uint64(n)
		case name == "eh":
			sh.End[0] = n
		case name == "el":
			sh.End[1] = n
		case len(name) > 1 && name[0] == 's':
			st, err := strconv.Atoi(name[1:])
			if err != nil || st > 15 || n < 0 {
				return WindowSegment{}, fmt.Errorf("field %q = %q", name, val)
			}
			sh.Counts[st] = uint64(n)
		default:
			return WindowSegment{}, fmt.Errorf("field %q", name)
		}
	}
	return sh, nil
}

// WindowSlot returns slot j of bucket i of a window segment's table bytes.
func WindowSlot(w *Window, table []byte, i, j uint64) uint64 {
	lo, n, sh := w.g.span(i)
	return w.g.slot(table[lo:lo+n], sh, j)
}

// WindowLocate returns key's segment, its two buckets (counted from the
// segment's first) and its fingerprint.
func WindowLocate(w *Window, key []byte) (segment int, i1, i2, fp uint64) { return w.g.locateKey(key) }

// TestClockKey is the key the test clock library reads its time from:
// "seconds nanoseconds".
const TestClockKey = "ckf-test-clock"

// LoadTestClockLibrary loads into rdb (a server of the test's own) the
// Functions library with its clock reading TestClockKey instead of the
// server's TIME, at a revision no client replaces.
func LoadTestClockLibrary(ctx context.Context, rdb redis.UniversalClient) error {
	return loadClockLibrary(ctx, rdb, "local s, ns = string.match(redis.call('GET', '"+TestClockKey+"'), '(%d+) (%d+)')\n\treturn tonumber(s), tonumber(ns)")
}

// LoadSkewedClockLibrary loads into rdb (a server of the test's own) the
// Functions library with its clock reading the server's TIME plus skew:
// how a server whose clock is skew ahead answers.
func LoadSkewedClockLibrary(ctx context.Context, rdb redis.UniversalClient, skew time.Duration) error {
	s, ns := int64(skew/time.Second), int64(skew%time.Second)
	return loadClockLibrary(ctx, rdb, fmt.Sprintf(`local t = redis.call('TIME')
	local s, ns = tonumber(t[1]) + %d, tonumber(t[2]) * 1000 + %d
	if ns >= 1e9 then
		ns, s = ns - 1e9, s + 1
	elseif ns < 0 then
		ns, s = ns + 1e9, s - 1
	end
	return s, ns`, s, ns))
}

// loadClockLibrary loads the library with its clock's body replaced.
func loadClockLibrary(ctx context.Context, rdb redis.UniversalClient, body string) error {
	const real = "local t = redis.call('TIME')\n\treturn tonumber(t[1]), tonumber(t[2]) * 1000"
	if strings.Count(luaLibrary, real) != 1 {
		return fmt.Errorf("the library's clock is not %q", real)
	}
	code := strings.Replace(luaLibrary, real, body, 1)
	code = strings.Replace(code, fmt.Sprintf("-- revision %d\n", libraryRevision), "-- revision 1000000\n", 1)
	return rdb.FunctionLoadReplace(ctx, code).Err()
}

// SetTestClock sets the test clock's time.
func SetTestClock(ctx context.Context, rdb redis.UniversalClient, t time.Time) error {
	return rdb.Set(ctx, TestClockKey, fmt.Sprintf("%d %d", t.Unix(), t.Nanosecond()), 0).Err()
}

// fileTable returns the table's words of a library filter's file.
func fileTable(enc []byte) []byte {
	h, err := format.ReadTableHeader(codec.NewBytesDecoder(enc))
	if err != nil {
		panic(err)
	}
	return enc[format.TableHeaderSize : format.TableHeaderSize+8*h.Words]
}

// WindowPlanMemory and FilterPlanMemory return the Redis memory the
// segment counts are chosen by (segmentsMemory) for a window's plan and a
// cuckoo filter's.
func WindowPlanMemory(p cuckoo.Plan) uint64 { return windowPlanMemory(&p) }
func FilterPlanMemory(p cuckoo.Plan) uint64 { return filterPlanMemory(&p) }

// CallAdd calls ckf2_add on segment s of f with the (first bucket,
// fingerprint) pairs given, as AddBatch's calls do (unique: as
// AddUniqueBatch's), and returns its codes: for tests that choose the
// buckets and fingerprints a key's hash would.
func CallAdd(ctx context.Context, f *Filter, s int, unique bool, pairs ...uint64) ([]int64, error) {
	args := []any{boolArg(unique)}
	for _, p := range pairs {
		args = append(args, p)
	}
	cmd := f.writeCmd(ctx, fnAdd, s, args)
	f.rdb.Process(ctx, cmd)
	return cmd.Int64Slice()
}

// CallDel calls ckf2_del on segment s of f with the (first bucket,
// fingerprint) pairs given, and returns its codes.
func CallDel(ctx context.Context, f *Filter, s int, pairs ...uint64) ([]int64, error) {
	args := make([]any, 0, len(pairs))
	for _, p := range pairs {
		args = append(args, p)
	}
	cmd := f.writeCmd(ctx, fnDel, s, args)
	f.rdb.Process(ctx, cmd)
	return cmd.Int64Slice()
}

// LoadDtoaNumbersLibrary loads into rdb (a server of the test's own) the
// Functions library with every number it passes to a command turned into
// text as Redis 7.2.0 to 7.2.4 turn it (fpconv_dtoa: an integer with
// eight or more trailing zeros, such as 100000000, becomes "1e+08", which
// commands that take an integer refuse; Redis 7.0, and the releases that
// fixed it, write integers in full), at a revision no client replaces.
func LoadDtoaNumbersLibrary(ctx context.Context, rdb redis.UniversalClient) error {
	return loadCallLibrary(ctx, rdb, `
-- numbers become text as fpconv_dtoa writes them.
local function dtoa(x)
	if x ~= math.floor(x) or x ~= x or math.abs(x) >= 2 ^ 63 then
		return string.format('%.17g', x)
	end
	local s = string.format('%.0f', x)
	local sign, digits = string.match(s, '^(-?)(%d+)$')
	local trimmed = string.gsub(digits, '0+$', '')
	if #digits - #trimmed < 8 then
		return s
	end
	local mantissa = string.sub(trimmed, 1, 1)
	if #trimmed > 1 then
		mantissa = mantissa .. '.' .. string.sub(trimmed, 2)
	end
	return sign .. mantissa .. string.format('e+%02d', #digits - 1)
end

local function test_call(...)
	local n = select('#', ...)
	local a = { ... }
	for k = 1, n do
		if type(a[k]) == 'number' then
			a[k] = dtoa(a[k])
		end
	end
	return redis.call(unpack(a, 1, n))
end
`)
}

// LoadLargeNumbersRefusedLibrary loads into rdb (a server of the test's
// own) the Functions library with every command it calls refused when
// an argument is a Lua number of 10^8 or more in size: numbers that
// large must reach commands as text, which every server reads alike
// (LoadDtoaNumbersLibrary has one that does not), whatever their digits.
// At a revision no client replaces.
func LoadLargeNumbersRefusedLibrary(ctx context.Context, rdb redis.UniversalClient) error {
	return loadCallLibrary(ctx, rdb, `
-- numbers of 10^8 or more are refused.
local function test_call(...)
	local n = select('#', ...)
	local a = { ... }
	for k = 1, n do
		local x = a[k]
		if type(x) == 'number' and (x >= 1e8 or x <= -1e8) then
			error(string.format('%s: argument %d is the number %.0f, not text', tostring(a[1]), k, x))
		end
	end
	return redis.call(unpack(a, 1, n))
end
`)
}

// loadCallLibrary loads the library with every redis.call made through
// test_call, which stand (Lua code defining test_call) defines, at a
// revision no client replaces.
func loadCallLibrary(ctx context.Context, rdb redis.UniversalClient, stand string) error {
	head := fmt.Sprintf("-- revision %d\n", libraryRevision)
	if strings.Count(luaLibrary, head) != 1 {
		return fmt.Errorf("the library does not state its revision as %q", head)
	}
	code := strings.ReplaceAll(luaLibrary, "redis.call", "test_call")
	code = strings.Replace(code, head, "-- revision 1000000\n\n-- A test's stand-in for redis.call:"+stand, 1)
	return rdb.FunctionLoadReplace(ctx, code).Err()
}

// SetRedirectPause makes fn decide the pauses f's Durable writes take
// before they send again a command refused with a redirect (MOVED,
// TRYAGAIN, ...): it is called as each pause begins, with its length,
// and returns the length to wait instead. Set it on the Durable twin.
func SetRedirectPause(f *Filter, fn func(time.Duration) time.Duration) { f.pauseHook = fn }

// WriteCall is one call of a write function with its request id: each
// Send sends a copy of the same call, as the package sends a call again
// whose reply did not come.
type WriteCall struct {
	f   *Filter
	cmd *redis.Cmd
}

// NewAddCall returns the call that AddUnique (unique) or Add of key on f
// makes.
func NewAddCall(ctx context.Context, f *Filter, key []byte, unique bool) *WriteCall {
	s, i1, _, fp := f.g.locateKey(key)
	return &WriteCall{f, f.writeCmd(ctx, fnAdd, s, []any{boolArg(unique), i1, fp})}
}

// Send sends a copy of c as f sends its writes (sent again until it
// settles; with WAIT after it if f is Durable), and returns the call's
// code (1 added, 0 full, 2 present: AddUnique only) and its error.
func (c *WriteCall) Send(ctx context.Context) (int64, error) {
	errs, _, short := c.f.retry.settle(ctx, []redis.Cmder{c.cmd}, rememberedWrites, c.f.sender(ctx))
	if errs[0] != nil {
		return 0, errs[0]
	}
	codes, err := c.cmd.Int64Slice()
	if err == nil && len(codes) != 1 {
		err = fmt.Errorf("codes %v", codes)
	}
	if err != nil {
		return 0, err
	}
	return codes[0], short
}
