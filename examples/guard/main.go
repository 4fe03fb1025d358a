// Command guard is an HTTP service over SQLite with a guard in front of
// its users table, and a load generator that asks it for ids no user has:
// the flood of lookups of absent keys ("cache penetration") that a cache
// cannot stop, since there is nothing to cache.
//
//	go run . demo                  # seed, serve with and without the guard, compare (-n 1000000 for a million lookups)
//	go run . serve -addr :8080     # the service alone (PUT/GET/DELETE /users/{id}, /stats, POST /rebuild)
//	go run . load -url http://127.0.0.1:8080 -n 1000000
//
// The service starts unguarded and fills its filter with a Rebuild from
// one SELECT while it serves; Inserts and Removes go through the guard.
// demo prints the database queries the guard saved, the p50 and p99
// latency of a lookup of an absent id with and without it, and the rate
// at which absent ids still reached the database (the filter's
// false-positive rate, 0.1 % here).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/dedupkit/cuckoo/guard"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "guard:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	cmd := "demo"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "demo":
		return demo(args, out)
	case "serve":
		return serve(args, out)
	case "load":
		return loadCmd(args, out)
	}
	return fmt.Errorf("unknown command %q (want demo, serve or load)", cmd)
}

// start opens the table at path, seeds it with users rows when it has
// fewer, and returns a service with a guard filled by a Rebuild.
func start(ctx context.Context, path string, users int, out io.Writer) (*service, error) {
	st, err := openStore(path)
	if err != nil {
		return nil, err
	}
	if err := seed(ctx, st, users, out); err != nil {
		return nil, err
	}
	n, err := st.count(ctx)
	if err != nil {
		return nil, err
	}
	sv := &service{st: st, capacity: uint64(max(2*n, 1000))}
	// No filter yet: lookups go to the database until the Rebuild below
	// fills one from a scan, while the service could already serve.
	if sv.g, err = guard.New[User](nil, st.load); err != nil {
		return nil, err
	}
	t := time.Now()
	if err := sv.g.Rebuild(ctx, sv.newFilter(), st.scan); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "filter of %d users built in %v\n", n, time.Since(t).Round(time.Millisecond))
	return sv, nil
}

