package server

// Every error a client can receive is written here, in one place, with the
// exact text Redis 7 or RedisBloom 2.4 sends for the same condition (the
// tests pin each one). A reply error's first word is its code: ERR,
// WRONGTYPE, NOAUTH, OOM…; RedisBloom sends some errors without a code
// ("Bad capacity"), and so do we where it does.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/server/resp"
)

// Sentinel errors of the package's API.
var (
	// ErrProtectedMode is returned by Serve and ListenAndServe for a
	// listener on an address other than loopback when no password is set
	// and protected mode is on, as Redis refuses such a configuration.
	ErrProtectedMode = errors.New("server: refusing to listen on a non-loopback address without a password (set a password, or turn protected mode off)")

	// ErrClosed is returned by Serve and ListenAndServe after Shutdown or
	// Close.
	ErrClosed = errors.New("server: closed")

	// ErrDirInUse is wrapped by the error New returns when another server
	// holds the data directory's lock.
	ErrDirInUse = errors.New("server: data directory in use by another cuckoo server")

	// ErrDataDir is wrapped by the error New returns when the data
	// directory cannot be used: unreadable, locked by another server, or
	// holding files it refuses to load (a damaged snapshot, or a log
	// damaged before its last record, which Config.Repair cuts).
	ErrDataDir = errors.New("server: data directory")
)

// replyError is an error whose text is sent to the client as it is.
type replyError string

func (e replyError) Error() string { return string(e) }

// Replies shared with Redis.
const (
	errSyntax        replyError = "ERR syntax error"
	errNotInteger    replyError = "ERR value is not an integer or out of range"
	errNoAuth        replyError = "NOAUTH Authentication required."
	errWrongPass     replyError = "WRONGPASS invalid username-password pair or user is disabled."
	errNoPassword    replyError = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errHelloNoAuth   replyError = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errNoProto       replyError = "NOPROTO unsupported protocol version"
	errDBIndex       replyError = "ERR DB index is out of range"
	errNoSuchKey     replyError = "ERR no such key"
	errInvalidCursor replyError = "ERR invalid cursor"
	errWrongType     replyError = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errOOM           replyError = "OOM command not allowed when used memory > 'maxmemory'."
	errMaxClients    replyError = "ERR max number of clients reached"
	errSaveRunning   replyError = "ERR Background save already in progress"
	errClientName    replyError = "ERR Client names cannot contain spaces, newlines or special characters."
)

// Replies shared with RedisBloom 2.4.
const (
	errNotFound        replyError = "ERR not found"
	errItemExists      replyError = "ERR item exists"
	errUnknownArgument replyError = "Unknown argument received"
	errNoMemoryFilter  replyError = "ERR Insufficient memory to create filter"

	errCFBadCapacity     replyError = "Bad capacity"
	errCFCapacityMin     replyError = "Capacity must be at least (BucketSize * 2)"
	errCFParseMaxIter    replyError = "Couldn't parse MAXITERATIONS"
	errCFMaxIterRange    replyError = "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive."
	errCFParseBucket     replyError = "Couldn't parse BUCKETSIZE"
	errCFBucketRange     replyError = "BUCKETSIZE: value must be an integer between 1 and 255, inclusive."
	errCFParseExpansion  replyError = "Couldn't parse EXPANSION"
	errCFExpansionRange  replyError = "EXPANSION: value must be an integer between 0 and 32768, inclusive."
	errCFCreate          replyError = "ERR Could not create filter"
	errCFFull            replyError = "Filter is full"
	errCFDelNotFound     replyError = "Not found"
	errCFInvalidPosition replyError = "Invalid position"
	errCFInvalidHeader   replyError = "Invalid header"
	errCFLoadChunk       replyError = "Couldn't load chunk!"

	errBFBadErrorRate     replyError = "ERR bad error rate"
	errBFErrorRateRange   replyError = "ERR (0 < error rate range < 1) "
	errBFBadCapacity      replyError = "ERR bad capacity"
	errBFCapacityRange    replyError = "ERR (capacity should be larger than 0)"
	errBFNoExpansion      replyError = "ERR no expansion"
	errBFNonScalingExpand replyError = "Nonscaling filters cannot expand"
	errBFBadExpansion     replyError = "ERR bad expansion"
	errBFCreate           replyError = "ERR could not create filter"
	errBloomFull          replyError = "ERR non scaling filter is full"
	errBFInsertErrorRate  replyError = "Bad error rate"
	errBFInsertExpansion  replyError = "Bad expansion"
	errBFInsertCapacity   replyError = "Bad capacity"
	errBFBadArgument      replyError = "Bad argument received"
	errBFScanDumpIter     replyError = "Second argument must be numeric"
	errBFLoadChunkIter    replyError = "ERR Second argument must be numeric"
	errBFBadData          replyError = "ERR received bad data"
	errBFBadOffset        replyError = "ERR invalid offset - no link found"
	errBFInfoField        replyError = "Invalid information value"
)

