package kafkadedup

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// An Option configures a Processor.
type Option func(*config) error

// config is what the options set; New fills in the defaults.
type config struct {
	client     []kgo.Opt
	stateTopic string
	instance   string

	window   time.Duration // 0: no window, dedup forever
	epoch    int64         // the window's epoch in ns, as a cuckoo.Window of it counts them
	capacity uint64        // keys a window per partition; without a window, a fixed filter's capacity (0: growing)
	fpr      float64
	seed     uint64
	seedSet  bool

	key            KeyFunc  // nil: the record's key
	time           TimeFunc // nil: the record's timestamp
	passUnreadable bool

	snapshotEvery    int64
	snapshotInterval time.Duration
	fetchBytes       int32
	idle             time.Duration // 0: run until the context ends
	timeout          time.Duration // bound on reaching the cluster and on each step that waits for it
	logf             func(format string, args ...any)

	// testHookInTxn, set by the tests only, runs inside each transaction
	// after its records were produced and before it ends.
	testHookInTxn func()
	// testHookJudged, set by the tests only, sees each batch judged (or
	// replayed): its records, and whether each is kept.
	testHookJudged func(recs []*kgo.Record, keep []bool)
	// testHookListing, set by the tests only, runs before a restore asks
	// for a partition's start offset (a replay) or the state topic's end
	// offsets (a snapshot's read); testHookAskAgain after a request to
	// the cluster failed and before it is asked again.
	testHookListing  func(what string)
	testHookAskAgain func(what string, err error)
}

// Defaults.
const (
	// DefaultFalsePositiveRate is the rate of new records dropped wrongly
	// that a Processor's filters are sized for when no rate is given: the
	// CLI's default.
	DefaultFalsePositiveRate = 1e-4
	// DefaultWindowCapacity is the distinct keys one window of one
	// partition holds when WithCapacity is not given.
	DefaultWindowCapacity = 1 << 20
	// DefaultSnapshotEvery is the most records of a partition a Processor
	// judges between two snapshots of its filter: what a restart replays
	// at most.
	DefaultSnapshotEvery = 1_000_000
	// DefaultSnapshotInterval is the longest a partition that receives
	// records goes without a snapshot.
	DefaultSnapshotInterval = 5 * time.Minute
	// DefaultTimeout bounds each wait for the cluster that has an end: the
	// first contact, the checks of the topics, a restore.
	DefaultTimeout = 30 * time.Second
	// DefaultTransactionTimeout is the transaction timeout a Processor asks
	// for (Kafka's default, 60 s, is longer than a transaction of one poll
	// needs; a shorter one lets the cluster abort a dead instance's
	// transaction sooner).
	DefaultTransactionTimeout = 20 * time.Second
	// DefaultSessionTimeout is the group session timeout a Processor asks
	// for: how long the group waits for a silent member before moving its
	// partitions.
	DefaultSessionTimeout = 10 * time.Second
	// DefaultFetchMaxWait is the longest a Processor's fetch waits at the
	// broker when there is nothing to read (Kafka's Java consumer waits as
	// long; franz-go's own default is 5 s). A member gives partitions up
	// in a rebalance only once its fetch in flight has returned, so this
	// bounds what a rebalance waits for it.
	DefaultFetchMaxWait = 500 * time.Millisecond
	// DefaultFetchBytes is the most bytes of input a Processor fetches at
	// once when WithFetchBytes is not given.
	DefaultFetchBytes = 1 << 20
)

// minPartitionFetchBytes is the least a Processor asks of one partition in
// a fetch: a share of the fetch bytes smaller than a producer's batch would
// leave partitions out of fetches (a broker sends a batch larger than a
// partition's share only as a fetch's first).
const minPartitionFetchBytes = 64 << 10

// WithClient passes options to the franz-go clients the Processor makes:
// the seed brokers (kgo.SeedBrokers, required), TLS (kgo.DialTLSConfig),
// SASL (kgo.SASL), a logger, timeouts, batch sizes. The Processor then sets
// what exactly-once needs, over any conflicting option given here: the
// consumer group and its topics, a transactional ID, read_committed
// fetches, stable offset fetches, control records kept (so that committed
// offsets pass transaction markers), its own rebalance callbacks, and the
// partitioner (Kafka's default for the output, the chosen partition for
// the state topic), and the fetch sizes (see WithFetchBytes).
// kgo.TransactionTimeout (default
// DefaultTransactionTimeout), kgo.SessionTimeout (DefaultSessionTimeout),
// kgo.FetchMaxWait (DefaultFetchMaxWait) and kgo.ConsumeResetOffset (the
// earliest offset) may be overridden here.
func WithClient(opts ...kgo.Opt) Option {
	return func(c *config) error {
		c.client = append(c.client, opts...)
		return nil
	}
}

// WithWindow makes the rule "drop a record whose key was seen within d
// before it": each partition's filter is a cuckoo.Window of d. Without it a
// key seen once in a partition is dropped for good.
func WithWindow(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: window %v is not positive", ErrInvalidParameter, d)
		}
		c.window = d
		return nil
	}
}

// WithCapacity sizes each partition's filter: with a window, the most
// distinct keys one window of one partition holds (default
// DefaultWindowCapacity); without, a filter of fixed capacity instead of a
// growing one. A filter that is full stops the Processor with an error
// wrapping cuckoo.ErrFull.
func WithCapacity(n uint64) Option {
	return func(c *config) error {
		if n == 0 {
			return fmt.Errorf("%w: capacity 0", ErrInvalidParameter)
		}
		c.capacity = n
		return nil
	}
}

