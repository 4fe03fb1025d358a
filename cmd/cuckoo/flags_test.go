package main

import (
	"bytes"
	"context"
	"flag"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// badValues lists, for every flag of every command, values it refuses,
// as the flag's part of a command line ({"--fpr", "2"}, or one argument
// for a value after "=": {"--bloom=nope"}); bool flags are tried with
// "=maybe" without being listed. TestEveryFlagRefusesBadValues walks the
// flags the parser declares, so a new flag fails that test until it is
// listed here (or in anyValue, saying why no value is bad).
var badValues = map[string][][]string{
	// The flags of a new filter (dedup, build).
	"fpr":              {{"--fpr", "2"}, {"--fpr", "0"}, {"--fpr", "often"}},
	"capacity":         {{"--capacity", "0"}, {"--capacity", "lots"}, {"--capacity", "-5"}},
	"seed":             {{"--seed", "x"}, {"--seed", "-1"}},
	"bucket-size":      {{"--bucket-size", "0"}, {"--bucket-size", "256"}},
	"fingerprint-bits": {{"--fingerprint-bits", "40"}, {"--fingerprint-bits", "3"}},
	"bloom":            {{"--bloom=nope"}},
	"segments":         {{"--segments", "0"}, {"--segments", "65537"}, {"--segments", "-1"}},
	"headroom":         {{"--headroom", "-5"}, {"--headroom", "lots"}},
	// Keys from fields.
	"key":        {{"--key", "x"}, {"--key", "0"}, {"--key", ""}, {"--key", "3-1"}, {"--key", ".a["}, {"--key", ".a.b"}},
	"field":      {{"--field", "x"}, {"--field", ""}},
	"delimiter":  {{"--field", "2", "--delimiter", ""}, {"--field", "2", "--delimiter", "a\nb"}},
	"time-field": {{"--window", "1h", "--time-field", "x"}, {"--window", "1h", "--time-field", ""}},
	"time-format": {
		{"--window", "1h", "--time-field", "1", "--time-format", "sometime"},
	},
	"window": {{"--window", "0"}, {"--window", "-1h"}, {"--window", "soon"}},
	// Files and directories: any name but the empty one.
	"o":         {{"-o", ""}},
	"output":    {{"--output", ""}},
	"save":      {{"--save", ""}},
	"load":      {{"--load", ""}},
	"state":     {{"--state", ""}},
	"exact-dir": {{"--exact-dir", ""}},
	"svg":       {{"--svg", ""}},
	"to":        {{"--to", ""}},
	"config":    {{"--config", ""}},
	"dir":       {{"--dir", ""}},
	// Redis.
	"redis":      {{"--redis", "http://127.0.0.1:6379"}, {"--redis", "localhost"}, {"--redis", ""}, {"--redis", "127.0.0.1:99999"}},
	"name":       {{"--name", ""}},
	"redis-wait": {{"--redis", "127.0.0.1:1", "--name", "n", "--redis-wait", "-1s"}, {"--redis-wait", "soon"}},
	// Kafka.
	"kafka":              {{"--kafka", ""}},
	"from":               {{"--from", ""}},
	"group":              {{"--group", ""}},
	"instance":           {{"--instance", ""}},
	"state-topic":        {{"--state-topic", ""}},
	"exit-when-idle":     {{"--exit-when-idle", "soon"}, {"--exit-when-idle", "-1s"}},
	"kafka-timeout":      {{"--kafka-timeout", "soon"}, {"--kafka-timeout", "-1s"}},
	"snapshot-every":     {{"--snapshot-every", "0"}, {"--snapshot-every", "often"}},
	"fetch-bytes":        {{"--fetch-bytes", "100"}, {"--fetch-bytes", "128Mi"}, {"--fetch-bytes", "lots"}},
	"tls-ca":             {{"--tls-ca", ""}},
	"tls-cert":           {{"--tls-cert", ""}},
	"tls-key":            {{"--tls-key", ""}},
	"tls-server-name":    {{"--tls-server-name", ""}},
	"sasl":               {{"--sasl", "kerberos"}, {"--sasl", ""}},
	"sasl-user":          {{"--sasl-user", ""}},
	"sasl-password-file": {{"--sasl-password-file", ""}},
	// plan, bench.
	"items": {{"--items", "0"}, {"--items", "many"}},
	// store.
	"sync": {{"--sync", "sometimes"}},
	// serve.
	"bind":                       {{"--bind", "a b"}, {"--bind", ""}, {"--bind", "1.2.3.4.5", "--protected-mode", "no"}},
	"port":                       {{"--port", "99999"}, {"--port", "-1"}, {"--port", "x"}},
	"requirepass-env":            {{"--requirepass-env", ""}},
	"protected-mode":             {{"--protected-mode", "maybe"}},
	"appendonly":                 {{"--appendonly", "maybe"}},
	"appendfsync":                {{"--appendfsync", "sometimes"}},
	"save-interval":              {{"--save-interval", "-5s"}, {"--save-interval", "x"}},
	"save-on-shutdown":           {{"--save-on-shutdown", "maybe"}},
	"maxclients":                 {{"--maxclients", "0"}, {"--maxclients", "x"}},
	"maxmemory":                  {{"--maxmemory", "-1"}, {"--maxmemory", "lots"}},
	"max-filter-size":            {{"--max-filter-size", "0"}},
	"client-output-buffer-limit": {{"--client-output-buffer-limit", "0"}},
	"proto-max-bulk-len":         {{"--proto-max-bulk-len", "2gb"}, {"--proto-max-bulk-len", "0"}},
	"client-query-buffer-limit":  {{"--client-query-buffer-limit", "2gb"}, {"--client-query-buffer-limit", "0"}},
	"timeout":                    {{"--timeout", "-1s"}},
	"metrics":                    {{"--metrics", "9121"}, {"--metrics", "a b"}},
	"shutdown-timeout":           {{"--shutdown-timeout", "-1s"}, {"--shutdown-timeout", "soon"}},
	"threads":                    {{"--threads", "-1"}},
	"bf-error-rate":              {{"--bf-error-rate", "2"}, {"--bf-error-rate", "x"}},
	"bf-initial-size":            {{"--bf-initial-size", "0"}},
	"bf-expansion-factor":        {{"--bf-expansion-factor", "-1"}},
	"cf-bucket-size":             {{"--cf-bucket-size", "0"}, {"--cf-bucket-size", "256"}},
	"cf-initial-size":            {{"--cf-initial-size", "0"}},
	"cf-max-iterations":          {{"--cf-max-iterations", "0"}},
	"cf-expansion-factor":        {{"--cf-expansion-factor", "-1"}},
	"cf-max-expansions":          {{"--cf-max-expansions", "0"}},
}

// anyValue lists the flags that take any value, by command ("" for every
// command), and why.
var anyValue = map[string]map[string]string{
	"query":  {"key": "any string is a key to look up, the empty one included"},
	"add":    {"key": "any string is a key to add, the empty one included"},
	"delete": {"key": "any string is a key to delete, the empty one included"},
	"serve":  {"requirepass": "any string is a password; the empty one is none, as in Redis"},
}

// flagBase is, for each command, the rest of a command line that is valid
// (and quick) with no flag: a bad flag value must fail it, with status 2,
// before anything is read, written or reached.
var flagBase = map[string][]string{
	"dedup":   {"in.txt"},
	"build":   {"-o", "out.ckoo", "in.txt"},
	"query":   {"f.ckoo", "in.txt"},
	"add":     {"f.ckoo", "in.txt"},
	"delete":  {"f.ckoo", "in.txt"},
	"info":    {"f.ckoo"},
	"plan":    {"--items", "1000"},
	"bench":   {"--items", "1000"},
	"store":   {"export", "st.d", "--to", "out.d"},
	"serve":   {"--port", "0", "--dir", "serve.d"},
	"push":    {"f.ckoo", "--redis", "127.0.0.1:1", "--name", "n"},
	"pull":    {"--redis", "127.0.0.1:1", "--name", "n", "-o", "p.ckoo"},
	"version": {},
}

// flagSandbox is a directory with the files flagBase names.
func flagSandbox(t *testing.T) *sandbox {
	e := newEnv(t)
	e.write("in.txt", lines(0, 10))
	e.run("", "build", "-o", "f.ckoo", "--capacity", "100", "in.txt").want(t, exitOK, "build")
	e.run("", "store", "import", "-q", "st.d", "in.txt").want(t, exitOK, "store")
	return e
}

// runBounded runs the command in e with a deadline, far beyond need, so
// that a bad value taken for a good one (serve would then serve) fails
// the test instead of hanging it.
func runBounded(t *testing.T, e *sandbox, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = e.dir
	r := runCmd(t, cmd)
	if ctx.Err() != nil {
		t.Fatalf("%q ran until killed: a bad value was taken", args)
	}
	return r
}

// flagSandboxFiles are the names in flagBase's command lines, which
// runFlagCase makes absolute for a run in the test's process.
var flagSandboxFiles = map[string]bool{
	"in.txt": true, "out.ckoo": true, "f.ckoo": true, "st.d": true, "out.d": true, "serve.d": true, "p.ckoo": true,
}

// runFlagCase runs one command line of the flag tables. The long checks
// (CUCKOO_LONG=1) start the built command for each, as users do; the
// quick run starts it for the first line of each command (first) and runs
// the others through the same run function main calls, in the test's
// process, on the sandbox's files by absolute paths: a process start
// costs more than the parse it checks, and the tables have a thousand
// lines. A command that does not return within the deadline took a bad
// value (serve would then serve) and fails the test.
func runFlagCase(t *testing.T, e *sandbox, first bool, args ...string) result {
	t.Helper()
	if first || testlong.Enabled() {
		return runBounded(t, e, args...)
	}
	abs := make([]string, len(args))
	for i, a := range args {
		abs[i] = a
		if flagSandboxFiles[a] {
			abs[i] = filepath.Join(e.dir, a)
		}
	}
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(&env{stdin: strings.NewReader(""), stdout: &stickyWriter{w: &stdout}, stderr: &stderr, cmd: commandName(abs)}, abs)
	}()
	select {
	case code := <-done:
		return result{stdout.String(), stderr.String(), code}
	case <-time.After(2 * time.Minute):
		t.Fatalf("%q ran for 2 minutes in the test's process: a bad value was taken", args)
		return result{}
	}
}

