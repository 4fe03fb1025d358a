package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dedupkit/cuckoo/server"
)

const serveHelp = `Usage: cuckoo serve [flags]

Serve the filters to any Redis client: RedisBloom's CF.* (cuckoo) and BF.*
(Bloom) commands over RESP2 and RESP3, so redis-cli, go-redis, redis-py,
Jedis and redis-benchmark work unchanged. Data persists in --dir: an
append-only log of every write (fsynced as --appendfsync says) and periodic
snapshots; a restart loads both. SIGINT, SIGTERM or SHUTDOWN stops it
gracefully: commands received are answered, the log is flushed and
fsynced, a snapshot is taken, and it exits with status 0. A stop that
takes longer than --shutdown-timeout closes the connections left and skips
the snapshot (the next start replays the log); a second signal exits at
once (status 130 or 143), losing no acknowledged write either.

--metrics serves Prometheus metrics on http://ADDR/metrics, with /healthz
(alive) and /readyz (the data loaded and the port served) for
orchestrators.

The flags named as Redis 8's settings (--cf-bucket-size, --bf-error-rate,
…) give the parameters of the filters the commands create without being
given them; CONFIG SET changes them while the server runs.

It listens on 127.0.0.1 unless --bind says otherwise, and refuses another
address without --requirepass unless --protected-mode no. A file given to
--config holds the same settings as "name value" lines (requirepass
secret), so a password need not appear in the process list; flags win.

Examples:
  cuckoo serve &
  redis-cli CF.ADD seen https://a.com/
  cuckoo serve --port 6380 --dir filters --appendfsync always
  cuckoo serve --config serve.conf --port 6380 --dir filters
  cuckoo serve --metrics 127.0.0.1:9121

docs/server.md has the command table, the limits, and how to operate it.
`

type serveFlags struct {
	config         string
	bind           string
	port           int
	dir            string
	requirePass    string
	requirePassEnv string
	protectedMode  string
	appendOnly     string
	appendFsync    string
	saveInterval   time.Duration
	saveOnShutdown string
	maxClients     int
	maxMemory      string
	maxFilterSize  string
	outputLimit    string
	maxBulk        string
	queryLimit     string
	timeout        time.Duration
	threads        int
	repair         bool
	metrics        string
	stopTimeout    time.Duration
	version        bool
	// filters are the bf-* and cf-* settings (server.FilterSettings), each
	// a flag of its Redis 8 name, set as CONFIG SET sets it.
	filters server.FilterSettings

	fs         *flag.FlagSet   // the flags as parsed, for --config
	fromConfig map[string]bool // the settings --config's file set
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.Var((*nameValue)(&f.config), "config", "read settings from `file` (name value lines; flags win)")
	fs.StringVar(&f.bind, "bind", "127.0.0.1", "listen on this `address`")
	fs.IntVar(&f.port, "port", 6379, "listen on this TCP `port` (0: any free port)")
	f.dir = "cuckoo-data"
	fs.Var((*nameValue)(&f.dir), "dir", "keep the data in this `directory`")
	fs.StringVar(&f.requirePass, "requirepass", "", "require this `password` (AUTH or HELLO AUTH)")
	fs.Var((*nameValue)(&f.requirePassEnv), "requirepass-env", "require the password in this environment `variable`, when set")
	fs.StringVar(&f.protectedMode, "protected-mode", "yes", "whether to refuse a non-loopback --bind without a password (`yes|no`)")
	fs.StringVar(&f.appendOnly, "appendonly", "yes", "whether to log every write to the append-only log (`yes|no`; no: snapshots only)")
	fs.StringVar(&f.appendFsync, "appendfsync", "everysec", "when to fsync the log: the `policy` always, everysec or no")
	fs.DurationVar(&f.saveInterval, "save-interval", 5*time.Minute, "take a snapshot this often when there were writes (0: never)")
	fs.StringVar(&f.saveOnShutdown, "save-on-shutdown", "yes", "whether to take a snapshot when stopping (`yes|no`)")
	fs.IntVar(&f.maxClients, "maxclients", server.DefaultMaxClients, "serve at most `n` connections")
	fs.StringVar(&f.maxMemory, "maxmemory", "0", "refuse writes that add memory past this `size` of filters and client buffers (0: no limit)")
	fs.StringVar(&f.maxFilterSize, "max-filter-size", "16gb", "largest `size` one CF.RESERVE or BF.RESERVE may ask for")
	fs.StringVar(&f.outputLimit, "client-output-buffer-limit", "256mb", "disconnect a client whose pending replies pass this `size`")
	fs.StringVar(&f.maxBulk, "proto-max-bulk-len", "512mb", "largest request argument, a `size` (at most 1gb)")
	fs.StringVar(&f.queryLimit, "client-query-buffer-limit", "1gb", "disconnect a client whose one command passes this `size` (at most 1gb)")
	fs.DurationVar(&f.timeout, "timeout", 0, "close connections idle this long (0: never)")
	fs.IntVar(&f.threads, "threads", 0, "run Go code on at most `n` threads at once (GOMAXPROCS; 0: one per CPU)")
	fs.BoolVar(&f.repair, "repair", false, "start from a damaged log by cutting it before the damage")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics, /healthz and /readyz over HTTP on this `address` (host:port)")
	fs.DurationVar(&f.stopTimeout, "shutdown-timeout", 10*time.Second, "on SIGTERM or SIGINT, close the connections left and skip the snapshot after this long")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	f.filters = server.DefaultFilterSettings()
	for _, name := range server.FilterSettingNames() {
		fs.Var(filterSetting{&f.filters, name}, name, filterSettingUsage[name])
	}
}

