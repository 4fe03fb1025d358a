package resp

import "errors"

var (
	// ErrProtocol is wrapped by every *ProtocolError: the request stream is
	// malformed or breaks a limit, and is out of step from that point on.
	ErrProtocol = errors.New("resp: protocol error")

	// ErrOutputLimit is the Writer's sticky error once its buffered replies
	// exceed the limit given to NewWriter; the buffered replies are
	// dropped. The connection must be closed, as Redis does with a client
	// past its output buffer limit.
	ErrOutputLimit = errors.New("resp: output buffer limit exceeded")
)

// The errors of a request past Limits.MaxArray or Limits.MaxBulk. They
// read as Redis's errors for malformed lengths, and are distinct values so
// that a server can word them as Redis does for clients not yet
// authenticated.
var (
	ErrArrayTooLong = &ProtocolError{"invalid multibulk length"}
	ErrBulkTooLong  = &ProtocolError{"invalid bulk length"}
)

// ErrQueryBufferLimit is the error of a command larger than
// Limits.MaxCommand, found from its headers before its data is read (or
// of a buffer that would pass the limit). Redis closes the connection of
// a client past its query buffer limit without a reply.
var ErrQueryBufferLimit = &ProtocolError{"command larger than the query buffer limit"}

// ProtocolError is a malformed or oversized request. Reason is the text
// Redis sends after "ERR Protocol error: ", such as "invalid bulk length".
type ProtocolError struct {
	Reason string
}

// Error returns the reason with the package prefix.
func (e *ProtocolError) Error() string { return "resp: protocol error: " + e.Reason }

// Is makes errors.Is(err, ErrProtocol) true for every *ProtocolError.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// The reasons a Reader gives, in Redis's words where Redis has them.
var (
	errInvalidMultibulk = &ProtocolError{"invalid multibulk length"}
	errInvalidBulk      = &ProtocolError{"invalid bulk length"}
	errBulkCRLF         = &ProtocolError{"expected CRLF after bulk data"}
	errBigInline        = &ProtocolError{"too big inline request"}
	errBigMultibulk     = &ProtocolError{"too big mbulk count string"}
	errBigBulkCount     = &ProtocolError{"too big bulk count string"}
	errUnbalanced       = &ProtocolError{"unbalanced quotes in request"}
)
