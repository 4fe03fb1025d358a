package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// command is a subcommand.
type command struct {
	name     string
	synopsis string // for the command list
	run      func(e *env, args []string) error
	help     string // the full help: usage, description, examples
	flags    func() *flag.FlagSet
}

// newCommand builds a command whose flags fill a fresh T: register
// declares them, run runs the command with them and the positional
// arguments.
func newCommand[T any](name, synopsis, help string, register func(*T, *flag.FlagSet), run func(*env, *T, []string) error) *command {
	return &command{
		name:     name,
		synopsis: synopsis,
		help:     help,
		flags: func() *flag.FlagSet {
			fs := newFlags(name)
			register(new(T), fs)
			return fs
		},
		run: func(e *env, args []string) error {
			f := new(T)
			fs := newFlags(name)
			register(f, fs)
			pos, err := parseArgs(fs, name, args)
			if err != nil {
				return err
			}
			return run(e, f, pos)
		},
	}
}

// noArgs returns a usage error when a command that takes no argument got
// one.
func noArgs(cmd string, pos []string) error {
	if len(pos) > 0 {
		return usageErr("see 'cuckoo "+cmd+" --help'", "unexpected argument %q", pos[0])
	}
	return nil
}

// printHelp writes a command's help: its text, then its flags with their
// defaults, as users type them.
func printHelp(w io.Writer, c *command) {
	fmt.Fprintln(w, strings.TrimSpace(c.help))
	if c.flags == nil {
		return
	}
	fs := c.flags()
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		head := "  " + flagName(f.Name)
		if name != "" && !isBoolFlag(f) {
			head += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			usage += " (default " + f.DefValue + ")"
		}
		if len(head) < 24 {
			lines = append(lines, fmt.Sprintf("%-24s%s", head, usage))
		} else {
			lines = append(lines, head+"\n"+strings.Repeat(" ", 24)+usage)
		}
	})
	if len(lines) > 0 {
		sort.Strings(lines)
		fmt.Fprintln(w, "\nFlags (one dash or two, before or after the arguments):")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
}
