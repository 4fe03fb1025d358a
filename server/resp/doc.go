// Package resp reads and writes the Redis serialization protocol (RESP2 and
// RESP3) for the cuckoo server: a command [Reader] with limits, a reply
// [Writer] that shapes replies for the protocol a client negotiated, and
// pure append-style encoders. It imports neither net nor the server: it
// works on any io.Reader and io.Writer.
//
// # Requests
//
// A client sends a command as an array of bulk strings, or as one inline
// line of words (what telnet users type):
//
//	*3\r\n$6\r\nCF.ADD\r\n$4\r\nseen\r\n$12\r\nhttps://a.c/\r\n
//	CF.ADD seen "https://a.c/"\r\n
//
// The Reader enforces [Limits] on every length before it reads the data
// the length announces: a 1 GB bulk header is refused as soon as its line
// arrives, and a client can never make the Reader hold more than one
// command of [Limits.MaxCommand] bytes. A malformed or oversized request is
// a [*ProtocolError]: the reply text Redis sends for it, after which the
// connection must be closed, since the stream is out of step. The Reader's
// buffer grows with the data that arrives and shrinks back after a big
// command; a server that counts its clients' buffers, or takes the big
// ones from elsewhere than the Go heap, gives it a [Memory].
//
// # Replies
//
// The Writer buffers replies and sends them with one write per Flush, so a
// pipeline of commands costs one system call. Its error is sticky: after a
// failed write, or once the buffered replies exceed the output limit, every
// later call is a no-op and Flush returns the same error. Replies whose
// type exists only in RESP3 (maps, sets, booleans, doubles, verbatim text,
// the null) are written in their RESP2 form until [Writer.SetProtocol]
// selects version 3, as a Redis server does after HELLO 3.
package resp
