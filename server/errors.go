package server

// Every error a client can receive is written here, in one place, with the
// exact text Redis or RedisBloom 8 sends for the same condition (the tests
// pin each one). A reply error's first word is its code: ERR,
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

// Replies shared with RedisBloom 8 (Redis 8's built-in probabilistic
// commands). Where RedisBloom's text names a bound this server does not
// share (a capacity of 2^30), the functions below word it the same way
// with this server's bound.
const (
	errNotFound        replyError = "ERR not found"
	errItemExists      replyError = "ERR item exists"
	errUnknownArgument replyError = "Unknown argument received"
	errNoMemoryFilter  replyError = "ERR Insufficient memory to create filter"

	errCFBadCapacity     replyError = "Bad capacity"
	errCFParseMaxIter    replyError = "Couldn't parse MAXITERATIONS"
	errCFMaxIterRange    replyError = "MAXITERATIONS: value must be in the range [1, 65535]"
	errCFParseBucket     replyError = "Couldn't parse BUCKETSIZE"
	errCFBucketRange     replyError = "BUCKETSIZE: value must be in the range [1, 255]"
	errCFParseExpansion  replyError = "Couldn't parse EXPANSION"
	errCFExpansionRange  replyError = "EXPANSION: value must be in the range [0, 32768]"
	errCFCreate          replyError = "ERR Could not create filter"
	errCFFull            replyError = "Filter is full"
	errCFMaxExpansions   replyError = "Maximum expansions reached"
	errCFDelNotFound     replyError = "Not found"
	errCFInvalidPosition replyError = "Invalid position"
	errCFInvalidHeader   replyError = "Invalid header"
	errCFLoadChunk       replyError = "Couldn't load chunk!"

	errBFBadErrorRate     replyError = "ERR bad error rate"
	errBFErrorRateRange   replyError = "ERR error rate must be in the range (0.000000, 1.000000)"
	errBFBadCapacity      replyError = "ERR bad capacity"
	errBFNoExpansion      replyError = "ERR no expansion"
	errBFNonScalingExpand replyError = "Nonscaling filters cannot expand"
	errBFBadExpansion     replyError = "ERR bad expansion"
	errBFExpansionRange   replyError = "ERR expansion must be in the range [0, 32768]"
	errBFCreate           replyError = "ERR could not create filter"
	errBloomFull          replyError = "ERR non scaling filter is full"
	errBFInsertErrorRate  replyError = "Bad error rate"
	errBFInsertExpansion  replyError = "Bad expansion"
	errBFInsertCapacity   replyError = "Bad capacity"
	errBFScanDumpIter     replyError = "Second argument must be numeric"
	errBFLoadChunkIter    replyError = "ERR Second argument must be numeric"
	errBFBadData          replyError = "ERR received bad data"
	errBFBadOffset        replyError = "ERR invalid offset - no link found"
	errBFInfoField        replyError = "Invalid information value"
)

// cfCapacityRange is CF.RESERVE's reply to a capacity outside [2b, most],
// b the bucket size, most the largest capacity of the filter's shape.
func cfCapacityRange(most uint64) replyError {
	return replyError(fmt.Sprintf("Capacity must be in the range [2 * BUCKETSIZE, %d]", most))
}

// cfInsertCapacityRange is CF.INSERT's reply to a CAPACITY outside
// [2 · cf-bucket-size, most].
func cfInsertCapacityRange(most uint64) replyError {
	return replyError(fmt.Sprintf("Capacity must be in the range [cf-bucket-size * 2, %d]", most))
}

// bfCapacityRange is BF.RESERVE's reply to a capacity outside [1, most].
func bfCapacityRange(most uint64) replyError {
	return replyError(fmt.Sprintf("ERR capacity must be in the range [1, %d]", most))
}

// Replies for this server's own options and limits, where neither Redis
// nor RedisBloom has one.
const (
	errCFParseFPR         replyError = "Couldn't parse FPR"
	errCFFPRRange         replyError = "FPR: value must be in (0, 1), and at least the rate of 32-bit fingerprints"
	errCFParseFingerprint replyError = "Couldn't parse FINGERPRINT"
	errCFFingerprintRange replyError = "FINGERPRINT: value must be in the range [4, 32]"
	errCFFPRAndFP         replyError = "FPR and FINGERPRINT cannot be combined"
	errCFOneSlotBits      replyError = "FINGERPRINT: 1-slot buckets need at least 16 bits"
	errCFParseSeed        replyError = "Couldn't parse SEED"
	errBFErrorRateMin     replyError = "ERR error rate must be at least 1e-15"
	errLoadTooLarge       replyError = "ERR dump larger than the server accepts"
	errCFNewerPlan        replyError = "ERR PLAN: a plan version newer than this server's (the log was written by a newer server)"
	errDumpGone           replyError = "ERR no dump of this key in progress at this iterator (it ended, the key was deleted or overwritten, the server restarted, or its copy was dropped: under maxmemory, or unused for 5 minutes): start again from iterator 0"
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

// errSnapshotMisconf is the reply to writes, without the append-only
// log, once a snapshot has failed and until one succeeds: the snapshots
// are the only copy of the data (Redis's stop-writes-on-bgsave-error).
var errSnapshotMisconf = replyError("MISCONF the last snapshot failed, and without the append-only log (--appendonly no) the snapshots are the only copy of the data: writes are refused until one succeeds (SAVE, BGSAVE); see the server's log")

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