// seed inserts users u000000000, u000000001, ... up to n rows.
func seed(ctx context.Context, st *store, n int, out io.Writer) error {
	have, err := st.count(ctx)
	if err != nil || have >= int64(n) {
		return err
	}
	t := time.Now()
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO users (id, name) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	for i := have; i < int64(n); i++ {
		if _, err := ins.ExecContext(ctx, fmt.Sprintf("u%09d", i), fmt.Sprintf("user %d", i)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(out, "seeded %d users in %v\n", int64(n)-have, time.Since(t).Round(time.Millisecond))
	return nil
}

func serve(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	path := fs.String("db", "users.db", "SQLite file")
	users := fs.Int("users", 100_000, "users to seed the table with")
	direct := fs.Bool("direct", false, "serve lookups without the guard")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sv, err := start(context.Background(), *path, *users, out)
	if err != nil {
		return err
	}
	sv.direct = *direct
	fmt.Fprintf(out, "serving on http://%s (guard: %v)\n", *addr, !sv.direct)
	return http.ListenAndServe(*addr, sv)
}

func loadCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8080", "the service")
	n := fs.Int("n", 1_000_000, "lookups of absent ids")
	workers := fs.Int("c", 4*runtime.GOMAXPROCS(0), "concurrent requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := askAbsent(newClient(*workers), *url, *n, *workers)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d lookups of absent ids in %v: p50 %v, p99 %v, %d not 404\n", r.requests, r.took.Round(time.Millisecond), r.p50, r.p99, r.unexpected)
	return nil
}

func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// demo runs the service twice on loopback, without the guard and with
// it, over one table, and asks each for the same absent ids.
func demo(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the SQLite file (default: a temporary one)")
	users := fs.Int("users", 100_000, "users in the table")
	n := fs.Int("n", 100_000, "lookups of absent ids per run (1000000: the run of docs/guard.md, a few minutes)")
	workers := fs.Int("c", 4*runtime.GOMAXPROCS(0), "concurrent requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 100 {
		return errors.New("-n must be at least 100")
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "guard-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	ctx := context.Background()
	sv, err := start(ctx, filepath.Join(*dir, "users.db"), *users, out)
	if err != nil {
		return err
	}
	defer sv.st.db.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sv}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := newClient(*workers)

	// A row through the guard, to show the service works end to end.
	if err := check(client, base); err != nil {
		return err
	}

	fmt.Fprintf(out, "%d lookups of absent ids, %d at a time, over HTTP on loopback:\n", *n, *workers)
	var results [2]loadResult
	var queries [2]int64
	var before, after guard.Stats
	// What it is doing, on standard error, so that a long run is seen to
	// run and the results on standard output stay as docs/guard.md shows.
	progress := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "guard demo: "+format+"\n", args...) }
	for i, direct := range []bool{true, false} {
		sv.direct = direct
		progress("asking the service %s for %d absent ids over HTTP…", map[bool]string{true: "without the guard", false: "with the guard"}[direct], *n)
		q0 := sv.st.queries.Load()
		before = sv.g.Stats()
		r, err := askAbsent(client, base, *n, *workers)
		if err != nil {
			return err
		}
		if r.unexpected != 0 {
			return fmt.Errorf("%d lookups of absent ids did not answer 404", r.unexpected)
		}
		results[i], queries[i] = r, sv.st.queries.Load()-q0
		after = sv.g.Stats()
	}
	fmt.Fprintf(out, "%-14s %12s %10s %10s %10s %12s\n", "", "queries", "p50", "p99", "mean", "lookups/s")
	for i, name := range []string{"without guard", "with guard"} {
		r := results[i]
		fmt.Fprintf(out, "%-14s %12d %10v %10v %10v %12.0f\n", name, queries[i], r.p50.Round(time.Microsecond/10),
			r.p99.Round(time.Microsecond/10), r.mean.Round(time.Microsecond/10), float64(r.requests)/r.took.Seconds())
	}
	// The same lookups in the process, without HTTP: the database query
	// against the filter alone.
	var inproc [2]loadResult
	progress("the same lookups in the process, without HTTP…")
	for i, direct := range []bool{true, false} {
		sv.direct = direct
		if inproc[i], err = lookupAbsent(ctx, sv, *n, *workers); err != nil {
			return err
		}
	}
	for i, name := range []string{"without guard", "with guard"} {
		r := inproc[i]
		fmt.Fprintf(out, "%-14s %12s %10v %10v %10v %12.0f   (in the process, no HTTP)\n", name, "", r.p50.Round(time.Microsecond/100),
			r.p99.Round(time.Microsecond/100), r.mean.Round(time.Microsecond/100), float64(r.requests)/r.took.Seconds())
	}
	saved := queries[0] - queries[1]
	fmt.Fprintf(out, "database queries saved: %d of %d (%.2f %%)\n", saved, queries[0], 100*float64(saved)/float64(queries[0]))
	blocked, missing := after.Blocked-before.Blocked, after.Missing-before.Missing
	fmt.Fprintf(out, "measured rate: %d of %d absent ids reached the database (%.4f %%; the filter's target: 0.1 %%)\n",
		missing, blocked+missing, 100*float64(missing)/float64(blocked+missing))
	return nil
}

// check inserts, reads, deletes and reads again one user through the
// service.
func check(client *http.Client, base string) error {
	do := func(method, path string, want int) error {
		req, _ := http.NewRequest(method, base+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("%s %s: %s, want %d", method, path, resp.Status, want)
		}
		return nil
	}
	for _, step := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPut, "/users/demo-check?name=Ada", http.StatusCreated},
		{http.MethodGet, "/users/demo-check", http.StatusOK},
		{http.MethodDelete, "/users/demo-check", http.StatusNoContent},
		{http.MethodGet, "/users/demo-check", http.StatusNotFound},
		{http.MethodDelete, "/users/demo-check", http.StatusNotFound},
	} {
		if err := do(step.method, step.path, step.want); err != nil {
			return err
		}
	}
	return nil
}
