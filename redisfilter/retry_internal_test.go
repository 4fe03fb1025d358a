package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/redistest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/redis/go-redis/v9"
)

func testServer(t *testing.T, directives ...string) (*redistest.Server, *redis.Client, context.Context) {
	t.Helper()
	s := redistest.NewServer(t, redistest.Config{Directives: directives})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DialTimeout: redistest.ClientTimeout,
		ReadTimeout: redistest.ClientTimeout, WriteTimeout: redistest.ClientTimeout})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return s, rdb, ctx
}

// codesOf sends cmd (again) and returns its reply codes.
func codesOf(t *testing.T, ctx context.Context, f *Filter, cmd *redis.Cmd) []int64 {
	t.Helper()
	cmd.SetErr(nil)
	if err := f.run(ctx, []redis.Cmder{cmd}); err != nil {
		t.Fatal(err)
	}
	codes, err := cmd.Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	return codes
}

// TestCallRunsOnce sends each write call twice, as a client whose reply
// timed out does: the second run returns the first run's codes (with
// every code a call can give, packed in the record: added, present,
// full, deleted, absent) and changes nothing. Once the retry window has
// passed, a copy runs again.
func TestCallRunsOnce(t *testing.T) {
	t.Parallel()
	_, rdb, ctx := testServer(t)
	f, err := New(ctx, rdb, "once", 64, WithSegments(1), WithSeed(1), WithFingerprintBits(8), WithBucketSize(2),
		WithRetryWindow(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	pairs := func(keys ...string) []any {
		var a []any
		for _, k := range keys {
			_, i1, _, fp := f.g.locateKey([]byte(k))
			a = append(a, i1, fp)
		}
		return a
	}
	snapshot := func() []byte {
		t.Helper()
		lib, err := f.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := lib.MarshalBinary()
		return b
	}
	// Fill the filter (a tiny one: some keys find no room), with the keys
	// of one call, some twice (present on their second add).
	var many []string
	for i := range 400 {
		many = append(many, "k"+strconv.Itoa(i%300))
	}
	for _, c := range []struct {
		name string
		fn   string
		args []any
	}{
		{"add", fnAdd, append([]any{0}, pairs("a", "b", "a")...)},
		{"add-unique", fnAdd, append([]any{1}, pairs(many...)...)},
		{"delete", fnDel, pairs("a", "a", "a", "zz", "b")},
	} {
		cmd := f.writeCmd(ctx, c.fn, 0, c.args)
		first := codesOf(t, ctx, f, cmd)
		before := snapshot()
		second := codesOf(t, ctx, f, cmd)
		if fmt.Sprint(first) != fmt.Sprint(second) {
			t.Fatalf("%s: the second run replied %v, the first %v", c.name, second, first)
		}
		if string(snapshot()) != string(before) {
			t.Fatalf("%s: the second run changed the filter", c.name)
		}
		seen := map[int64]int{}
		for _, code := range first {
			seen[code]++
		}
		t.Logf("%s: codes %v", c.name, seen)
		if c.name == "add-unique" && len(seen) != 3 {
			t.Fatalf("add-unique replied codes %v; the test wants each of full (0), added (1) and present (2)", seen)
		}
	}
	// A copy sent after the record expired runs again.
	g := *f
	g.retry.window = 20 * time.Millisecond
	cmd := g.writeCmd(ctx, fnAdd, 0, append([]any{0}, pairs("late")...))
	codesOf(t, ctx, &g, cmd)
	time.Sleep(50 * time.Millisecond)
	codesOf(t, ctx, &g, cmd)
	if n, err := f.Count(ctx, []byte("late")); err != nil || n != 2 {
		t.Fatalf("a copy sent after the window: Count = %d, %v; want 2 (it ran again)", n, err)
	}
}

// TestLibraryRevisions checks how New loads the functions beside other
// versions and revisions: an older revision of ckf2 is replaced, a newer
// one kept (its clients need its fixes; it keeps this one's arguments),
// and another library (ckf1, for clients of the old version) is left
// alone.
func TestLibraryRevisions(t *testing.T) {
	t.Parallel()
	_, rdb, ctx := testServer(t)
	if libraryRevision < 1 {
		t.Fatalf("cuckoo.lua states revision %d", libraryRevision)
	}
	old := "#!lua name=ckf1\nredis.register_function('ckf1_add', function() return 1 end)\n"
	if err := rdb.FunctionLoad(ctx, old).Err(); err != nil {
		t.Fatal(err)
	}
	withRevision := func(n int) string {
		return strings.Replace(luaLibrary, fmt.Sprintf("-- revision %d\n", libraryRevision), fmt.Sprintf("-- revision %d\n", n), 1)
	}
	loaded := func() string {
		t.Helper()
		libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		code := ""
		for _, l := range libs {
			names = append(names, l.Name)
			if l.Name == libraryName {
				code = l.Code
			}
		}
		if !strings.Contains(strings.Join(names, " "), "ckf1") {
			t.Fatalf("ckf1 is gone: %v", names)
		}
		return code
	}
	for _, c := range []struct {
		server int // the revision on the server; -1: none
		want   int
	}{{-1, libraryRevision}, {libraryRevision - 1, libraryRevision}, {libraryRevision + 1, libraryRevision + 1}, {libraryRevision, libraryRevision}} {
		rdb.FunctionDelete(ctx, libraryName)
		if c.server >= 0 {
			if err := rdb.FunctionLoad(ctx, withRevision(c.server)).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := New(ctx, rdb, "rev", 1000); err != nil {
			t.Fatal(err)
		}
		if got := revision(loaded()); got != c.want {
			t.Fatalf("server at revision %d: revision %d after New, want %d", c.server, got, c.want)
		}
	}
	if rdb.FCall(ctx, "ckf1_add", nil).Val() != int64(1) {
		t.Fatal("ckf1_add no longer answers")
	}
}

// TestRecordMemory measures what a write's record costs in Redis: the
// growth of used_memory over 20,000 single-key writes, and over 4,000
// calls of 32 keys of one segment (one record per 32 keys), with a long window
// so that none expires. docs/redis.md quotes the figures; the bounds
// here are wide, as Redis's hash tables double in steps (adding 16 to 32
// bytes a key, amortized, depending on where the count falls).
func TestRecordMemory(t *testing.T) {
	testlong.Skip(t)
	s, rdb, ctx := testServer(t)
	used := func() int64 {
		t.Helper()
		v, err := s.Info("used_memory")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	const name = "seen" // the record keys end in the name
	f, err := New(ctx, rdb, name, 1<<20, WithSegments(1), WithRetryWindow(time.Hour), WithRetryHorizon(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const calls = 20000
	before := used()
	for i := range calls {
		if err := f.Add(ctx, []byte("single"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	single := float64(used()-before) / calls
	const batchCalls = 4000
	keys := make([][]byte, batchCalls*writeChunk)
	for i := range keys {
		keys[i] = []byte("batch" + strconv.Itoa(i))
	}
	errs := make([]error, len(keys))
	before = used()
	if err := f.AddBatch(ctx, keys, errs); err != nil {
		t.Fatal(err)
	}
	batch := float64(used()-before) / batchCalls
	t.Logf("a record costs %.0f bytes for a single-key write, %.0f for a call of %d keys (%.1f bytes a key), name %q",
		single, batch, writeChunk, batch/writeChunk, name)
	if single < 100 || single > 230 || batch/writeChunk < 3 || batch/writeChunk > 7 {
		t.Fatalf("records cost %.0f bytes (single) and %.1f a key (batches of 32): docs/redis.md says about 150 and 5", single, batch/writeChunk)
	}
}

// TestDurableReplay checks that WAIT after a call answered from its
// record covers the call's first run. A master's replica is paused; a
// Durable(1) write runs on the master and its WAIT falls short. The same
// call sent again on another client (another connection, which made no
// write) is answered from the record, and its WAIT must fall short too.
// (Redis 7.0 moves a connection's replication offset after any command,
// a read too; the replay writes the record again so that the property
// holds on a server that moves it only for the connection's own writes.)
// Once the replica resumes, it acknowledges.
func TestDurableReplay(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	master, rdb, ctx := testServer(t, "repl-diskless-sync-delay 0")
	replica := redistest.NewServer(t, redistest.Config{Directives: []string{"replicaof 127.0.0.1 " + strconv.Itoa(master.Port)}})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if link, _ := replica.Info("master_link_status"); link == "up" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica did not sync")
		}
	}
	f, err := New(ctx, rdb, "durable", 1000, WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	d := f.Durable(1, 200*time.Millisecond)
	_, i1, _, fp := f.g.locateKey([]byte("k"))
	cmd := d.writeCmd(ctx, fnAdd, 0, []any{1, i1, fp})
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	defer replica.Resume()
	if err := d.run(ctx, []redis.Cmder{cmd}); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("the first run with the replica paused: %v, want ErrNotReplicated", err)
	}
	first := fmt.Sprint(cmd.Val())
	other := redis.NewClient(&redis.Options{Addr: master.Addr, Protocol: 2, DialTimeout: redistest.ClientTimeout,
		ReadTimeout: redistest.ClientTimeout, WriteTimeout: redistest.ClientTimeout})
	defer other.Close()
	g := *d
	g.rdb = other
	cmd.SetErr(nil)
	if err := g.run(ctx, []redis.Cmder{cmd}); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("the replay on another connection with the replica paused: %v, want ErrNotReplicated", err)
	}
	if got := fmt.Sprint(cmd.Val()); got != first {
		t.Fatalf("the replay replied %s, the first run %s", got, first)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	g.waitTimeout = 10 * time.Second
	cmd.SetErr(nil)
	if err := g.run(ctx, []redis.Cmder{cmd}); err != nil {
		t.Fatalf("the replay with the replica running: %v", err)
	}
}