// Replies for this server's own options and limits, where neither Redis
// nor RedisBloom has one.
const (
	errCFBucketSupported  replyError = "BUCKETSIZE: value must be 2, 4 or 8"
	errCFParseFPR         replyError = "Couldn't parse FPR"
	errCFFPRRange         replyError = "FPR: value must be in (0, 1), and at least the rate of 32-bit fingerprints"
	errCFParseFingerprint replyError = "Couldn't parse FINGERPRINT"
	errCFFingerprintRange replyError = "FINGERPRINT: value must be an integer between 4 and 32, inclusive."
	errCFFPRAndFP         replyError = "FPR and FINGERPRINT cannot be combined"
	errCFParseSeed        replyError = "Couldn't parse SEED"
	errBFErrorRateMin     replyError = "ERR error rate must be at least 1e-15"
	errLoadTooLarge       replyError = "ERR dump larger than the server accepts"
)

// arityError is Redis's wrong-number-of-arguments reply for a command.
type arityError struct{ name string }

func (e arityError) Error() string {
	return "ERR wrong number of arguments for '" + e.name + "' command"
}

// unknownCommand returns Redis's reply to an unknown command: its name
// and the start of its arguments, each quoted and cut to 128 bytes in all.
func unknownCommand(args [][]byte) replyError {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		b.WriteByte('\'')
		b.Write(a[:min(len(a), 128-b.Len())])
		b.WriteString("' ")
	}
	name := args[0][:min(len(args[0]), 128)]
	return replyError("ERR unknown command '" + string(name) + "', with args beginning with: " + b.String())
}

// unknownSubcommand returns Redis's reply to an unknown subcommand.
func unknownSubcommand(sub []byte, cmd string) replyError {
	return replyError(fmt.Sprintf("ERR unknown subcommand '%.128s'. Try %s HELP.", sub, strings.ToUpper(cmd)))
}

// misconf is the reply to writes once the append-only log has failed.
func misconf(err error) replyError {
	return replyError("MISCONF Errors writing to the AOF file: " + err.Error())
}

// protocolReply is the reply to a malformed request, before the
// connection is closed. A client not yet authenticated is told its
// request broke the smaller limits it has, in Redis's words.
func protocolReply(err error, authed bool) string {
	switch {
	case !authed && errors.Is(err, resp.ErrArrayTooLong):
		return "ERR Protocol error: unauthenticated multibulk length"
	case !authed && errors.Is(err, resp.ErrBulkTooLong):
		return "ERR Protocol error: unauthenticated bulk length"
	}
	var pe *resp.ProtocolError
	if errors.As(err, &pe) {
		return "ERR Protocol error: " + pe.Reason
	}
	return "ERR Protocol error: " + err.Error()
}

// replyText maps an error met while running a command to the text the
// client receives.
func replyText(err error) string {
	var re replyError
	var ae arityError
	switch {
	case errors.As(err, &re):
		return string(re)
	case errors.As(err, &ae):
		return ae.Error()
	case errors.Is(err, cuckoo.ErrFull):
		return string(errCFFull)
	}
	return "ERR " + err.Error()
}
