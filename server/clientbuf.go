package server

// A client's buffers: its query buffer, what it sent that has not run yet
// (a resp.Reader's buffer), and, on an event loop, the replies its socket
// has not taken yet. As in Redis:
//
//   - proto-max-bulk-len (512 MiB) bounds one argument, and
//     client-query-buffer-limit (1 GiB) one command: a client past either
//     is disconnected (the first with "ERR Protocol error: invalid bulk
//     length", the second with no reply), checked from the lengths the
//     client announces, before their data arrives. CONFIG SET changes
//     both for every client, between its commands.
//   - maxmemory counts the buffers with the filters: while the clients'
//     buffers and the filters pass it, the commands that may add memory
//     get the OOM error (INFO memory shows them as mem_clients_normal).
//
// A query buffer grows with the data that arrives, not with the lengths
// announced, and goes back to its first size once the command that made
// it grow has been read (resp.Reader). A buffer of systemBufferMin bytes
// or more comes from the system rather than the Go heap (on Linux: mmap,
// grown with mremap, which moves no data): it is returned to the system
// the moment it is given back, when its command has been read or its
// client leaves, instead of at the Go runtime's next collection, which an
// idle server may not run for minutes. A buffer from the Go heap is at most
// systemBufferMin, so what the clients that left keep of the heap is
// small.

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/server/resp"
)

const (
	// MaxQueryBufferLimit is the largest client-query-buffer-limit and
	// proto-max-bulk-len the server takes: a log record's length has 31
	// bits.
	MaxQueryBufferLimit = 1 << 30
	// minQueryBufferLimit is the least client-query-buffer-limit and
	// proto-max-bulk-len CONFIG SET takes, as in Redis.
	minQueryBufferLimit = 1 << 20

	// systemBufferMin is the size from which a query buffer comes from the
	// system (where the platform allows, clientbuf_linux.go).
	systemBufferMin = 1 << 20
)

// clientBuffers provides the clients' query buffers (it is their readers'
// resp.Memory), counts them and the event loops' pending replies, and
// holds the limits of authenticated clients.
type clientBuffers struct {
	limits atomic.Pointer[resp.Limits] // never changed in place: CONFIG SET stores a new one

	query  atomic.Int64 // bytes of the query buffers
	output atomic.Int64 // bytes of replies waiting for their sockets
	system atomic.Int64 // bytes of query buffers from the system, not the Go heap

	limitCloses atomic.Int64 // clients closed at client-query-buffer-limit
}

// used returns the bytes the clients' buffers hold, which maxmemory counts.
func (cb *clientBuffers) used() int64 { return cb.query.Load() + cb.output.Load() }

// Resize implements resp.Memory.
func (cb *clientBuffers) Resize(buf []byte, keep, size int) ([]byte, error) {
	var nb []byte
	switch {
	case size >= systemBufferMin && systemBuffers && fromSystem(buf):
		b, err := sysResize(buf, size) // keeps the data where it is
		if err != nil {
			return nil, err
		}
		cb.count(buf, b)
		return b, nil
	case size >= systemBufferMin && systemBuffers:
		b, err := sysAlloc(size)
		if err != nil {
			return nil, err
		}
		nb = b
	case size > 0:
		nb = make([]byte, size)
	}
	copy(nb, buf[:keep])
	// The count falls before the old buffer is unmapped: memory seen going
	// back to the system is no longer counted.
	cb.count(buf, nb)
	if fromSystem(buf) {
		if err := sysFree(buf); err != nil {
			// Only a mapping sysAlloc or sysResize made comes here.
			panic(fmt.Sprintf("server: releasing a query buffer of %d bytes: %v", cap(buf), err))
		}
	}
	return nb, nil
}

// count accounts for a query buffer replaced by another.
func (cb *clientBuffers) count(old, new []byte) {
	cb.query.Add(int64(cap(new) - cap(old)))
	if systemBuffers {
		cb.system.Add(int64(systemCap(new) - systemCap(old)))
	}
}

// fromSystem reports whether the query buffer b comes from the system.
func fromSystem(b []byte) bool { return systemBuffers && cap(b) >= systemBufferMin }

// systemCap returns the bytes of the query buffer b that come from the
// system.
func systemCap(b []byte) int {
	if fromSystem(b) {
		return cap(b)
	}
	return 0
}

// normalizedLimits returns lim with its zero fields set to the defaults, or
// an error for a limit past MaxQueryBufferLimit.
func normalizedLimits(lim resp.Limits) (resp.Limits, error) {
	for _, l := range []struct {
		name string
		v    *int
		def  int
	}{
		{"proto-max-bulk-len", &lim.MaxBulk, resp.DefaultLimits.MaxBulk},
		{"client-query-buffer-limit", &lim.MaxCommand, resp.DefaultLimits.MaxCommand},
		{"the arguments per command", &lim.MaxArray, resp.DefaultLimits.MaxArray},
		{"the inline line", &lim.MaxInline, resp.DefaultLimits.MaxInline},
	} {
		if *l.v <= 0 {
			*l.v = l.def
		}
		if *l.v > MaxQueryBufferLimit {
			return lim, fmt.Errorf("server: %s %d: the most is %d", l.name, *l.v, MaxQueryBufferLimit)
		}
	}
	return lim, nil
}

// queryLimitNames are the request limits CONFIG GET shows and CONFIG SET
// changes, under Redis's names.
var queryLimitNames = []string{"proto-max-bulk-len", "client-query-buffer-limit"}

// queryLimit returns the field of lim that the limit named name sets, or
// nil when name is not one of queryLimitNames.
func queryLimit(lim *resp.Limits, name string) *int {
	switch strings.ToLower(name) {
	case "proto-max-bulk-len":
		return &lim.MaxBulk
	case "client-query-buffer-limit":
		return &lim.MaxCommand
	}
	return nil
}

// setQueryLimit sets the limit named name of lim from a CONFIG SET value,
// a memory value as Redis takes it, with Redis's error text (and this
// server's upper bound).
func setQueryLimit(lim *resp.Limits, name, value string) error {
	n, err := ParseMemory(value)
	if err != nil {
		return fmt.Errorf("argument must be a memory value")
	}
	if n < minQueryBufferLimit || n > MaxQueryBufferLimit {
		return fmt.Errorf("argument must be between %d and %d inclusive", minQueryBufferLimit, MaxQueryBufferLimit)
	}
	*queryLimit(lim, name) = int(n)
	return nil
}

// ParseMemory parses a memory value as Redis's configuration does: bytes,
// or a number with a unit, case-insensitive: b, k (1000), kb (1024), m,
// mb, g, gb. It refuses a negative value and one past 2^62.
func ParseMemory(s string) (int64, error) {
	v := strings.ToLower(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("server: %q is not a memory value, such as 100mb or 2gb", s)
	}
	return n * mult, nil
}
