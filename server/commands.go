package server

// Every command is parsed, then run. Its parse function turns the
// arguments into a typed request and does all the validation; its run
// method may assume a valid request, and nothing touches the key space
// until parsing has succeeded. The table below lists each command with
// Redis's arity convention (n: exactly n arguments with the name; -n: at
// least n), its flags and its key positions, which COMMAND reports.

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dedupkit/cuckoo/server/resp"
)

type cmdFlags uint16

const (
	flagWrite    cmdFlags = 1 << iota // changes data: logged, refused when the log has failed
	flagReadonly                      // reads data only
	flagAdmin                         // server administration
	flagDenyOOM                       // may add memory: refused past MaxMemory
	flagNoAuth                        // allowed before AUTH
	flagFast                          // O(1) or O(items)
	flagModule                        // a RedisBloom command (COMMAND lists the flag)
)

// request is a parsed command.
type request interface {
	run(c *call)
}

// command is an entry of the command table.
type command struct {
	name                    string // lower case
	arity                   int
	flags                   cmdFlags
	firstKey, lastKey, step int
	summary                 string // for COMMAND DOCS
	group                   string
	exec                    func(c *call)
	slot                    int // its index in commandSlots
}

// handle builds a command's exec from its parse function.
func handle[R request](parse func(args [][]byte) (R, error)) func(c *call) {
	return func(c *call) {
		r, err := parse(c.args)
		if err != nil {
			c.fail(err)
			return
		}
		r.run(c)
	}
}

// handleSettings is handle for the commands whose parse function takes
// the filter settings in force: the defaults of their options, and the
// bounds some of them check against.
func handleSettings[R request](parse func(args [][]byte, fs *FilterSettings) (R, error)) func(c *call) {
	return func(c *call) {
		r, err := parse(c.args, c.settings())
		if err != nil {
			c.fail(err)
			return
		}
		r.run(c)
	}
}

// replaySettings are the settings a replay runs with. A logged creation
// spells out every parameter of its filter, so the settings make nothing
// during a replay; but a logged command was accepted under the settings of
// its time, which CONFIG SET may have changed since (it is not logged):
// these admit every argument a server accepts (the smallest bucket size,
// the most expansions, and any capacity of CF.INSERT's, whose range
// depends on the bucket size in force when it ran).
var replaySettings = func() FilterSettings {
	fs := DefaultFilterSettings()
	fs.CFBucketSize, fs.CFMaxExpansions = 1, math.MaxInt64
	fs.replay = true
	return fs
}()

// errArity is returned by parse functions for a wrong number of
// arguments; call.fail words it as Redis does.
var errArity = errors.New("wrong number of arguments")

// call is one command being run.
type call struct {
	s      *Server
	cl     *client // nil during recovery
	w      *resp.Writer
	args   [][]byte
	cmd    *command
	replay bool   // replaying the log: nothing is logged
	logOff int64  // the log offset after this command's records
	result result // how the command ended, for the statistics (stats.go)
}

// settings returns the filter settings the command runs with.
func (c *call) settings() *FilterSettings {
	if c.replay {
		return &replaySettings
	}
	return c.s.filters.Load()
}

// fail writes the reply for err. A wrong number of arguments names the
// command as the table does, in lower case, as Redis 8 does for every
// command, RedisBloom's included.
func (c *call) fail(err error) {
	if errors.Is(err, errArity) {
		err = arityError{c.cmd.name}
	}
	text := replyText(err)
	c.w.Error(text)
	if c.replay {
		return
	}
	k := replyErrorKind(text)
	c.s.countError(k)
	if k == errKindWrongType {
		c.result = resultWrongType
	} else if c.result == resultOK {
		c.result = resultError
	}
}

// readExisting returns key's filter of kind k locked for reading, or
// replies "ERR not found" (or WRONGTYPE) and returns nil.
func (c *call) readExisting(key []byte, k kind) *object {
	o, err := c.s.ks.readLock(key, k)
	if err == nil && o == nil {
		err = errNotFound
	}
	if err != nil {
		c.fail(err)
		return nil
	}
	return o
}

