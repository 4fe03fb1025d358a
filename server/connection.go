package server

// The connection commands, Redis's "connection" group: what redis-cli,
// redis-benchmark and the client libraries send around the data commands
// to open, check and describe a connection (PING, ECHO, HELLO, AUTH,
// SELECT, QUIT, CLIENT). A client's connection itself is served by
// client.go.

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"
	"time"
)

var connectionCommands = []*command{
	{name: "ping", arity: -1, flags: flagFast, group: "connection", summary: "Returns PONG, or the message", exec: handle(parsePing)},
	{name: "echo", arity: 2, flags: flagFast, group: "connection", summary: "Returns the message", exec: handle(parseEcho)},
	{name: "hello", arity: -1, flags: flagNoAuth | flagFast, group: "connection",
		summary: "Handshakes: protocol version, authentication, client name", exec: handle(parseHello)},
	{name: "auth", arity: -2, flags: flagNoAuth | flagFast, group: "connection", summary: "Authenticates the connection", exec: handle(parseAuth)},
	{name: "select", arity: 2, flags: flagFast, group: "connection", summary: "Selects database 0, the only one", exec: handle(parseSelect)},
	{name: "quit", arity: -1, flags: flagNoAuth | flagFast, group: "connection", summary: "Closes the connection", exec: handle(parseQuit)},
	{name: "client", arity: -2, group: "connection", summary: "Names and describes connections", exec: handle(parseClient)},
}

// PING [message]

type pingReq struct{ msg []byte }

func parsePing(args [][]byte) (pingReq, error) {
	switch len(args) {
	case 1:
		return pingReq{}, nil
	case 2:
		return pingReq{args[1]}, nil
	}
	return pingReq{}, errArity
}

func (r pingReq) run(c *call) {
	if r.msg == nil {
		c.w.Simple("PONG")
		return
	}
	c.w.Bulk(r.msg)
}

// ECHO message

type echoReq struct{ msg []byte }

func parseEcho(args [][]byte) (echoReq, error) { return echoReq{args[1]}, nil }

func (r echoReq) run(c *call) { c.w.Bulk(r.msg) }

// passwordOK compares in constant time (the digests hide the length).
func (s *Server) passwordOK(user, pass []byte) bool {
	want := sha256.Sum256([]byte(s.cfg.Password))
	got := sha256.Sum256(pass)
	eq := subtle.ConstantTimeCompare(want[:], got[:]) == 1
	return eq && (user == nil || string(user) == "default")
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]

type helloReq struct {
	proto      int // 0: unchanged
	user, pass []byte
	auth       bool
	name       []byte
}

func parseHello(args [][]byte) (helloReq, error) {
	var r helloReq
	if len(args) == 1 {
		return r, nil
	}
	n, ok := parseInt(args[1])
	if !ok {
		return r, replyError("ERR Protocol version is not an integer or out of range")
	}
	if n < 2 || n > 3 {
		return r, errNoProto
	}
	r.proto = int(n)
	for i := 2; i < len(args); i++ {
		switch {
		case is(args[i], "AUTH") && i+2 < len(args):
			r.auth, r.user, r.pass = true, args[i+1], args[i+2]
			i += 2
		case is(args[i], "SETNAME") && i+1 < len(args):
			r.name = args[i+1]
			if !validClientName(r.name) {
				return r, errClientName
			}
			i++
		default:
			return r, replyError(fmt.Sprintf("ERR Syntax error in HELLO option '%.128s'", args[i]))
		}
	}
	return r, nil
}

func (r helloReq) run(c *call) {
	cl := c.cl
	if cl == nil {
		return
	}
	if r.auth {
		if !c.s.passwordOK(r.user, r.pass) && (c.s.cfg.Password != "" || string(r.user) != "default") {
			c.fail(errWrongPass)
			return
		}
		cl.setAuthed()
	} else if !cl.authed {
		c.fail(errHelloNoAuth)
		return
	}
	if r.name != nil {
		cl.mu.Lock()
		cl.mu.name = string(r.name)
		cl.mu.Unlock()
	}
	if r.proto != 0 {
		c.w.SetProtocol(r.proto)
		cl.mu.Lock()
		cl.mu.proto = r.proto
		cl.mu.Unlock()
	}
	c.w.Map(7)
	c.w.BulkString("server")
	c.w.BulkString("cuckoo")
	c.w.BulkString("version")
	c.w.BulkString(redisVersion)
	c.w.BulkString("proto")
	c.w.Int(int64(c.w.Protocol()))
	c.w.BulkString("id")
	c.w.Int(cl.id)
	c.w.BulkString("mode")
	c.w.BulkString("standalone")
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.w.Array(0)
}

// AUTH [username] password

type authReq struct{ user, pass []byte }

func parseAuth(args [][]byte) (authReq, error) {
	switch len(args) {
	case 2:
		return authReq{pass: args[1]}, nil
	case 3:
		return authReq{user: args[1], pass: args[2]}, nil
	}
	return authReq{}, errSyntax
}

