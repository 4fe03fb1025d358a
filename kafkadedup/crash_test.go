package kafkadedup

import (
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/kafkatest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// The tests of this file run the Processor in processes of its own (see
// child_test.go) against a broker in a process of its own, and kill, stop
// and restart them. Each checks the output topic, read committed, against
// the exact models of model_test.go: no record twice, nothing the window
// rule drops, exactly what an uninterrupted filter keeps.

// crashSetup starts a broker process with the topics in and out of parts
// partitions, and returns it with the spec of the children and the
// config they run (for the models).
func crashSetup(t *testing.T, parts int32) (*kafkatest.Process, childSpec, *config) {
	broker := kafkatest.StartProcess(t)
	kafkatest.CreateTopic(t, broker.Addr, "in", parts)
	kafkatest.CreateTopic(t, broker.Addr, "out", parts)
	spec := childSpec{Addr: broker.Addr, Group: "g", In: "in", Out: "out", Instance: "a",
		Window: 2 * time.Hour, Capacity: 4000, SnapshotEvery: 150,
		SessionTimeout: 2 * time.Second, TxnTimeout: 5 * time.Second}
	p, err := New(spec.Group, []string{spec.In}, spec.Out, spec.options(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	return broker, spec, &p.cfg
}

// halfWritten is crashSetup of 4 partitions, with an input of 2000
// records made (and the test's random source), of which the first 1000
// are written.
func halfWritten(t *testing.T) (*kafkatest.Process, childSpec, *config, []inRec, *rand.Rand) {
	broker, spec, c := crashSetup(t, 4)
	rng := testseed.Rand(t)
	recs := genInput(rng, 2000, 4, 500, time.Minute)
	produceInput(t, broker.Addr, "in", recs[:1000])
	return broker, spec, c, recs, rng
}

// produceSlowly writes recs in batches of 40, pause apart, so that
// processors started meanwhile have records to work on; the channel it
// returns is closed after the last batch.
func produceSlowly(t *testing.T, addr string, recs []inRec, pause time.Duration) (written chan struct{}) {
	written = make(chan struct{})
	go func() {
		defer close(written)
		for len(recs) > 0 {
			n := min(40, len(recs))
			produceInput(t, addr, "in", recs[:n])
			recs = recs[n:]
			time.Sleep(pause)
		}
	}()
	return written
}

// finish runs a last child until it has caught up and idled, and checks
// the output.
func finish(t *testing.T, broker *kafkatest.Process, spec childSpec, c *config, recs []inRec) {
	spec.Idle, spec.InTxn = 300*time.Millisecond, 0
	if err := startChild(t, spec).wait(); err != nil {
		t.Fatalf("the last processor: %v", err)
	}
	checkOutput(t, c, recs, kafkatest.ReadCommitted(t, broker.Addr, "out"))
}

func TestKilledProcessorsLeaveExactOutput(t *testing.T) {
	t.Parallel()
	rounds, n := 4, 2400
	if testlong.Enabled() {
		rounds, n = 30, 18000
	}
	broker, spec, c := crashSetup(t, 4)
	rng := testseed.Rand(t)
	recs := genInput(rng, n, 4, 600, time.Minute)
	// Each transaction waits 30 ms before it ends. A round writes its
	// share of the input while a processor runs, and kills the processor
	// in its 1st to 6th transaction, up to 50 ms after it began waiting
	// (so, now and then, while it ends); or, if the processor runs out of
	// records first, once they are written.
	spec.InTxn, spec.Announce = 30*time.Millisecond, true
	share := n / rounds
	for round := range rounds {
		ch := startChild(t, spec)
		written := produceSlowly(t, broker.Addr, recs[round*share:(round+1)*share], 10*time.Millisecond)
		txns := 1 + rng.IntN(6)
		for i := 0; i < txns; i++ {
			if !ch.waitLineUnless(inTxnLine, written) {
				break
			}
		}
		time.Sleep(time.Duration(rng.Int64N(int64(50 * time.Millisecond))))
		ch.kill()
		<-written
		t.Logf("round %d: killed after %d transactions (of %d chosen)", round, ch.txns, txns)
	}
	produceInput(t, broker.Addr, "in", recs[rounds*share:])
	finish(t, broker, spec, c, recs)
}

func TestRebalanceBetweenTwoProcessors(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	broker, spec, c := crashSetup(t, 4)
	rng := testseed.Rand(t)
	recs := genInput(rng, 3000, 4, 600, time.Minute)
	written := produceSlowly(t, broker.Addr, recs, 5*time.Millisecond)
	spec.InTxn = 10 * time.Millisecond
	a := startChild(t, spec)
	a.waitLine(startedLine)
	time.Sleep(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
	spec.Instance = "b"
	b := startChild(t, spec) // joins: the group rebalances
	b.waitLine(startedLine)
	time.Sleep(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
	a.signal(syscall.SIGTERM) // leaves: the group rebalances again
	if err := a.wait(); err != nil {
		t.Fatalf("processor a after SIGTERM: %v", err)
	}
	<-written
	b.signal(syscall.SIGTERM)
	if err := b.wait(); err != nil {
		t.Fatalf("processor b after SIGTERM: %v", err)
	}
	finish(t, broker, spec, c, recs)
}

// A zombie: processor a is stopped (SIGSTOP) inside a transaction whose
// records are written; the group moves its partitions to b, which goes on
// from the committed offsets; then a resumes and tries to commit. Its
// commit must be refused (its generation is over, or its transaction timed
// out and was aborted), so that its records never show.
func TestZombieCommitIsFenced(t *testing.T) {
	t.Parallel()
	broker, spec, c, recs, _ := halfWritten(t)
	zombie := spec
	zombie.InTxn, zombie.Announce = 300*time.Millisecond, true
	a := startChild(t, zombie)
	a.waitLine(inTxnLine)
	a.signal(syscall.SIGSTOP)
	// b takes a's partitions once a's session times out (2 s), and works
	// from the committed offsets; a wakes after b's first transaction.
	spec.Instance, spec.InTxn, spec.Announce = "b", time.Millisecond, true
	b := startChild(t, spec)
	b.waitLine(inTxnLine)
	produceInput(t, broker.Addr, "in", recs[1000:])
	// Resumed, a ends the transaction it was in (SIGTERM asks it to stop
	// after that): its offsets' commit is refused, or its transaction has
	// timed out; either way its records are aborted (the output's check
	// would find them twice otherwise), and it exits, 0 or fenced.
	a.signal(syscall.SIGCONT)
	a.signal(syscall.SIGTERM)
	err := a.wait()
	t.Logf("the zombie, resumed, exited with %v", err)
	b.signal(syscall.SIGTERM)
	if err := b.wait(); err != nil {
		t.Fatalf("processor b after SIGTERM: %v", err)
	}
	finish(t, broker, spec, c, recs)
}

// The broker restarts (stopped, then started from its data on the same
// port) while a processor works; the processor rides it out.
func TestBrokerRestart(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	broker, spec, c, recs, rng := halfWritten(t)
	spec.InTxn = 5 * time.Millisecond
	a := startChild(t, spec)
	a.waitLine(startedLine)
	time.Sleep(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
	broker.Restart()
	produceInput(t, broker.Addr, "in", recs[1000:])
	a.signal(syscall.SIGTERM)
	if err := a.wait(); err != nil {
		t.Fatalf("the processor after the broker's restart: %v", err)
	}
	finish(t, broker, spec, c, recs)
}

// A restore asks the cluster for offsets (the input's start, before a
// replay; the state topic's end, before a snapshot's read) while the
// broker is away: it asks again until the broker is back, and the output
// stays exact. The child's client retries a request once only, so that
// the broker's absence reaches the Processor instead of being ridden out
// inside the client.
func TestRestoreAsksAgainWhileTheBrokerRestarts(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	// The first run leaves snapshots (every 150 records of a partition,
	// about 250 each) and records judged since them.
	broker, spec, c, recs, _ := halfWritten(t)
	first := spec
	first.Idle = 500 * time.Millisecond
	if err := startChild(t, first).wait(); err != nil {
		t.Fatalf("the first processor: %v", err)
	}
	produceInput(t, broker.Addr, "in", recs[1000:])
	spec.PauseAtListing, spec.RequestRetries, spec.Idle = true, 1, 500*time.Millisecond
	a := startChild(t, spec)
	a.waitLine(listingLine)
	broker.Stop()
	a.signal(syscall.SIGUSR1)
	a.waitLine(askAgainLine)
	broker.StartAgain()
	if err := a.wait(); err != nil {
		t.Fatalf("the processor restoring while the broker restarted: %v", err)
	}
	checkOutput(t, c, recs, kafkatest.ReadCommitted(t, broker.Addr, "out"))
}

// Two processors given one instance ID (a mistake: an instance ID names
// one running processor): the second fences the first. It takes the
// first's transactional ID, so the broker bumps the ID's epoch and aborts
// the first's open transaction, whose end is then refused; and its static
// membership takes the first's place in the group. The first stops with
// an error that says it was fenced (by the group, at its next heartbeat,
// when its transaction ended before the second came), its open
// transaction's records never show, and the second goes on from the
// committed offsets: the output stays exact.
func TestSameInstanceIDFencesTheFirstProcessor(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	broker, spec, c, recs, _ := halfWritten(t)
	first := spec
	first.InTxn, first.Announce = 500*time.Millisecond, true
	a := startChild(t, first)
	a.waitLine(inTxnLine)
	spec.InTxn, spec.Announce = time.Millisecond, true // the same Instance
	b := startChild(t, spec)
	b.waitLine(startedLine)
	err := a.wait()
	if err == nil {
		t.Fatal("the first processor exited 0: it was not fenced")
	}
	stderr := a.stderr.String()
	if !strings.Contains(stderr, "fenced") && !strings.Contains(stderr, "FENCED") {
		t.Fatalf("the first processor exited with %v, without saying it was fenced:\n%s", err, stderr)
	}
	// The rest of the input is written before waiting for the second's
	// transaction: if the first committed all it read before the second
	// came, the second has nothing else to begin one with.
	produceInput(t, broker.Addr, "in", recs[1000:])
	b.waitLine(inTxnLine)
	b.signal(syscall.SIGTERM)
	if err := b.wait(); err != nil {
		t.Fatalf("the second processor after SIGTERM: %v", err)
	}
	finish(t, broker, spec, c, recs)
}
