package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

const versionHelp = `Usage: cuckoo version

Print the module version, the source revision it was built from, the Go
version and the platform, and the file formats it reads and writes.
`

func versionCommand() *command {
	return newCommand("version", "print the version and build information", versionHelp,
		func(*struct{}, *flag.FlagSet) {}, func(e *env, _ *struct{}, pos []string) error {
			if len(pos) > 0 {
				return usageErr("usage: cuckoo version", "unexpected argument %q", pos[0])
			}
			fmt.Fprintln(e.stdout, versionString())
			return nil
		})
}

// versionString describes the build: module version (a tag when built
// with go install module@version, "(devel)" from a checkout), VCS
// revision and time when the build recorded them, Go version, platform.
func versionString() string {
	version, rev, when, dirty := "(unknown)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	s := "cuckoo " + version
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (revision " + rev
		if when != "" {
			s += ", " + when
		}
		if dirty {
			s += ", modified"
		}
		s += ")"
	}
	return s + fmt.Sprintf("\n%s %s/%s\nfile formats: cuckoo filters CKOO v1, Bloom filters BLMF v1", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
