package main

import (
	"flag"
	"fmt"
	"runtime"

	"github.com/dedupkit/cuckoo/internal/buildinfo"
	"github.com/dedupkit/cuckoo/internal/format"
)

const versionHelp = `Usage: cuckoo version

Print the module version, the source revision it was built from, the Go
version and the platform, and the file formats it reads and writes.
'cuckoo serve --version' prints the same.
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

// versionString describes the build: module version (a tag for a release
// or a build with go install module@version, a pseudo-version for a
// build of a revision, "(devel)" when neither was recorded), VCS revision
// and time when the build recorded them, Go version, platform.
func versionString() string {
	info := buildinfo.Read()
	return fmt.Sprintf("%s\n%s %s/%s\nfile formats: cuckoo filters %s v%d, Bloom filters %s v%d", info, info.GoVersion, runtime.GOOS, runtime.GOARCH,
		format.Cuckoo.Magic(), format.Latest, format.Bloom.Magic(), format.Latest)
}
