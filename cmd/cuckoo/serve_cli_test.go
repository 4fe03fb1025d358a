package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/server"
)

// TestServeDataDirThatCannotBeWrittenSaysSo: a --dir that cannot be
// created (under a file) or written (a read-only directory) stops serve
// with status 3 and a remedy about the directory, not the pointer to
// recovering a damaged one that it gave before.
func TestServeDataDirThatCannotBeWrittenSaysSo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("file", "a file, not a directory")
	dirs := []string{"file/data"}
	// root writes a directory whatever its mode.
	if os.Geteuid() != 0 {
		if err := os.Mkdir(filepath.Join(e.dir, "readonly"), 0o555); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, "readonly", "readonly/data")
	}
	for _, dir := range dirs {
		r := e.run("", "serve", "--port", "0", "--dir", dir)
		r.want(t, exitData, "serve")
		if strings.Contains(r.stderr, "Recovery") || !strings.Contains(r.stderr, "give --dir a directory this user can write") {
			t.Errorf("--dir %s: %q", dir, r.stderr)
		}
	}
}

// TestServeConfigFileSeparatorsAndBooleans: a config file's name and
// value may be separated by any blanks, tabs too, as Redis reads them, and
// --repair, a switch, takes yes or no there as the other switches do.
func TestServeConfigFileSeparatorsAndBooleans(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "serve.conf")
	os.WriteFile(path, []byte("port\t7003\nappendfsync  \t always\nrepair yes\n"), 0o600)
	cfg, err := parseServe(t, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:7003" || cfg.Sync != server.SyncAlways || !cfg.Repair {
		t.Fatalf("config file: %+v", cfg)
	}
	os.WriteFile(path, []byte("repair no\n"), 0o600)
	if cfg, err := parseServe(t, "--config", path); err != nil || cfg.Repair {
		t.Fatalf("repair no: %v, %v", cfg.Repair, err)
	}
}

// TestServeRequirepassEnvOnCommandLineWinsOverConfigFile: the command line
// wins over the config file, so a --requirepass-env given over a file's
// requirepass takes its variable (the file's password used to win); the
// file's password stays when the variable is unset, and a --requirepass
// given wins over both.
func TestServeRequirepassEnvOnCommandLineWinsOverConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.conf")
	os.WriteFile(path, []byte("requirepass from-file\n"), 0o600)
	t.Setenv("TEST_CUCKOO_SERVE_PASSWORD", "from-env")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--requirepass-env", "TEST_CUCKOO_SERVE_PASSWORD"}, "from-env"},
		{[]string{"--requirepass-env", "TEST_CUCKOO_SERVE_UNSET"}, "from-file"},
		{[]string{"--requirepass-env", "TEST_CUCKOO_SERVE_PASSWORD", "--requirepass", "from-flag"}, "from-flag"},
		{nil, "from-file"},
	} {
		cfg, err := parseServe(t, append([]string{"--config", path}, c.args...)...)
		if err != nil || cfg.Password != c.want {
			t.Errorf("%v: password %q, %v; want %q", c.args, cfg.Password, err, c.want)
		}
	}
	// Both in the file: requirepass, as with both flags.
	os.WriteFile(path, []byte("requirepass-env TEST_CUCKOO_SERVE_PASSWORD\nrequirepass from-file\n"), 0o600)
	if cfg, err := parseServe(t, "--config", path); err != nil || cfg.Password != "from-file" {
		t.Errorf("both in the file: %q, %v", cfg.Password, err)
	}
}