// filterSettingUsage is the help of each bf-* and cf-* flag.
var filterSettingUsage = map[string]string{
	"bf-error-rate":       "the `rate` of the Bloom filters BF.ADD, BF.MADD and BF.INSERT create, in (0, 1)",
	"bf-initial-size":     "the `capacity` of the Bloom filters BF.ADD, BF.MADD and BF.INSERT create",
	"bf-expansion-factor": "the growth `factor` of Bloom filters without EXPANSION (0: NONSCALING)",
	"cf-bucket-size":      "the bucket `size` of cuckoo filters without BUCKETSIZE, 1..255 (RedisBloom: 2)",
	"cf-initial-size":     "the `capacity` of the cuckoo filters CF.ADD, CF.ADDNX, CF.INSERT and CF.INSERTNX create",
	"cf-max-iterations":   "the moves `n` one insert may make in cuckoo filters without MAXITERATIONS (RedisBloom: 20)",
	"cf-expansion-factor": "the growth `factor` of cuckoo filters without EXPANSION (0: fixed; RedisBloom: 1)",
	"cf-max-expansions":   "refuse inserts into a growing cuckoo filter of `n` tables",
}

// filterSetting is the flag of one bf-* or cf-* setting.
type filterSetting struct {
	s    *server.FilterSettings
	name string
}

func (v filterSetting) String() string {
	if v.s == nil {
		return ""
	}
	val, _ := v.s.Get(v.name)
	return val
}

func (v filterSetting) Set(val string) error { return v.s.Set(v.name, val) }

func serveCommand() *command {
	return newCommand("serve", "serve the filters over the Redis protocol (RedisBloom's CF.* and BF.*)", serveHelp,
		(*serveFlags).register, runServe)
}

