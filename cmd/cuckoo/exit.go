package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// Exit statuses. They are part of the command's interface: scripts test
// them, so they never change meaning.
const (
	exitOK          = 0   // success
	exitAbsent      = 1   // a key is absent: query --key, delete, store get, store has, store del
	exitUsage       = 2   // bad command line: unknown command or flag, bad value, missing argument
	exitData        = 3   // a file, store, Redis server or port is missing, unreadable, damaged, busy, or cannot be written
	exitFull        = 4   // a fixed-capacity filter (dedup --redis's in Redis, dedup --kafka's of a partition) is full
	exitInterrupted = 130 // interrupted by Ctrl-C (SIGINT); 143 for SIGTERM; serve stops gracefully and exits 0
)

// signalStatus is the exit status of a command a signal stopped (serve's
// second signal): 130 for SIGINT, 128 + 15 for SIGTERM, as the shell
// reports a process the signal killed.
func signalStatus(s os.Signal) int {
	if s == syscall.SIGTERM {
		return 128 + int(syscall.SIGTERM)
	}
	return exitInterrupted
}

// exitBrokenPipe is the status of a command whose standard output was
// closed by its reader (| head): 128 + SIGPIPE, as the shell reports a
// process the signal killed. The command stops quietly, as other Unix
// tools do, after cleaning up what it would clean up on an interrupt.
const exitBrokenPipe = 128 + int(syscall.SIGPIPE)

const exitStatusHelp = `Exit status:
  0    success
  1    a key is absent: query --key, delete, store get, store has, store del
  2    usage error: unknown command or flag, bad flag value, missing argument
  3    data or I/O error: missing or unreadable file (symbolic links in a
       loop, a closed standard input), damaged filter file or store, store
       open in another process, write failure, Redis or Kafka unreachable
       or refusing, a record dedup --kafka cannot read, serve's data
       directory busy or damaged or its port taken; a file being written
       is left as it was
  4    a fixed-capacity filter is full (dedup --redis: the filter in
       Redis; dedup --kafka: a partition's filter); a file being written
       is left as it was
  130  interrupted (Ctrl-C; 143: SIGTERM), whatever the run was doing; a
       file being written is left as it was; serve and dedup --kafka
       instead stop gracefully and exit 0; 141, quietly: the reader of the
       output went away (| head), also when Ctrl-C stopped it before
       the interrupt reached cuckoo`

// cliError is an error with its exit status and the remedy to print
// after it: "cuckoo <cmd>: <problem>; <remedy>".
type cliError struct {
	code   int
	msg    string
	remedy string
}

func (e *cliError) Error() string {
	if e.remedy == "" {
		return e.msg
	}
	return e.msg + "; " + e.remedy
}

func usageErr(remedy, format string, args ...any) error {
	return &cliError{code: exitUsage, msg: fmt.Sprintf(format, args...), remedy: remedy}
}

func dataErr(remedy, format string, args ...any) error {
	return &cliError{code: exitData, msg: fmt.Sprintf(format, args...), remedy: remedy}
}

// exitCode is an error that only sets the exit status (query's absent
// keys), with no message.
func exitCode(code int) error { return &cliError{code: code} }

// Remedies shared by several errors.
const (
	remedyRead  = "check that the file is readable"
	remedyWrite = "check the free space and where the output goes"
	// readProcessed follows remedyRead after a read error that stopped
	// a run which had processed the lines before it (readBatches).
	readProcessed = "; the lines before the error were processed"
)

// errHelp asks run to print the command's help and exit 0.
var errHelp = errors.New("help requested")

// outputErr is the error of a failed write to standard output or to the
// file of -o.
func outputErr(err error) error {
	return dataErr(remedyWrite, "writing the output: %v", cause(err))
}

// fileErr turns an error about a file into a one-line message with a
// remedy.
func fileErr(name string, err error, remedy string) error {
	err = cause(err)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dataErr(remedy, "%s: no such file", name)
	case errors.Is(err, fs.ErrPermission):
		return dataErr("check its permissions", "%s: permission denied", name)
	case errors.Is(err, syscall.ELOOP):
		return dataErr("a symbolic link on its path leads back to itself; point it at a file, or remove it",
			"%s: too many levels of symbolic links", name)
	}
	return dataErr(remedyRead, "%s: %v", name, err)
}

// cause returns the system error inside a path error (ENOSPC, EPIPE …),
// for messages that already say which file.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// unwrap shortens an error for a message of the command, which already
// names the file and is prefixed with the command's name: a path error to
// its operation and system error, and the module's errors without their
// packages' prefixes ("store: too large: value of …" reads "too large:
// value of …"), so that a message reads once prefixed.
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	// Trimmed: Redis ends some error texts with a space ("with args
	// beginning with: 'x' "), which the remedy's "; " would follow.
	return errors.New(strings.TrimSpace(withoutPrefixes(err.Error())))
}

// packagePrefixes are the prefixes of the error texts of the module's
// packages (store.ErrTooLarge is "store: too large").
var packagePrefixes = []string{"cuckoo", "bloom", "store", "filestore", "filterfile", "exactdedup", "dedup", "redisfilter", "server", "resp"}

// withoutPrefixes drops from msg the parts, between ": ", that are a
// package's prefix.
func withoutPrefixes(msg string) string {
	parts := strings.Split(msg, ": ")
	kept := parts[:0]
	for _, p := range parts {
		if !slices.Contains(packagePrefixes, p) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ": ")
}