// TestEveryFlagRefusesBadValues gives every flag of every command the
// values of badValues: each is status 2, with one line that names the
// flag as typed.
func TestEveryFlagRefusesBadValues(t *testing.T) {
	t.Parallel()
	e := flagSandbox(t)
	started := map[string]bool{} // commands run once through the built command
	for _, c := range commands() {
		base, ok := flagBase[c.name]
		if !ok {
			t.Errorf("flagBase has no command line for %s", c.name)
			continue
		}
		c.flags().VisitAll(func(f *flag.Flag) {
			if why := anyValue[c.name][f.Name]; why != "" {
				return
			}
			cases := badValues[f.Name]
			if isBoolFlag(f) {
				cases = append(cases, []string{flagName(f.Name) + "=maybe"})
			}
			if len(cases) == 0 {
				t.Errorf("%s %s: no bad value in badValues, and no reason in anyValue", c.name, flagName(f.Name))
				return
			}
			for _, bad := range cases {
				args := append(append([]string{c.name}, base...), bad...)
				r := runFlagCase(t, e, !started[c.name], args...)
				started[c.name] = true
				r.want(t, exitUsage, c.name)
				typed := flagName(f.Name)
				if !strings.Contains(r.stderr, typed+" ") && !strings.Contains(r.stderr, typed+",") {
					t.Errorf("%q: %q does not name %s", args, r.stderr, typed)
				}
			}
		})
	}
}