// log appends a record of args tagged epoch to the log. The caller holds
// the locks that order it among the key's writes (keyspace.go).
func (c *call) log(epoch uint64, args [][]byte) {
	if c.replay {
		return
	}
	if !c.s.ks.dirty.Load() {
		c.s.ks.dirty.Store(true)
	}
	if c.s.aof != nil {
		c.logOff = c.s.aof.append(epoch, args)
	}
}

// commandSlots lists the commands; a command's slot is its index, by
// which the statistics find it without looking up its name.
var commandSlots = slices.Concat(cfCommands, windowCommands, bfCommands, keyCommands, connectionCommands, serverCommands)

var commandTable = buildTable()

func buildTable() map[string]*command {
	m := make(map[string]*command, len(commandSlots))
	for i, c := range commandSlots {
		if m[c.name] != nil || c.name != strings.ToLower(c.name) {
			panic("server: bad command table entry " + c.name)
		}
		c.slot = i
		m[c.name] = c
	}
	return m
}

// lookupCommand finds a command by name, in any case, without allocating.
func lookupCommand(name []byte) *command {
	var buf [32]byte
	if len(name) > len(buf) {
		return nil
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return commandTable[string(buf[:len(name)])]
}

func (cmd *command) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity
}

// exec runs one command for a client, or for recovery when cl is nil.
func (s *Server) exec(c *call, cl *client, w *resp.Writer, args [][]byte) {
	*c = call{s: s, cl: cl, w: w, args: args, replay: cl == nil}
	cmd := lookupCommand(args[0])
	if cmd == nil {
		c.fail(unknownCommand(args))
		return
	}
	c.cmd = cmd
	if !cmd.arityOK(len(args)) {
		c.fail(errArity)
		return
	}
	if cl != nil {
		if s.cfg.Password != "" && !cl.authed && cmd.flags&flagNoAuth == 0 {
			c.fail(errNoAuth)
			return
		}
		if cmd.flags&flagWrite != 0 && s.aof != nil && s.aof.failed.Load() {
			c.fail(misconf(s.aof.err()))
			return
		}
		if cmd.flags&flagWrite != 0 && s.aof == nil && s.cfg.Dir != "" && !s.save.lastOK.Load() {
			c.fail(errSnapshotMisconf)
			return
		}
		if cmd.flags&flagDenyOOM != 0 && s.overMemory(0) {
			c.fail(errOOM)
			return
		}
	} else {
		s.stats.recovery.records++
	}
	cmd.exec(c)
}

// overMemory reports whether a command adding extra bytes must be refused
// for MaxMemory: whether MaxMemory is set and the memory it counts, the
// filters', the dumps' (dump.go) and the clients' buffers (clientbuf.go),
// with extra more bytes, is past it. When dropping the copies dumps in
// progress are served from would bring it under, it drops them first,
// least recently used first, until it is, and reports false; when
// it would not, it drops none.
func (s *Server) overMemory(extra int64) bool {
	if !s.pastMemory(extra) {
		return false
	}
	if s.pastMemory(extra - s.ks.dumps.bytes.Load()) {
		return true
	}
	s.ks.dropDumps(func() bool { return !s.pastMemory(extra) })
	return s.pastMemory(extra)
}

// pastMemory reports whether MaxMemory is set and the memory it counts,
// with extra more bytes, is past it.
func (s *Server) pastMemory(extra int64) bool {
	return s.cfg.MaxMemory > 0 && s.ks.used.Load()+s.clientBufs.used()+extra > s.cfg.MaxMemory
}

// Argument parsing shared by the commands.

// keyItems is a request on one key and one item or, in a command's multi
// form (CF.MEXISTS, BF.MADD, BF.MEXISTS), one or more items.
type keyItems struct {
	key   []byte
	items [][]byte
	multi bool
}

// parseKeyItems parses "cmd key item", or "cmd key item..." when the
// command is the multi one.
func parseKeyItems(args [][]byte, multiName string) (keyItems, error) {
	multi := is(args[0], multiName)
	if multi && len(args) < 3 || !multi && len(args) != 3 {
		return keyItems{}, errArity
	}
	return keyItems{key: args[1], items: args[2:], multi: multi}, nil
}