func runServe(e *env, f *serveFlags, pos []string) error {
	if err := noArgs("serve", pos); err != nil {
		return err
	}
	if f.version {
		fmt.Fprintln(e.stdout, versionString())
		return nil
	}
	cfg, err := f.serverConfig()
	if err != nil {
		return err
	}
	cfg.Logf = func(format string, args ...any) {
		fmt.Fprintf(e.stderr, "cuckoo serve: "+format+"\n", args...)
	}
	cfg.CommandStats = f.metrics != ""
	// The server stops gracefully on SIGINT and SIGTERM, instead of the
	// immediate exit the other commands make.
	signal.Reset(os.Interrupt, syscall.SIGTERM)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)

	if err := checkProtected(cfg); err != nil {
		return err
	}
	if f.threads < 0 {
		return usageErr("give 0 (one per CPU) or a positive number", "bad --threads %d", f.threads)
	}
	if f.threads > 0 {
		runtime.GOMAXPROCS(f.threads)
	}
	// The port first: a server that cannot listen touches no directory.
	// An IPv4 --bind listens on IPv4 only, as Redis's bind does (Go's
	// "tcp" would make 0.0.0.0 every IPv6 address too).
	network := "tcp"
	if ip := net.ParseIP(f.bind); ip != nil && ip.To4() != nil {
		network = "tcp4"
	}
	ln, err := net.Listen(network, cfg.Addr)
	if err != nil {
		return dataErr("choose another --port or --bind", "%v", err)
	}
	if fi, err := os.Stat(cfg.Dir); err == nil && !fi.IsDir() {
		ln.Close()
		return dataErr("give --dir a directory (it is created if missing)", "--dir %s is not a directory", cfg.Dir)
	}
	// The metrics' port too, served at once: /healthz answers while the
	// data directory loads, /readyz once it is loaded.
	var ops *opsServer
	if f.metrics != "" {
		if ops, err = startOps(f.metrics, cfg.Logf); err != nil {
			ln.Close()
			return dataErr("choose another --metrics address", "%v", err)
		}
		defer ops.close()
	}
	srv, err := server.New(cfg)
	if err != nil {
		ln.Close()
		// The server's errors start with its package name; ours with
		// "cuckoo serve: ".
		msg := strings.TrimPrefix(err.Error(), "server: ")
		switch {
		case errors.Is(err, server.ErrDirInUse):
			return dataErr("stop the other server, or give another --dir", "%s is in use by another cuckoo server", cfg.Dir)
		case errors.Is(err, server.ErrDataDir) && unwritableDir(cfg.Dir) != nil:
			return dataErr("give --dir a directory this user can write (it is created if missing)", "%s", msg)
		case errors.Is(err, server.ErrDataDir):
			return dataErr("see docs/server.md, Recovery", "%s", msg)
		}
		return dataErr("check --dir", "%s", msg)
	}
	data := "nothing is saved (no --dir)"
	if cfg.Dir != "" {
		data = "data in " + cfg.Dir
		if cfg.AppendOnly {
			data += " (append-only log, fsync " + cfg.Sync.String() + ")"
		} else {
			data += " (snapshots only)"
		}
	}
	fmt.Fprintf(e.stdout, "cuckoo serve: listening on %s, %s\n", ln.Addr(), data)
	if ops != nil {
		ops.serve(srv)
		fmt.Fprintf(e.stdout, "cuckoo serve: metrics on http://%s/metrics, health on /healthz and /readyz\n", ops.addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case s := <-sig:
		fmt.Fprintf(e.stderr, "cuckoo serve: %v: stopping (again to stop at once)\n", s)
	case <-srv.Done():
	case err := <-served:
		if !errors.Is(err, server.ErrClosed) {
			srv.Close()
			return dataErr("", "serving: %v", err)
		}
	}
	// A second signal stops at once: every acknowledged write is in the
	// log already (handed to the system before its reply was sent).
	go func() {
		s := <-sig
		lost := "the next start replays the log"
		if !cfg.AppendOnly {
			lost = "the writes since the last snapshot are lost (--appendonly no)"
		}
		fmt.Fprintf(e.stderr, "cuckoo serve: %v again: exiting at once; %s\n", s, lost)
		os.Exit(signalStatus(s))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), f.stopTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		if !cfg.AppendOnly {
			return dataErr("without the append-only log, the writes since the last snapshot are lost", "stopping: %v", err)
		}
		return dataErr("the append-only log has every acknowledged write; see docs/server.md, Recovery", "stopping: %v", err)
	}
	return nil
}

// unwritableDir returns why dir cannot be a data directory, when it cannot
// be created or a file created in it (a read-only file system, a
// directory of another user, a path under a file), or nil. The server's
// error says what failed but not whether the directory is damaged, which
// recovery is about, or unusable, which another --dir solves.
func unwritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	probe, err := os.CreateTemp(dir, ".cuckoo-serve-probe-*")
	if err != nil {
		return err
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// checkProtected refuses, before anything is loaded, a non-loopback
// address without a password in protected mode (the server checks it
// again when it serves).
func checkProtected(cfg server.Config) error {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return usageErr("check --bind and --port", "bad address %q", cfg.Addr)
	}
	if !cfg.ProtectedMode || cfg.Password != "" || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usageErr("set --requirepass, or --protected-mode no", "refusing to listen on %s without a password", cfg.Addr)
}

