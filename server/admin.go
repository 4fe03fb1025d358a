package server

// The server commands, Redis's "server" group: what operators and tools
// ask of the server itself (COMMAND, INFO, CONFIG, SAVE, BGSAVE,
// BGREWRITEAOF, LASTSAVE, SHUTDOWN). The connection commands are in
// connection.go, the key space's in keys.go.

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo/internal/buildinfo"
)

var serverCommands = []*command{
	{name: "command", arity: -1, group: "server", summary: "Describes the commands", exec: handle(parseCommand)},
	{name: "info", arity: -1, group: "server", summary: "Returns information and statistics about the server", exec: handle(parseInfo)},
	{name: "config", arity: -2, flags: flagAdmin, group: "server", summary: "Returns configuration parameters, and sets the filter settings", exec: handle(parseConfig)},
	{name: "save", arity: 1, flags: flagAdmin, group: "server", summary: "Takes a snapshot and waits for it", exec: handle(parseSave)},
	{name: "bgsave", arity: -1, flags: flagAdmin, group: "server", summary: "Takes a snapshot in the background", exec: handle(parseSave)},
	{name: "bgrewriteaof", arity: 1, flags: flagAdmin, group: "server",
		summary: "Compacts the append-only log into a snapshot, in the background", exec: handle(parseSave)},
	{name: "lastsave", arity: 1, flags: flagFast, group: "server", summary: "Returns the time of the last snapshot", exec: handle(parseLastSave)},
	{name: "shutdown", arity: -1, flags: flagAdmin, group: "server", summary: "Stops the server", exec: handle(parseShutdown)},
}

// COMMAND [COUNT | LIST | INFO name... | DOCS name...]

type commandReq struct {
	sub   string
	names [][]byte
}

func parseCommand(args [][]byte) (commandReq, error) {
	if len(args) == 1 {
		return commandReq{}, nil
	}
	for _, sub := range []string{"COUNT", "LIST", "INFO", "DOCS"} {
		if is(args[1], sub) {
			if (sub == "COUNT" || sub == "LIST") && len(args) > 2 {
				return commandReq{}, replyError(fmt.Sprintf("ERR wrong number of arguments for 'command|%s' command", strings.ToLower(sub)))
			}
			return commandReq{sub: sub, names: args[2:]}, nil
		}
	}
	return commandReq{}, unknownSubcommand(args[1], "COMMAND")
}

// sortedCommands returns the command table sorted by name.
func sortedCommands() []*command {
	cmds := make([]*command, 0, len(commandTable))
	for _, cmd := range commandTable {
		cmds = append(cmds, cmd)
	}
	slices.SortFunc(cmds, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return cmds
}

func (r commandReq) run(c *call) {
	switch r.sub {
	case "COUNT":
		c.w.Int(int64(len(commandTable)))
	case "LIST":
		cmds := sortedCommands()
		c.w.Array(len(cmds))
		for _, cmd := range cmds {
			c.w.BulkString(cmd.name)
		}
	case "INFO":
		cmds := sortedCommands()
		if len(r.names) > 0 {
			cmds = cmds[:0]
			for _, n := range r.names {
				cmds = append(cmds, lookupCommand(n))
			}
		}
		c.w.Array(len(cmds))
		for _, cmd := range cmds {
			writeCommandInfo(c, cmd)
		}
	case "DOCS":
		cmds := sortedCommands()
		if len(r.names) > 0 {
			cmds = cmds[:0]
			for _, n := range r.names {
				if cmd := lookupCommand(n); cmd != nil {
					cmds = append(cmds, cmd)
				}
			}
		}
		c.w.Map(len(cmds))
		for _, cmd := range cmds {
			c.w.BulkString(cmd.name)
			group := cmd.group
			if group == "" {
				group = "module"
			}
			c.w.Map(3)
			c.w.BulkString("summary")
			c.w.BulkString(cmd.summary)
			c.w.BulkString("since")
			c.w.BulkString("1.0.0")
			c.w.BulkString("group")
			c.w.BulkString(group)
		}
	default:
		cmds := sortedCommands()
		c.w.Array(len(cmds))
		for _, cmd := range cmds {
			writeCommandInfo(c, cmd)
		}
	}
}

// writeCommandInfo writes a command's entry in Redis 7's COMMAND format:
// name, arity, flags, first key, last key, step, ACL categories, tips, key
// specifications, subcommands. A nil command is a null.
func writeCommandInfo(c *call, cmd *command) {
	if cmd == nil {
		c.w.Null()
		return
	}
	var flags []string
	for _, f := range []struct {
		bit  cmdFlags
		name string
	}{{flagWrite, "write"}, {flagReadonly, "readonly"}, {flagDenyOOM, "denyoom"}, {flagModule, "module"},
		{flagAdmin, "admin"}, {flagNoAuth, "no_auth"}, {flagFast, "fast"}} {
		if cmd.flags&f.bit != 0 {
			flags = append(flags, f.name)
		}
	}
	c.w.Array(10)
	c.w.BulkString(cmd.name)
	c.w.Int(int64(cmd.arity))
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.Simple(f)
	}
	c.w.Int(int64(cmd.firstKey))
	c.w.Int(int64(cmd.lastKey))
	c.w.Int(int64(cmd.step))
	c.w.Set(0)
	c.w.Set(0)
	c.w.Array(0)
	c.w.Array(0)
}

