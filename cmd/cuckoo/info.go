package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
)

const infoHelp = `Usage: cuckoo info [flags] FILE...

Describe filter files: kind, parameters, items, load, expected
false-positive rate (now, and with the filter at its capacity), memory,
file size, hash seed and format version. The whole file is read and
checked, so a damaged file is reported (exit status 3).

Examples:
  cuckoo info seen.ckoo
  cuckoo info --json seen.ckoo | jq .fpr
`

type infoFlags struct{ asJSON bool }

func (f *infoFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.asJSON, "json", false, "print JSON: one object per file, one per line")
}

func infoCommand() *command {
	return newCommand("info", "describe a filter file: kind, parameters, items, rate, size", infoHelp,
		(*infoFlags).register, runInfo)
}

func runInfo(e *env, f *infoFlags, pos []string) error {
	if len(pos) == 0 {
		return usageErr("usage: cuckoo info FILE...", "no filter file")
	}
	for i, path := range pos {
		filter, err := e.loadFilter(path)
		if err != nil {
			return err
		}
		fields := append(filterfile.Fields{{Key: "file", Label: "file", Value: path, Text: path}}, filter.Info()...)
		if f.asJSON {
			b, err := json.Marshal(fields)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s\n", b)
			continue
		}
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printFields(e, fields)
	}
	return nil
}

func printFields(e *env, fields filterfile.Fields) {
	width := 0
	for _, f := range fields {
		width = max(width, len(f.Label))
	}
	for _, f := range fields {
		fmt.Fprintf(e.stdout, "%-*s  %s\n", width, f.Label, strings.TrimSpace(f.Text))
	}
}