// TestFlagNeverTakesAFlagAsItsValue gives every flag that takes a value
// a flag where its value should be: each is status 2, saying the flag
// needs a value, and nothing runs (--help is not shown).
func TestFlagNeverTakesAFlagAsItsValue(t *testing.T) {
	t.Parallel()
	e := flagSandbox(t)
	started := map[string]bool{} // commands run once through the built command
	for _, c := range commands() {
		fs := c.flags()
		var other string // a flag of the command, as users type it
		fs.VisitAll(func(f *flag.Flag) {
			if other == "" && len(f.Name) > 1 {
				other = flagName(f.Name)
			}
		})
		fs.VisitAll(func(f *flag.Flag) {
			if isBoolFlag(f) {
				return
			}
			for _, next := range []string{"--help", "--", other, "-" + strings.TrimLeft(other, "-")} {
				if next == flagName(f.Name) || next == "-"+f.Name {
					continue
				}
				args := append(append([]string{c.name}, flagBase[c.name]...), flagName(f.Name), next, "in.txt")
				r := runFlagCase(t, e, !started[c.name], args...)
				started[c.name] = true
				r.want(t, exitUsage, c.name)
				if want := "flag " + flagName(f.Name) + " needs a value"; !strings.Contains(r.stderr, want) {
					t.Errorf("%q: %q, want %q", args, r.stderr, want)
				}
			}
		})
	}
	// A value that starts with a dash but is no flag is taken: a field
	// spec, standard input; any value after "=".
	e.write("two.txt", "a 1\nb 1\nc 2\n")
	// A fixed seed (see TestDedupInputs): in the few buckets of a 3-line
	// file's filter, with a drawn seed, one of the keys a, b and c was a
	// false positive of another in about 1 run in 10^6.
	if r := e.run("", "dedup", "--key", "-1", "--seed", "1", "two.txt"); r.code != exitOK || r.stdout != "a 1\nb 1\nc 2\n" {
		t.Fatalf("--key -1: status %d, %q %q", r.code, r.stdout, r.stderr)
	}
	e.run("", "add", "f.ckoo", "--key=--odd").want(t, exitOK, "add")
	e.run("", "query", "f.ckoo", "--key=--odd").want(t, exitOK, "query")
	if r := e.run("a-1\n", "dedup", "--key", "2", "--delimiter", "-"); r.code != exitOK || r.stdout != "a-1\n" {
		t.Fatalf("--delimiter -: status %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestFlagListsAreCurrent keeps the tables above free of flags that no
// command declares.
func TestFlagListsAreCurrent(t *testing.T) {
	declared := map[string]bool{}
	for _, c := range commands() {
		c.flags().VisitAll(func(f *flag.Flag) { declared[f.Name] = true })
	}
	var stale []string
	for name := range badValues {
		if !declared[name] {
			stale = append(stale, name)
		}
	}
	for _, flags := range anyValue {
		for name := range flags {
			if !declared[name] && !slices.Contains(stale, name) {
				stale = append(stale, name)
			}
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("badValues or anyValue list flags no command declares: %v", stale)
	}
}
