package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
	"github.com/dedupkit/cuckoo/redisfilter"
)

const pushHelp = `Usage: cuckoo push FILE --redis URL --name NAME [--replace]

Upload a cuckoo filter file into Redis (7.0 or later, or Valkey; a single
server or a Redis Cluster) as the shared filter NAME: the same parameters,
seed and table, so it answers every lookup as the file does, and any
number of clients can then add, delete and look up keys at once (the Go
package github.com/dedupkit/cuckoo/redisfilter, or 'cuckoo dedup --redis').
'cuckoo pull' writes it back to a file, bit for bit.

A window filter file ('cuckoo dedup --window D --state FILE') becomes the
window filter NAME, of one segment, its keys' ages going on by Redis's
clock ('cuckoo dedup --redis URL --name NAME --window D' uses it).

The filter is stored in as many Redis keys (segments) as the file has
segments: build it with 'cuckoo build --segments N' so that a cluster's
masters share it (16 or more for a large filter; see docs/redis.md). A
file of one segment is one key, served by one master.

Only fixed-size cuckoo filters with plain buckets can be pushed (not
--grow, --semi-sorted or --bloom files). An existing filter NAME is left
alone unless --replace is given.

Examples:
  cuckoo build --segments 16 --capacity 10M -o seen.ckoo urls.txt
  cuckoo push seen.ckoo --redis redis://localhost:6379 --name crawler:seen
  cuckoo push seen.ckoo --redis 10.0.0.1:7000,10.0.0.2:7000 --name seen --replace
  cuckoo dedup --window 24h --state day.ckoo events.log > new.log
  cuckoo push day.ckoo --redis redis://localhost:6379 --name events:day
`

type pushFlags struct {
	redis   redisFlags
	replace bool
}

func (f *pushFlags) register(fs *flag.FlagSet) {
	f.redis.register(fs)
	fs.BoolVar(&f.replace, "replace", false, "replace a filter of that name in Redis")
}

func pushCommand() *command {
	return newCommand("push", "upload a cuckoo filter file into Redis, to share it", pushHelp,
		(*pushFlags).register, runPush)
}

func runPush(e *env, f *pushFlags, args []string) error {
	if len(args) != 1 {
		return usageErr("see 'cuckoo push --help'", "push takes one filter file")
	}
	path := args[0]
	loaded, err := e.loadFilter(path)
	if err != nil {
		return err
	}
	if w := loaded.Window(); w != nil {
		return pushWindow(e, f, path, w)
	}
	if loaded.Kind() != filterfile.Cuckoo {
		return usageErr("build it with 'cuckoo build --segments N' (without --grow or --bloom)",
			"%s is a %s; push takes a fixed-size cuckoo filter", path, loaded.Kind().Description())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return dataErr(remedyRead, "%s: %v", path, unwrap(err))
	}
	var src cuckoo.Filter
	if err := src.UnmarshalBinary(data); err != nil {
		return dataErr("rebuild it with 'cuckoo build'", "%s: %v", path, unwrap(err))
	}
	if src.SemiSorted() {
		return usageErr("build it without --semi-sorted", "%s has semi-sorted buckets, which Redis filters do not take", path)
	}
	ctx := context.Background()
	rdb, err := f.redis.connect(ctx, "push")
	if err != nil {
		return err
	}
	defer rdb.Close()
	rf, err := redisfilter.Push(ctx, rdb, f.redis.name, &src, f.replace)
	if err != nil {
		return redisErr(&f.redis, err)
	}
	fmt.Fprintf(e.stderr, "cuckoo push: %s: %s in %s (%s) as %q\n", path,
		units.Counted(src.Len(), "item"), units.Counted(uint64(rf.Segments()), "segment"), units.Bytes(rf.SizeInBytes()), f.redis.name)
	return nil
}

const pullHelp = `Usage: cuckoo pull --redis URL --name NAME -o FILE

Write the shared cuckoo filter NAME in Redis to a filter file: the same
parameters, seed and table as in Redis (a filter pushed and pulled back is
the file pushed, byte for byte). The file is checked by the library's
decoder before it is written, atomically. Each segment is read in one step;
segments written to meanwhile are read at slightly different moments. A
window filter NAME of one segment is written as a window filter file
(with its keys' ages), which 'cuckoo dedup --window D --state FILE' goes
on with.

Examples:
  cuckoo pull --redis redis://localhost:6379 --name crawler:seen -o seen.ckoo
  cuckoo query seen.ckoo --key https://example.com/
`

type pullFlags struct {
	redis  redisFlags
	output string
}

func (f *pullFlags) register(fs *flag.FlagSet) {
	f.redis.register(fs)
	fs.Var((*nameValue)(&f.output), "o", "write the filter to `file` (required)")
	fs.Var((*nameValue)(&f.output), "output", "the same as -o `file`")
}

func pullCommand() *command {
	return newCommand("pull", "write a cuckoo filter in Redis to a file", pullHelp,
		(*pullFlags).register, runPull)
}

func runPull(e *env, f *pullFlags, args []string) error {
	if err := noArgs("pull", args); err != nil {
		return err
	}
	if f.output == "" {
		return usageErr("name the filter file to write with -o FILE", "no output file")
	}
	ctx := context.Background()
	rdb, err := f.redis.connect(ctx, "pull")
	if err != nil {
		return err
	}
	defer rdb.Close()
	var snap io.WriterTo
	rf, err := redisfilter.Open(ctx, rdb, f.redis.name)
	switch {
	case errors.Is(err, redisfilter.ErrNotFound):
		var rw *redisfilter.Window
		if rw, err = redisfilter.OpenWindow(ctx, rdb, f.redis.name); err == nil {
			snap, err = rw.Snapshot(ctx)
			if errors.Is(err, redisfilter.ErrUnsupported) {
				return usageErr("pull takes a window of one segment, such as one cuckoo push made", "%v", unwrap(err))
			}
		} else if errors.Is(err, redisfilter.ErrNotFound) {
			err = redisfilter.ErrNotFound // the filter's message, not the window's
		}
	case err == nil:
		snap, err = rf.Snapshot(ctx)
	}
	if err != nil {
		return redisErr(&f.redis, err)
	}
	return e.writeFile(f.output, func(w io.Writer) error {
		_, err := snap.WriteTo(w)
		return err
	})
}

// pushWindow is push of a window filter file.
func pushWindow(e *env, f *pushFlags, path string, w *cuckoo.Window) error {
	ctx := context.Background()
	rdb, err := f.redis.connect(ctx, "push")
	if err != nil {
		return err
	}
	defer rdb.Close()
	rw, err := redisfilter.PushWindow(ctx, rdb, f.redis.name, w, f.replace)
	if errors.Is(err, redisfilter.ErrUnsupported) {
		return usageErr("see 'cuckoo push --help'", "%s: %v", path, unwrap(err))
	}
	if err != nil {
		return redisErr(&f.redis, err)
	}
	fmt.Fprintf(e.stderr, "cuckoo push: %s: a window of %v, %s keys a window, %s in it now, as %q\n", path,
		rw.Window(), units.Count(rw.Capacity()), units.Counted(w.Len(), "key"), f.redis.name)
	return nil
}
