// Command cuckoo dedups big files and builds, queries and sizes filter
// files, using the filters of github.com/dedupkit/cuckoo.
//
//	cuckoo dedup urls.txt > unique.txt          # first occurrence of each line, in order
//	cuckoo build -o seen.ckoo urls.txt          # a filter file of the lines
//	cuckoo query seen.ckoo --key https://a.com/ # exit status 0: present, 1: absent
//	cuckoo plan --items 1e9 --fpr 0.001         # what each filter would cost
//
// Run 'cuckoo help' for every command and docs/cli.md for examples. The
// command is thin: flag parsing and I/O. The work is done by the packages
// cmd/cuckoo/internal/dedup, filterfile, planner and the filters.
//
// Where things are: main.go lists the commands and runs one; each command
// is in its own file (dedup.go, build.go, query.go, edit.go for add and
// delete, info.go, plan.go, bench.go, store.go, serve.go, push.go for push
// and pull, version.go); dedup's other seen-sets are in store.go (--exact)
// and redisdedup.go (--redis), and redis.go holds the Redis flags. What
// they share:
// exit.go (exit statuses, errors and their messages), command.go and
// flags.go (declaring and parsing flags), inputs.go (input files), keys.go
// (keys from lines, adding and deleting them), filters.go (the flags of a
// new filter, loading a filter file), outputs.go (atomic, locked writes)
// and env.go (streams, progress bar, interrupts).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/progress"
)

func commands() []*command {
	return []*command{
		dedupCommand(),
		buildCommand(),
		queryCommand(),
		editCommand("add"),
		editCommand("delete"),
		infoCommand(),
		planCommand(),
		benchCommand(),
		storeCommand(),
		serveCommand(),
		pushCommand(),
		pullCommand(),
		versionCommand(),
	}
}

const mainHelp = `cuckoo — dedup big files and build, query and size cuckoo and Bloom filters;
keep exact key-value stores; serve and share filters over the Redis protocol.

Usage:
  cuckoo <command> [flags] [arguments]

Commands:
%s
Run 'cuckoo <command> --help' for a command's flags and examples.

Examples:
  cuckoo dedup urls.txt > unique.txt
  cuckoo dedup --state seen.ckoo today.txt > new-today.txt
  cuckoo build -o seen.ckoo urls.txt
  cuckoo query seen.ckoo --key https://example.com/ && echo seen
  cuckoo plan --items 1e9 --fpr 0.001
  cuckoo dedup --exact urls.txt > unique.txt
  cuckoo store put seen.d https://example.com/ "first seen 2026-11-23"
  cuckoo serve --port 6380 --dir filters

Flags are accepted with one or two dashes (-fpr or --fpr), before or after
the arguments; '--' ends the flags. Counts accept 1000000, 1_000_000, 1M
and 1e6; rates accept 0.001, 1e-3 and 0.1%%.

` + exitStatusHelp + `

Errors are printed as one line: cuckoo <command>: <problem>; <remedy>.
`

func printMainHelp(w io.Writer) {
	var list strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&list, "  %-8s %s\n", c.name, c.synopsis)
	}
	fmt.Fprintf(w, mainHelp, list.String())
}

func main() {
	stdout := &stickyWriter{w: os.Stdout}
	e := &env{
		stdin:     os.Stdin,
		stdout:    stdout,
		stderr:    os.Stderr,
		stdinFile: os.Stdin,
		stdoutTTY: progress.IsTerminal(os.Stdout),
		stderrTTY: progress.IsTerminal(os.Stderr),
		cmd:       commandName(os.Args[1:]),
	}
	// An interrupt must never leave a half-written file: drop the
	// temporary file of every write in progress (the target is untouched
	// until its rename) and exit at once, even while blocked in a read.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	// With SIGPIPE notified (and ignored here), a write to a closed pipe
	// fails with EPIPE instead of killing the process, so the command
	// stops the way it stops on any write error, cleaning up (a temporary
	// store, a kept store's unwritten lines), and report exits quietly.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// Both goroutines exit with the signal's status: run's report, which
	// may see an error the interrupt caused (a write to the temporary file
	// it dropped), waits for the message and returns it too.
	go func() { os.Exit(e.signalled(<-sig)) }()
	os.Exit(run(e, os.Args[1:]))
}

// commandName returns the subcommand named in args, for messages.
func commandName(args []string) string {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0]
	}
	return "cuckoo"
}

// run runs the command line args and returns the exit status.
func run(e *env, args []string) int {
	if len(args) == 0 {
		printMainHelp(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			c := lookup(args[1])
			if c == nil {
				return report(e, "help", usageErr("run 'cuckoo help' for the list", "unknown command %q%s", args[1],
					didYouMean(args[1], commandNames(), func(s string) string { return "'cuckoo help " + s + "'" })))
			}
			printHelp(e.stdout, c)
			return report(e, "help", e.checkOutput(nil))
		}
		printMainHelp(e.stdout)
		return report(e, "cuckoo", e.checkOutput(nil))
	case "-version", "--version", "-v":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		return report(e, "cuckoo", usageErr("run 'cuckoo help' for the list of commands", "unknown command %q%s", name,
			didYouMean(name, commandNames(), func(s string) string { return "'cuckoo " + s + "'" })))
	}
	e.cmd = c.name
	err := c.run(e, args[1:])
	e.stopBar()
	e.unlockAll()
	if errors.Is(err, errHelp) {
		printHelp(e.stdout, c)
		err = nil
	}
	return report(e, c.name, e.checkOutput(err))
}

// commandNames lists the commands' names.
func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// report prints err as one line and returns its exit status; after a
// signal, the signal's status and nothing more, whatever the command
// returned (see env.signalled).
func report(e *env, cmd string, err error) int {
	if status, ok := e.interruptedStatus(); ok {
		return status
	}
	if err == nil {
		return exitOK
	}
	if s, ok := e.stdout.(*stickyWriter); ok && errors.Is(s.err, syscall.EPIPE) {
		// Quietly, unless a signal came since the check above: the
		// first of the two sets the status (see env.signalled).
		if e.signal.CompareAndSwap(0, int32(exitBrokenPipe)) {
			return exitBrokenPipe
		}
		status, _ := e.interruptedStatus()
		return status
	}
	var ce *cliError
	if !errors.As(err, &ce) {
		ce = &cliError{code: exitData, msg: err.Error(), remedy: "this is unexpected; please report it"}
	}
	if ce.msg != "" {
		prefix := "cuckoo " + cmd + ": "
		if cmd == "cuckoo" {
			prefix = "cuckoo: "
		}
		fmt.Fprintln(e.stderr, prefix+ce.Error())
	}
	return ce.code
}