// serverConfig builds the server's configuration from the config file and
// the flags given.
func (f *serveFlags) serverConfig() (server.Config, error) {
	if f.config != "" {
		if err := f.readConfig(f.config); err != nil {
			return server.Config{}, err
		}
	}
	cfg := server.DefaultConfig()
	// Every value is checked here, before anything is opened, so that a
	// value out of range is a usage error (status 2), not the failure to
	// listen or load it would cause (status 3).
	if f.port < 0 || f.port > 65535 {
		return cfg, usageErr("give a port from 1 to 65535, or 0 for any free port", "bad --port %d", f.port)
	}
	if !validBind(f.bind) {
		return cfg, usageErr("give an IP address or a host name, such as 127.0.0.1, ::1 or localhost", "bad --bind %q", f.bind)
	}
	for _, d := range []struct {
		name string
		val  time.Duration
	}{{"save-interval", f.saveInterval}, {"timeout", f.timeout}} {
		if d.val < 0 {
			return cfg, usageErr("give 0 (never) or a positive duration, such as 30s or 5m", "bad --%s %v", d.name, d.val)
		}
	}
	if f.stopTimeout < 0 {
		return cfg, usageErr("give 0 (stop at once) or a positive duration, such as 10s", "bad --shutdown-timeout %v", f.stopTimeout)
	}
	if f.metrics != "" {
		if _, _, err := net.SplitHostPort(f.metrics); err != nil {
			return cfg, usageErr("give a host:port such as 127.0.0.1:9121, or :9121 for every address", "bad --metrics %q", f.metrics)
		}
	}
	cfg.Addr = net.JoinHostPort(f.bind, strconv.Itoa(f.port))
	cfg.Dir = f.dir
	// The command line wins over the file here too: a --requirepass-env
	// given over a file's requirepass takes its variable, when set.
	cfg.Password = f.requirePass
	envFirst := f.fromConfig["requirepass"] && !f.fromConfig["requirepass-env"]
	if pass := os.Getenv(f.requirePassEnv); f.requirePassEnv != "" && pass != "" && (cfg.Password == "" || envFirst) {
		cfg.Password = pass
	}
	cfg.SaveInterval = f.saveInterval
	cfg.MaxClients = f.maxClients
	cfg.IdleTimeout = f.timeout
	cfg.Repair = f.repair
	cfg.Filters = f.filters
	var err error
	bools := []struct {
		name, val string
		dst       *bool
	}{
		{"protected-mode", f.protectedMode, &cfg.ProtectedMode},
		{"appendonly", f.appendOnly, &cfg.AppendOnly},
		{"save-on-shutdown", f.saveOnShutdown, &cfg.SaveOnShutdown},
	}
	for _, b := range bools {
		if *b.dst, err = parseYesNo(b.name, b.val); err != nil {
			return cfg, err
		}
	}
	if cfg.Sync, err = server.ParseSyncPolicy(f.appendFsync); err != nil {
		return cfg, usageErr("give always, everysec or no", "bad --appendfsync %q", f.appendFsync)
	}
	sizes := []struct {
		name, val string
		dst       *int64
	}{
		{"maxmemory", f.maxMemory, &cfg.MaxMemory},
		{"max-filter-size", f.maxFilterSize, &cfg.MaxFilterBytes},
	}
	for _, s := range sizes {
		if *s.dst, err = parseSize(s.name, s.val); err != nil {
			return cfg, err
		}
	}
	out, err := parseSize("client-output-buffer-limit", f.outputLimit)
	if err != nil {
		return cfg, err
	}
	bulk, err := parseSize("proto-max-bulk-len", f.maxBulk)
	if err != nil {
		return cfg, err
	}
	query, err := parseSize("client-query-buffer-limit", f.queryLimit)
	if err != nil {
		return cfg, err
	}
	// The server reads 0 as its default for these four, not as "no
	// limit": a 0 given is refused rather than silently replaced.
	for _, s := range []struct {
		name, val string
		n         int64
	}{{"max-filter-size", f.maxFilterSize, cfg.MaxFilterBytes}, {"client-output-buffer-limit", f.outputLimit, out},
		{"proto-max-bulk-len", f.maxBulk, bulk}, {"client-query-buffer-limit", f.queryLimit, query}} {
		if s.n == 0 {
			return cfg, usageErr("give a positive size such as 100mb", "bad --%s %q", s.name, s.val)
		}
	}
	if out > math.MaxInt {
		return cfg, usageErr("give a smaller size", "bad --client-output-buffer-limit %q", f.outputLimit)
	}
	for _, s := range []struct {
		name, val string
		n         int64
	}{{"proto-max-bulk-len", f.maxBulk, bulk}, {"client-query-buffer-limit", f.queryLimit, query}} {
		if s.n > server.MaxQueryBufferLimit {
			return cfg, usageErr("give at most 1gb", "bad --%s %q", s.name, s.val)
		}
	}
	cfg.MaxOutputBuffer = int(out)
	cfg.Limits.MaxBulk = int(bulk)
	cfg.Limits.MaxCommand = int(query)
	if cfg.MaxClients <= 0 {
		return cfg, usageErr("give a positive number", "bad --maxclients %d", cfg.MaxClients)
	}
	return cfg, nil
}

