// Package buildinfo says which build of this module is running: the
// module version, the source revision and the Go version, as the Go
// toolchain recorded them in the binary (runtime/debug.ReadBuildInfo), or
// as a release build stamped them. `cuckoo version`, `cuckoo serve
// --version`, the server's INFO and its metrics all read them here.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// modulePath is this module's path, found among a binary's dependencies
// when another program embeds its packages.
const modulePath = "github.com/dedupkit/cuckoo"

// stampedVersion is the version a release build sets with
//
//	-ldflags "-X github.com/dedupkit/cuckoo/internal/buildinfo.stampedVersion=v1.2.3"
//
// (.goreleaser.yaml does). It wins over the build information's, which
// is "(devel)" for a build from a checkout whose revision the toolchain
// could not read.
var stampedVersion string

// Devel is the version of a build whose version nothing recorded: a
// build from a source tree without its version control information.
const Devel = "(devel)"

// Info describes a build.
type Info struct {
	// Version is the module's version: a tag (v1.2.3) for a release or a
	// `go install …@version`, a pseudo-version (v0.0.0-20261126…-abcdef)
	// for a build of a revision, or Devel.
	Version string
	// Revision is the version control revision the binary was built
	// from, or "" when the build did not record it.
	Revision string
	// Time is the revision's commit time (RFC 3339), or "".
	Time string
	// Modified is true when the source tree had changes not committed.
	Modified bool
	// GoVersion is the Go toolchain that built the binary (go1.24.2).
	GoVersion string
}

// Read returns the running binary's build information.
func Read() Info {
	info := Info{Version: Devel, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		info.Version = moduleVersion(bi)
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				info.Time = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if stampedVersion != "" {
		info.Version = stampedVersion
	}
	return info
}

// moduleVersion returns this module's version in bi: the main module's
// when the binary is one of this module's commands, the dependency's when
// another program embeds the packages.
func moduleVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if bi.Main.Path != modulePath {
		v = ""
		for _, dep := range bi.Deps {
			if dep.Path == modulePath {
				v = dep.Version
				if dep.Replace != nil && dep.Replace.Version != "" {
					v = dep.Replace.Version
				}
			}
		}
	}
	if v == "" {
		return Devel
	}
	return v
}

// ShortRevision returns the first 12 characters of the revision, as git
// abbreviates it, or "" when none was recorded.
func (i Info) ShortRevision() string {
	if len(i.Revision) > 12 {
		return i.Revision[:12]
	}
	return i.Revision
}

// String names the build in one line: "cuckoo v1.2.3", followed by
// " (revision 0123456789ab, 2026-11-26T12:00:00Z, modified)" as far as
// the build recorded them.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString("cuckoo ")
	b.WriteString(i.Version)
	if rev := i.ShortRevision(); rev != "" {
		b.WriteString(" (revision ")
		b.WriteString(rev)
		if i.Time != "" {
			b.WriteString(", " + i.Time)
		}
		if i.Modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	return b.String()
}