// creator makes a new filter object, and the command that logs its
// creation: the parameters of CF.RESERVE or BF.RESERVE.
type creator interface {
	newObject(c *call) (*object, error)
	reserveArgs(key []byte) [][]byte
}

// reserve is the run of CF.RESERVE and BF.RESERVE: it creates key's
// filter, unless the key exists.
func reserve(c *call, key []byte, k kind, p creator) {
	ks := c.s.ks
	switch o := ks.get(key); {
	case o != nil && o.kind != k:
		c.fail(errWrongType)
		return
	case o != nil:
		c.fail(errItemExists)
		return
	}
	fresh, err := p.newObject(c)
	if err != nil {
		c.fail(err)
		return
	}
	o, err := createNew(c, key, fresh, func(epoch uint64) { c.log(epoch, p.reserveArgs(key)) })
	if err != nil {
		c.fail(err)
		return
	}
	ks.unlockWrite(o)
	c.w.OK()
}

// createNew adds fresh as key's object, locked for writing, its creation
// logged by logf (see keyspace.create), or fails with errItemExists (or
// errWrongType) when the key exists meanwhile.
func createNew(c *call, key []byte, fresh *object, logf func(epoch uint64)) (*object, error) {
	o, _, created, err := c.s.ks.create(key, fresh, logf)
	if err != nil {
		return nil, err
	}
	if !created {
		c.s.ks.unlockWrite(o)
		return nil, errItemExists
	}
	return o, nil
}

// createLocked creates a missing key's filter with p for a command that
// adds to it, and returns it locked for writing with the epoch to log the
// command in; the creation is logged (before the command's own record),
// unless another client created the key meanwhile.
func createLocked(c *call, key []byte, p creator) (o *object, epoch uint64, err error) {
	fresh, err := p.newObject(c)
	if err != nil {
		return nil, 0, err
	}
	o, epoch, _, err = c.s.ks.create(key, fresh, func(epoch uint64) { c.log(epoch, p.reserveArgs(key)) })
	if err != nil {
		return nil, 0, err
	}
	return o, epoch, nil
}

// parseInt parses a decimal int64 as Redis does (string2ll): no spaces,
// no '+', no leading zeros and no "-0", so that "0100" is refused as
// RedisBloom refuses it.
func parseInt(b []byte) (int64, bool) {
	if !redisDecimal(b) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// rangedInt parses an integer option in [lo, hi], and returns parseErr
// for one that is not an integer, rangeErr for one out of range.
func rangedInt(b []byte, lo, hi int64, parseErr, rangeErr error) (int64, error) {
	n, ok := parseInt(b)
	switch {
	case !ok:
		return 0, parseErr
	case n < lo || n > hi:
		return 0, rangeErr
	}
	return n, nil
}

// parseUint parses a decimal uint64, written as parseInt takes it.
func parseUint(b []byte) (uint64, bool) {
	if !redisDecimal(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	return n, err == nil
}

// redisDecimal reports whether b is written as Redis writes an integer:
// up to 20 bytes, an optional '-', and digits with no leading zero but
// in "0" itself (strconv takes '+', "0100" and "-0" too).
func redisDecimal(b []byte) bool {
	digits := b
	if len(b) > 0 && b[0] == '-' {
		digits = b[1:]
	}
	switch {
	case len(digits) == 0 || len(b) > 20:
		return false
	case digits[0] == '0':
		return len(b) == 1 // "0", not "-0" nor "0100"
	}
	return digits[0] >= '1' && digits[0] <= '9'
}

// parseFloat parses a finite float64.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 64 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil && f == f && f-f == 0
}

// is reports whether arg equals word (upper case) in any case.
func is(arg []byte, word string) bool {
	if len(arg) != len(word) {
		return false
	}
	for i := range arg {
		ch := arg[i]
		if 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		if ch != word[i] {
			return false
		}
	}
	return true
}

// lowerFirst returns the lower-cased first byte of arg, or 0.
func lowerFirst(arg []byte) byte {
	if len(arg) == 0 {
		return 0
	}
	ch := arg[0]
	if 'A' <= ch && ch <= 'Z' {
		ch += 'a' - 'A'
	}
	return ch
}
