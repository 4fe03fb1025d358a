// Package testbin gives tests the path of a command built from the
// module's tree, linked once and kept in the Go build cache: go run keeps
// the executables it links there, so a second build of unchanged sources
// (the next run of the tests, CI's long run after its quick run) costs no
// link. Only tests import it.
package testbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build returns the path of the command of package pkg (a go run
// argument: "./cmd/cuckoo", "."), built in dir with the build flags given
// ("-tags", "invariants"). The file is in the build cache and must not be
// written: a test that needs the command under another name links to it.
func Build(dir, pkg string, flags ...string) (string, error) {
	// go run -exec echo prints the path of the executable it would run.
	// The first build of a version links it in a work directory, which go
	// run removes, while keeping a copy in the cache; the second finds
	// that copy.
	var path string
	for range 2 {
		var err error
		if path, err = executable(dir, pkg, flags); err != nil {
			return "", err
		}
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("go run -exec echo %s: the executable %s is not kept in the build cache", pkg, path)
}

// executable runs go run -exec echo and returns what it prints.
func executable(dir, pkg string, flags []string) (string, error) {
	args := append(append([]string{"run"}, flags...), "-exec", "echo", pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	path := strings.TrimSuffix(string(out), "\n")
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("go %s printed %q, not the path of an executable", strings.Join(args, " "), out)
	}
	return path, nil
}
