package kafkadedup

import "errors"

// Errors of the package, for errors.Is. Errors of a full filter wrap
// cuckoo.ErrFull; errors of the cluster keep franz-go's (kerr) errors in
// their chain.
var (
	// ErrInvalidParameter is wrapped by the errors of New and the
	// constructors of keys and times for an option out of range.
	ErrInvalidParameter = errors.New("kafkadedup: invalid parameter")
	// ErrUnreachable is wrapped by Run's error when no broker answered
	// within the timeout.
	ErrUnreachable = errors.New("kafkadedup: no broker reachable")
	// ErrNoTopic is wrapped by Run's error when an input or the output
	// topic does not exist.
	ErrNoTopic = errors.New("kafkadedup: no such topic")
	// ErrUnreadable is wrapped by the error of a record whose key or time
	// cannot be read (see WithPassUnreadable).
	ErrUnreadable = errors.New("kafkadedup: unreadable record")
	// ErrState is wrapped by Run's error when the state of a partition
	// cannot be restored: the state topic cannot be read, a snapshot or
	// pointer that the committed offsets name is damaged or of a version
	// this build does not read, or the consumer's position is behind the
	// group's committed offset (records a committed transaction wrote).
	ErrState = errors.New("kafkadedup: state")
)
