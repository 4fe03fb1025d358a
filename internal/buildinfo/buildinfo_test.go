package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestModuleVersion: the version is the main module's for this module's
// commands, the dependency's (or its replacement's) for a program that
// embeds the packages, and Devel when nothing was recorded.
func TestModuleVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{"checkout", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, Devel},
		{"nothing recorded", debug.BuildInfo{Main: debug.Module{Path: modulePath}}, Devel},
		{"embedded", debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v9.9.9"},
			Deps: []*debug.Module{{Path: "other.org/x", Version: "v0.1.0"}, {Path: modulePath, Version: "v1.4.0"}}}, "v1.4.0"},
		{"embedded, replaced", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.4.0", Replace: &debug.Module{Path: "../cuckoo", Version: "v1.4.1"}}}}, "v1.4.1"},
		{"embedded, replaced by a directory", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.4.0", Replace: &debug.Module{Path: "../cuckoo"}}}}, "v1.4.0"},
		{"not a dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v9.9.9"}}, Devel},
	} {
		if got := moduleVersion(&tc.bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestStampedVersionWins: a version stamped by the release build's
// linker flags replaces the build information's.
func TestStampedVersionWins(t *testing.T) {
	defer func(v string) { stampedVersion = v }(stampedVersion)
	stampedVersion = "v7.0.0"
	if info := Read(); info.Version != "v7.0.0" || info.GoVersion != runtime.Version() {
		t.Fatalf("%+v", info)
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{Version: Devel}, "cuckoo (devel)"},
		{Info{Version: "v1.2.3", Revision: "0123456789abcdef0123"}, "cuckoo v1.2.3 (revision 0123456789ab)"},
		{Info{Version: "v1.2.3", Revision: "abc", Time: "2026-11-26T12:00:00Z", Modified: true},
			"cuckoo v1.2.3 (revision abc, 2026-11-26T12:00:00Z, modified)"},
	} {
		if got := tc.info.String(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