// INFO [section ...]

type infoReq struct{ sections []string }

var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "keyspace"}

func parseInfo(args [][]byte) (infoReq, error) {
	var r infoReq
	for _, a := range args[1:] {
		s := strings.ToLower(string(a))
		if s == "all" || s == "everything" || s == "default" {
			return infoReq{}, nil
		}
		r.sections = append(r.sections, s)
	}
	return r, nil
}

func (r infoReq) run(c *call) {
	want := r.sections
	if len(want) == 0 {
		want = infoSections
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !slices.Contains(want, sec) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		c.s.writeInfo(&b, sec)
	}
	c.w.Verbatim(b.String())
}

func (s *Server) writeInfo(b *strings.Builder, section string) {
	line := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	switch section {
	case "server":
		b.WriteString("# Server\r\n")
		line("redis_version", redisVersion)
		build := buildinfo.Read()
		line("cuckoo_version", build.Version)
		line("cuckoo_git_sha1", cmp.Or(build.Revision, "00000000"))
		line("cuckoo_git_dirty", boolInt(build.Modified))
		line("redis_mode", "standalone")
		line("os", runtime.GOOS+" "+runtime.GOARCH)
		line("arch_bits", strconv.IntSize)
		line("go_version", runtime.Version())
		line("process_id", os.Getpid())
		if addr := s.Addr(); addr != nil {
			if _, port, err := net.SplitHostPort(addr.String()); err == nil {
				line("tcp_port", port)
			}
		}
		up := time.Since(s.started)
		line("uptime_in_seconds", int64(up.Seconds()))
		line("uptime_in_days", int64(up.Hours()/24))
	case "clients":
		b.WriteString("# Clients\r\n")
		line("connected_clients", s.numClients.Load())
		line("maxclients", s.cfg.MaxClients)
	case "memory":
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.WriteString("# Memory\r\n")
		used := int64(ms.HeapAlloc) + s.clientBufs.system.Load()
		line("used_memory", used)
		line("used_memory_human", humanBytes(used))
		if rss := residentBytes(); rss > 0 {
			line("used_memory_rss", rss)
			line("used_memory_rss_human", humanBytes(rss))
		}
		line("used_memory_dataset", s.ks.used.Load())
		line("used_memory_dataset_human", humanBytes(s.ks.used.Load()))
		line("mem_clients_normal", s.clientBufs.used())
		line("scandump_copies", s.ks.dumps.count())
		line("mem_scandump_copies", s.ks.dumps.bytes.Load())
		loads, loadBytes := s.pendingLoads()
		line("loadchunk_pending", loads)
		line("mem_loadchunk_pending", loadBytes)
		line("maxmemory", s.cfg.MaxMemory)
		line("maxmemory_human", humanBytes(s.cfg.MaxMemory))
		line("maxmemory_policy", "noeviction")
	case "persistence":
		b.WriteString("# Persistence\r\n")
		line("loading", 0)
		line("rdb_changes_since_last_save", boolInt(s.ks.dirty.Load()))
		line("rdb_bgsave_in_progress", boolInt(s.save.running.Load()))
		line("rdb_last_save_time", s.save.last.Load())
		line("rdb_last_bgsave_status", okErr(s.save.lastOK.Load()))
		line("rdb_saves", s.save.count.Load())
		line("aof_enabled", boolInt(s.aof != nil))
		if s.aof != nil {
			line("aof_last_write_status", okErr(!s.aof.failed.Load()))
			line("aof_current_size", s.aof.size())
			line("aof_fsync", s.cfg.Sync)
		}
	case "stats":
		b.WriteString("# Stats\r\n")
		line("total_connections_received", s.totalConns.Load())
		var n int64
		s.mu.Lock()
		for cl := range s.mu.clients {
			n += cl.cmds.Load()
		}
		s.mu.Unlock()
		line("total_commands_processed", s.totalCmds.Load()+n)
		line("client_query_buffer_limit_disconnections", s.clientBufs.limitCloses.Load())
	case "keyspace":
		b.WriteString("# Keyspace\r\n")
		if n := s.ks.count.Load(); n > 0 {
			line("db0", fmt.Sprintf("keys=%d,expires=0,avg_ttl=0", n))
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func okErr(ok bool) string {
	if ok {
		return "ok"
	}
	return "err"
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// residentBytes returns the process's resident memory, or 0 when the
// system does not tell (it reads /proc/self/statm).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// CONFIG GET pattern... | CONFIG SET parameter value [parameter value ...]:
// the configuration, of which the filter settings (Redis 8's bf-* and cf-*
// names, settings.go) can be changed while the server runs; the rest is
// fixed at start ("can't set immutable config").

type configReq struct {
	set  bool
	args [][]byte // GET: the patterns; SET: name, value pairs
}

func parseConfig(args [][]byte) (configReq, error) {
	switch {
	case is(args[1], "GET"):
		if len(args) < 3 {
			return configReq{}, replyError("ERR wrong number of arguments for 'config|get' command")
		}
		return configReq{args: args[2:]}, nil
	case is(args[1], "SET"):
		if len(args) < 4 {
			return configReq{}, replyError("ERR wrong number of arguments for 'config|set' command")
		}
		if len(args)%2 != 0 {
			return configReq{}, errSyntax
		}
		r := configReq{set: true, args: args[2:]}
		seen := map[string]bool{}
		for i := 0; i < len(r.args); i += 2 {
			name := strings.ToLower(string(r.args[i]))
			mutable := lookupSetting(name) != nil || slices.Contains(queryLimitNames, name)
			switch {
			case !mutable && !slices.Contains(fixedConfigNames, name):
				return r, replyError(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%.128s'", r.args[i]))
			case seen[name]:
				return r, configSetError(name, "duplicate parameter")
			case !mutable:
				return r, configSetError(name, "can't set immutable config")
			}
			seen[name] = true
		}
		return r, nil
	}
	return configReq{}, unknownSubcommand(args[1], "CONFIG")
}

// configSetError is Redis's reply to a CONFIG SET it refuses.
func configSetError(name, why string) replyError {
	return replyError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, why))
}

// fixedConfigNames are the parameters CONFIG GET shows and CONFIG SET
// refuses to change.
var fixedConfigNames = []string{"bind", "port", "dir", "appendonly", "appendfsync", "save", "maxmemory",
	"maxmemory-policy", "maxclients", "timeout", "protected-mode", "databases"}

func (r configReq) run(c *call) {
	if r.set {
		r.runSet(c)
		return
	}
	s := c.s
	save := ""
	if s.cfg.SaveInterval > 0 {
		save = fmt.Sprintf("%d 1", int64(s.cfg.SaveInterval.Seconds()))
	}
	host, port := "", ""
	if addr := s.Addr(); addr != nil {
		host, port, _ = net.SplitHostPort(addr.String())
	}
	params := [][2]string{
		{"bind", host},
		{"port", port},
		{"dir", s.cfg.Dir},
		{"appendonly", yesNo(s.aof != nil)},
		{"appendfsync", s.cfg.Sync.String()},
		{"save", save},
		{"maxmemory", strconv.FormatInt(s.cfg.MaxMemory, 10)},
		{"maxmemory-policy", "noeviction"},
		{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
		{"timeout", strconv.FormatInt(int64(s.cfg.IdleTimeout.Seconds()), 10)},
		{"protected-mode", yesNo(s.cfg.ProtectedMode)},
		{"databases", "1"},
	}
	lim := s.clientBufs.limits.Load()
	for _, name := range queryLimitNames {
		params = append(params, [2]string{name, strconv.Itoa(*queryLimit(lim, name))})
	}
	fs := s.filters.Load()
	for _, name := range FilterSettingNames() {
		v, _ := fs.Get(name)
		params = append(params, [2]string{name, v})
	}
	var out [][2]string
	for _, p := range params {
		for _, pat := range r.args {
			if globMatch([]byte(strings.ToLower(string(pat))), []byte(p[0])) {
				out = append(out, p)
				break
			}
		}
	}
	c.w.Map(len(out))
	for _, p := range out {
		c.w.BulkString(p[0])
		c.w.BulkString(p[1])
	}
}

// runSet applies the settings of a CONFIG SET all at once, or none of
// them: CONFIG SETs run one at a time, and a command sees the settings
// before one or after it.
func (r configReq) runSet(c *call) {
	s := c.s
	s.configMu.Lock()
	defer s.configMu.Unlock()
	filters, limits := *s.filters.Load(), *s.clientBufs.limits.Load()
	for i := 0; i < len(r.args); i += 2 {
		name, value := strings.ToLower(string(r.args[i])), string(r.args[i+1])
		var err error
		if queryLimit(&limits, name) != nil {
			err = setQueryLimit(&limits, name, value)
		} else {
			err = filters.Set(name, value)
		}
		if err != nil {
			c.fail(configSetError(name, err.Error()))
			return
		}
	}
	s.filters.Store(&filters)
	s.clientBufs.limits.Store(&limits)
	c.w.OK()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// SAVE, BGSAVE [SCHEDULE], BGREWRITEAOF

type saveReq struct {
	background bool
	aof        bool
}

func parseSave(args [][]byte) (saveReq, error) {
	r := saveReq{background: !is(args[0], "SAVE"), aof: is(args[0], "BGREWRITEAOF")}
	if len(args) > 2 || len(args) == 2 && !is(args[1], "SCHEDULE") {
		return r, errSyntax
	}
	return r, nil
}

func (r saveReq) run(c *call) {
	s := c.s
	if s.cfg.Dir == "" {
		c.fail(replyError("ERR persistence is off: the server has no data directory"))
		return
	}
	if !r.background {
		if s.save.running.Load() {
			c.fail(errSaveRunning)
			return
		}
		if err := s.snapshot(); err != nil {
			c.fail(replyError("ERR " + err.Error()))
			return
		}
		c.w.OK()
		return
	}
	if !s.bgSnapshot() {
		if r.aof {
			c.fail(replyError("ERR Background append only file rewriting already in progress"))
			return
		}
		c.fail(errSaveRunning)
		return
	}
	if r.aof {
		c.w.Simple("Background append only file rewriting started")
		return
	}
	c.w.Simple("Background saving started")
}

// LASTSAVE

type lastSaveReq struct{}

func parseLastSave([][]byte) (lastSaveReq, error) { return lastSaveReq{}, nil }

func (lastSaveReq) run(c *call) { c.w.Int(c.s.save.last.Load()) }

// SHUTDOWN [NOSAVE | SAVE]: the server stops as Shutdown does; the
// connection closes without a reply, as in Redis.

type shutdownReq struct{ save, nosave bool }

func parseShutdown(args [][]byte) (shutdownReq, error) {
	var r shutdownReq
	for _, a := range args[1:] {
		switch {
		case is(a, "SAVE"):
			r.save = true
		case is(a, "NOSAVE"):
			r.nosave = true
		case is(a, "NOW"), is(a, "FORCE"):
		default:
			return r, errSyntax
		}
	}
	if r.save && r.nosave {
		return r, errSyntax
	}
	return r, nil
}

func (r shutdownReq) run(c *call) {
	if c.cl == nil {
		return
	}
	s := c.s
	save := (s.cfg.SaveOnShutdown || r.save) && !r.nosave && s.cfg.Dir != ""
	c.cl.quit = true
	go func() {
		if err := s.stop(context.Background(), save); err != nil {
			s.logf("shutdown: %v", err)
		}
	}()
}