func (r authReq) run(c *call) {
	if c.cl == nil {
		return
	}
	if c.s.cfg.Password == "" {
		if r.user == nil {
			c.fail(errNoPassword)
			return
		}
		if string(r.user) != "default" {
			c.fail(errWrongPass)
			return
		}
	} else if !c.s.passwordOK(r.user, r.pass) {
		c.fail(errWrongPass)
		return
	}
	c.cl.setAuthed()
	c.w.OK()
}

// SELECT index: only database 0 exists.

type selectReq struct{ db int64 }

func parseSelect(args [][]byte) (selectReq, error) {
	n, ok := parseInt(args[1])
	if !ok {
		return selectReq{}, errNotInteger
	}
	if n != 0 {
		return selectReq{}, errDBIndex
	}
	return selectReq{n}, nil
}

func (selectReq) run(c *call) { c.w.OK() }

// QUIT

type quitReq struct{}

func parseQuit([][]byte) (quitReq, error) { return quitReq{}, nil }

func (quitReq) run(c *call) {
	c.w.OK()
	if c.cl != nil {
		c.cl.quit = true
	}
}

// CLIENT ID | GETNAME | SETNAME name | SETINFO LIB-NAME|LIB-VER value |
// LIST | INFO | HELP

type clientReq struct {
	sub  string
	args [][]byte
}

func validClientName(name []byte) bool {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func parseClient(args [][]byte) (clientReq, error) {
	for _, sub := range []struct {
		name  string
		nargs int
	}{{"ID", 0}, {"GETNAME", 0}, {"SETNAME", 1}, {"SETINFO", 2}, {"LIST", 0}, {"INFO", 0}, {"HELP", 0}} {
		if !is(args[1], sub.name) {
			continue
		}
		if len(args)-2 != sub.nargs {
			return clientReq{}, replyError(fmt.Sprintf("ERR wrong number of arguments for 'client|%s' command", strings.ToLower(sub.name)))
		}
		r := clientReq{sub: sub.name, args: args[2:]}
		switch sub.name {
		case "SETNAME":
			if !validClientName(args[2]) {
				return r, errClientName
			}
		case "SETINFO":
			if !is(args[2], "LIB-NAME") && !is(args[2], "LIB-VER") {
				return r, replyError(fmt.Sprintf("ERR Unrecognized option '%.128s'", args[2]))
			}
			if !validClientName(args[3]) {
				return r, replyError(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", strings.ToLower(string(args[2]))))
			}
		}
		return r, nil
	}
	return clientReq{}, unknownSubcommand(args[1], "CLIENT")
}

func (r clientReq) run(c *call) {
	cl := c.cl
	if cl == nil {
		return
	}
	switch r.sub {
	case "ID":
		c.w.Int(cl.id)
	case "GETNAME":
		cl.mu.Lock()
		name := cl.mu.name
		cl.mu.Unlock()
		if name == "" {
			c.w.Null()
			return
		}
		c.w.BulkString(name)
	case "SETNAME":
		cl.mu.Lock()
		cl.mu.name = string(r.args[0])
		cl.mu.Unlock()
		c.w.OK()
	case "SETINFO":
		cl.mu.Lock()
		if is(r.args[0], "LIB-NAME") {
			cl.mu.libName = string(r.args[1])
		} else {
			cl.mu.libVer = string(r.args[1])
		}
		cl.mu.Unlock()
		c.w.OK()
	case "INFO":
		c.w.Verbatim(cl.describe() + "\n")
	case "LIST":
		c.s.mu.Lock()
		clients := make([]*client, 0, len(c.s.mu.clients))
		for other := range c.s.mu.clients {
			clients = append(clients, other)
		}
		c.s.mu.Unlock()
		slices.SortFunc(clients, func(a, b *client) int { return int(a.id - b.id) })
		var b strings.Builder
		for _, other := range clients {
			b.WriteString(other.describe())
			b.WriteByte('\n')
		}
		c.w.Verbatim(b.String())
	case "HELP":
		lines := []string{
			"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GETNAME", "    Return the name of the current connection.",
			"ID", "    Return the ID of the current connection.",
			"INFO", "    Return information about the current client connection.",
			"LIST", "    Return information about client connections.",
			"SETINFO <option> <value>", "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
			"SETNAME <name>", "    Assign the name <name> to the current connection.",
		}
		c.w.Array(len(lines))
		for _, l := range lines {
			c.w.Simple(l)
		}
	}
}

// describe returns the client's line in CLIENT LIST.
func (cl *client) describe() string {
	cl.mu.Lock()
	name, lib, ver, proto := cl.mu.name, cl.mu.libName, cl.mu.libVer, max(cl.mu.proto, 2)
	cl.mu.Unlock()
	now := time.Now()
	idle := now.Sub(time.Unix(0, cl.lastCmd.Load()))
	return fmt.Sprintf("id=%d addr=%s name=%s age=%d idle=%d db=0 resp=%d lib-name=%s lib-ver=%s",
		cl.id, cl.addr, name, int64(now.Sub(cl.created).Seconds()), int64(idle.Seconds()), proto, lib, ver)
}