// validBind reports whether addr is an IP address (0.0.0.0 or :: for every
// address; not an empty one, which an unset variable gives) or a host
// name: labels of letters, digits and '-', the last not all
// digits (1.2.3.4.5 is a mistyped address, not a name). Whether a name
// resolves, and to an address of this machine, only listening tells
// (status 3).
func validBind(addr string) bool {
	if net.ParseIP(addr) != nil {
		return true
	}
	labels := strings.Split(addr, ".")
	if len(addr) > 253 || strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return false
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func parseYesNo(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, usageErr("give yes or no", "bad --%s %q", name, v)
}

// parseSize parses a byte size as Redis's configuration does
// (server.ParseMemory): 1000, 1k (1000), 1kb (1024), 1m, 1mb, 1g, 1gb.
func parseSize(name, v string) (int64, error) {
	n, err := server.ParseMemory(strings.TrimSpace(v))
	if err != nil {
		return 0, usageErr("give a size such as 100mb or 2gb", "bad --%s %q", name, v)
	}
	return n, nil
}

// readConfig applies the settings of a config file to the flags the
// command line did not set.
func (f *serveFlags) readConfig(path string) error {
	file, err := os.Open(path)
	if err != nil {
		return fileErr(path, err, "check --config")
	}
	defer file.Close()
	onCommandLine := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { onCommandLine[fl.Name] = true })
	sc := bufio.NewScanner(file)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		// The name ends at the first blank, a tab too, as Redis reads it.
		name, value := text, ""
		if i := strings.IndexAny(text, " \t"); i >= 0 {
			name, value = text[:i], text[i+1:]
		}
		name = strings.ToLower(name)
		value = strings.Trim(strings.TrimSpace(value), `"`)
		fl := f.fs.Lookup(name)
		if name == "config" || name == "version" || fl == nil {
			return usageErr("see 'cuckoo serve --help' for the settings", "%s:%d: unknown setting %q", path, line, name)
		}
		if onCommandLine[name] {
			continue // the command line wins
		}
		// A switch (repair) takes yes or no, as the settings of Redis's
		// do, besides the flag's true and false.
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			switch strings.ToLower(value) {
			case "yes":
				value = "true"
			case "no":
				value = "false"
			}
		}
		if err := f.fs.Set(name, value); err != nil {
			return usageErr("see 'cuckoo serve --help'", "%s:%d: bad %s %q", path, line, name, value)
		}
		if f.fromConfig == nil {
			f.fromConfig = map[string]bool{}
		}
		f.fromConfig[name] = true
	}
	if err := sc.Err(); err != nil {
		return fileErr(path, err, "check --config")
	}
	return nil
}