// WithFalsePositiveRate sets the filters' rate: the probability that a
// record whose key is new is dropped as seen (default
// DefaultFalsePositiveRate).
func WithFalsePositiveRate(p float64) Option {
	return func(c *config) error {
		if !(p > 0 && p < 1) {
			return fmt.Errorf("%w: false-positive rate %v outside (0, 1)", ErrInvalidParameter, p)
		}
		c.fpr = p
		return nil
	}
}

// WithSeed sets the hash seed of the filters a Processor creates (default
// random). A filter restored from a snapshot keeps the seed it was made
// with.
func WithSeed(seed uint64) Option {
	return func(c *config) error {
		c.seed, c.seedSet = seed, true
		return nil
	}
}

// WithKey sets the dedup key of a record (default: the record's key; see
// KeyFields and KeyJSON).
func WithKey(key KeyFunc) Option {
	return func(c *config) error {
		if key == nil {
			return fmt.Errorf("%w: nil KeyFunc", ErrInvalidParameter)
		}
		c.key = key
		return nil
	}
}

// WithTime sets a record's time for the window (default: its Kafka
// timestamp; see TimeFields and TimeJSON). It is read only with a window.
func WithTime(t TimeFunc) Option {
	return func(c *config) error {
		if t == nil {
			return fmt.Errorf("%w: nil TimeFunc", ErrInvalidParameter)
		}
		c.time = t
		return nil
	}
}

// WithPassUnreadable writes a record whose key or time cannot be read
// (a missing field, a value that is not JSON, a record without a key) to
// the output without judging it, counting it in Stats.Unreadable, where
// by default it stops the Processor with an error wrapping ErrUnreadable
// (the record and those after it stay unprocessed).
func WithPassUnreadable() Option {
	return func(c *config) error {
		c.passUnreadable = true
		return nil
	}
}

// WithStateTopic names the compacted topic the filters' snapshots go to
// (default: the group's name followed by "-cuckoo-state"). The Processor
// creates it when missing, compacted, with one partition per input
// partition.
func WithStateTopic(topic string) Option {
	return func(c *config) error {
		if topic == "" {
			return fmt.Errorf("%w: empty state topic", ErrInvalidParameter)
		}
		c.stateTopic = topic
		return nil
	}
}

// WithInstanceID gives the Processor a name that stays the same when it
// restarts (a host or pod name): it becomes its transactional ID and its
// static group membership, so that a restart fences the transaction the
// previous run left open at once, and takes its partitions back without a
// rebalance. Two Processors running at once must not share it. Without
// it, each run takes a random transactional ID, and a run after a crash
// waits for the dead run's transaction to time out.
func WithInstanceID(id string) Option {
	return func(c *config) error {
		if id == "" {
			return fmt.Errorf("%w: empty instance ID", ErrInvalidParameter)
		}
		c.instance = id
		return nil
	}
}

// WithSnapshotEvery sets the most records of a partition judged between
// two snapshots of its filter (default DefaultSnapshotEvery), and so the
// most records a restart of the partition replays; and the longest a
// partition that receives records goes without one (default
// DefaultSnapshotInterval).
func WithSnapshotEvery(records int64, interval time.Duration) Option {
	return func(c *config) error {
		if records < 1 || interval <= 0 {
			return fmt.Errorf("%w: snapshot every %d records or %v", ErrInvalidParameter, records, interval)
		}
		c.snapshotEvery, c.snapshotInterval = records, interval
		return nil
	}
}

// WithFetchBytes bounds the input a Processor fetches at once, in bytes
// as the records are stored (compressed, if they are), and so its memory
// beyond the filters: each poll's records are one transaction's, and
// franz-go holds them decoded, several times their stored size when they
// are small or compress well, while it fetches the next poll's. The bound
// is kgo.FetchMaxBytes of every fetch, and it is split evenly among the
// partitions the Processor owns (kgo.FetchMaxPartitionBytes, each at
// least 64 KiB), so that the fetches of all brokers together stay within
// it too. Larger fetches make fewer, larger transactions. The default is
// DefaultFetchBytes; n must be between 1 KiB and 64 MiB. A broker sends a
// record batch larger than the bound whole.
func WithFetchBytes(n int) Option {
	return func(c *config) error {
		if n < 1<<10 || n > 64<<20 {
			return fmt.Errorf("%w: fetch bytes %d outside [1 KiB, 64 MiB]", ErrInvalidParameter, n)
		}
		c.fetchBytes = int32(n)
		return nil
	}
}

// WithExitWhenIdle makes Run return nil once the group has caught up (its
// committed offsets reached the last stable offset of every partition of
// the input topics: every member's work is done) and no record arrived
// for d.
func WithExitWhenIdle(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: idle time %v is not positive", ErrInvalidParameter, d)
		}
		c.idle = d
		return nil
	}
}

// WithTimeout bounds the waits for the cluster that have an end: the
// first contact and the checks of the topics, the reading of a snapshot
// and a replay, the end of a transaction (default DefaultTimeout). A wait
// that exceeds it stops Run with an error.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: timeout %v is not positive", ErrInvalidParameter, d)
		}
		c.timeout = d
		return nil
	}
}

// WithLogf receives the Processor's notes: restores, snapshots that could
// not be read, partitions of unequal count, records in another partition
// than their key's. Without it they are dropped.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(c *config) error {
		c.logf = logf
		return nil
	}
}
