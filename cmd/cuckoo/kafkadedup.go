package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/progress"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
	"github.com/dedupkit/cuckoo/kafkadedup"
)

// dedup --kafka: the input is Kafka topics read with a consumer group and
// the output a topic, written exactly once by package kafkadedup; the
// window rule and the key forms are dedup's.

// kafkaFlags are dedup's Kafka flags; --kafka chooses the mode.
type kafkaFlags struct {
	brokers        string
	from, to       string
	group          string
	instance       string
	stateTopic     string
	idle           windowValue
	timeout        windowValue
	snapshotEvery  countValue
	fetchBytes     bytesValue
	passUnreadable bool
	metrics        string

	tls                            bool
	tlsCA, tlsCert, tlsKey, tlsSNI string
	sasl, saslUser, saslPassFile   string
}

// kafkaPasswordEnv names the environment variable that holds the SASL
// password when --sasl-password-file is not given: a password on the
// command line would show in ps.
const kafkaPasswordEnv = "CUCKOO_KAFKA_PASSWORD"

func (f *kafkaFlags) register(fs *flag.FlagSet) {
	fs.Var((*nameValue)(&f.brokers), "kafka", "dedup Kafka topics: the seed `brokers`, host:port[,host:port…]")
	fs.Var((*nameValue)(&f.from), "from", "with --kafka: the input `topics`, comma-separated")
	fs.Var((*nameValue)(&f.to), "to", "with --kafka: the output `topic`")
	fs.Var((*nameValue)(&f.group), "group", "with --kafka: the consumer group `name`: runs of one group share the work and the state")
	fs.Var((*nameValue)(&f.instance), "instance", "with --kafka: a `name` that stays the same across restarts (pod, host): restarts are fast (default random)")
	fs.Var((*nameValue)(&f.stateTopic), "state-topic", "with --kafka: the compacted `topic` of the filters' snapshots (default GROUP-cuckoo-state, created if missing)")
	fs.Var(&f.idle, "exit-when-idle", "with --kafka: exit 0 once caught up and no record came for this `duration` (default: run until SIGINT or SIGTERM)")
	fs.Var(&f.timeout, "kafka-timeout", "with --kafka: how long to wait for the cluster before stopping with status 3 (default 30s)")
	fs.Var(&f.snapshotEvery, "snapshot-every", "with --kafka: snapshot a partition's filter every `N` records: what a restart replays at most (default 1M)")
	fs.Var(&f.fetchBytes, "fetch-bytes", "with --kafka: fetch at most `N` bytes of input at once, the records of one transaction: memory against throughput (default 1Mi, 1048576)")
	fs.Var((*nameValue)(&f.metrics), "metrics", "with --kafka: serve Prometheus metrics on http://`address`/metrics (host:port), with /healthz and /readyz")
	fs.BoolVar(&f.passUnreadable, "pass-unreadable", false, "with --kafka: write a record whose key or time cannot be read, unjudged, instead of stopping")
	fs.BoolVar(&f.tls, "tls", false, "with --kafka: connect with TLS (the system's CAs unless --tls-ca)")
	fs.Var((*nameValue)(&f.tlsCA), "tls-ca", "with --kafka: TLS: the CA certificates `file` (PEM) that signed the brokers' certificates")
	fs.Var((*nameValue)(&f.tlsCert), "tls-cert", "with --kafka: TLS: a client certificate `file` (PEM), with --tls-key")
	fs.Var((*nameValue)(&f.tlsKey), "tls-key", "with --kafka: TLS: the client certificate's key `file` (PEM)")
	fs.Var((*nameValue)(&f.tlsSNI), "tls-server-name", "with --kafka: TLS: the `name` the brokers' certificates must carry (default: the host dialled)")
	fs.Var((*saslValue)(&f.sasl), "sasl", "with --kafka: SASL `mechanism`: plain, scram-sha-256, scram-sha-512")
	fs.Var((*nameValue)(&f.saslUser), "sasl-user", "with --kafka: SASL `user`")
	fs.Var((*nameValue)(&f.saslPassFile), "sasl-password-file", "with --kafka: a `file` holding the SASL password (default: $"+kafkaPasswordEnv+")")
}

// saslValue is --sasl: one of the SASL mechanisms franz-go speaks.
type saslValue string

func (v *saslValue) String() string { return (*nameValue)(v).String() }

func (v *saslValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "plain", "scram-sha-256", "scram-sha-512":
		*v = saslValue(strings.ToLower(s))
		return nil
	}
	return wantError("want plain, scram-sha-256 or scram-sha-512")
}

// stray returns the first Kafka flag given without --kafka, or "".
func (f *kafkaFlags) stray() string {
	for name, set := range map[string]bool{
		"--from": f.from != "", "--to": f.to != "", "--group": f.group != "", "--instance": f.instance != "",
		"--state-topic": f.stateTopic != "", "--exit-when-idle": f.idle.set, "--kafka-timeout": f.timeout.set,
		"--snapshot-every": f.snapshotEvery.set, "--fetch-bytes": f.fetchBytes.set, "--pass-unreadable": f.passUnreadable, "--tls": f.tls, "--metrics": f.metrics != "",
		"--tls-ca": f.tlsCA != "", "--tls-cert": f.tlsCert != "", "--tls-key": f.tlsKey != "",
		"--tls-server-name": f.tlsSNI != "", "--sasl": f.sasl != "", "--sasl-user": f.saslUser != "",
		"--sasl-password-file": f.saslPassFile != "",
	} {
		if set {
			return name
		}
	}
	return ""
}

// runKafkaDedup is 'cuckoo dedup --kafka BROKERS --from TOPIC --to TOPIC
// --group NAME': handled is false when the flags do not ask for it.
func runKafkaDedup(e *env, f *dedupFlags, names []string) (handled bool, err error) {
	const remedy = "see 'cuckoo dedup --help' and docs/kafka.md"
	kf := &f.kafka
	if kf.brokers == "" {
		if name := kf.stray(); name != "" {
			return true, usageErr(remedy, "%s is about Kafka; give --kafka BROKERS too", name)
		}
		return false, nil
	}
	switch {
	case len(names) > 0:
		return true, usageErr(remedy, "with --kafka the input is the topics of --from, not files (%s)", names[0])
	case kf.from == "" || kf.to == "" || kf.group == "":
		return true, usageErr(remedy, "--kafka needs --from TOPIC, --to TOPIC and --group NAME")
	case f.save != "" || f.load != "" || f.state != "" || f.output != "":
		return true, usageErr(remedy, "with --kafka the seen-sets live in Kafka: --save, --load, --state and -o do not apply")
	case f.exact.on() || f.redis.url != "":
		return true, usageErr(remedy, "--kafka keeps its own seen-sets: --exact and --redis do not apply")
	case f.duplicates || f.count:
		return true, usageErr(remedy, "--kafka writes the records it keeps to --to: --duplicates and --count do not apply")
	case f.filter.grow || f.filter.semi || f.filter.bloom.kind != 0 || f.filter.bucketSize != 0 || f.filter.fingerprint != 0:
		return true, usageErr(remedy, "--kafka's filters take --capacity, --fpr and --seed; --grow, --semi-sorted, --bloom, --bucket-size and --fingerprint-bits do not apply")
	case f.filter.capacity.set && f.filter.capacity.n == 0:
		return true, usageErr(remedy, "--capacity 0: a filter must hold at least one key")
	}
	if kf.metrics != "" {
		if _, _, err := net.SplitHostPort(kf.metrics); err != nil {
			return true, usageErr("give a host:port such as 127.0.0.1:9121, or :9121 for every address", "bad --metrics %q", kf.metrics)
		}
	}
	opts, err := kafkaOptions(e, f)
	if err != nil {
		return true, err
	}
	from := strings.Split(kf.from, ",")
	p, err := kafkadedup.New(kf.group, from, kf.to, opts...)
	if err != nil {
		return true, kafkaErr(kf, err)
	}
	// Both signals end the run gracefully: the open transaction is
	// finished, then Run returns and the command exits 0.
	signal.Reset(os.Interrupt, syscall.SIGTERM)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if kf.metrics != "" {
		ops, err := startOps(kf.metrics, func(format string, args ...any) {
			fmt.Fprintf(e.stderr, "cuckoo dedup: "+format+"\n", args...)
		})
		if err != nil {
			return true, dataErr("choose another --metrics address", "%v", err)
		}
		defer ops.close()
		ops.serveKafka(kf.group, p.Stats)
		if !f.quiet {
			fmt.Fprintf(e.stderr, "cuckoo dedup: metrics on http://%s/metrics, health on /healthz and /readyz\n", ops.addr())
		}
	}
	start := time.Now()
	bar := e.startKafkaLine(p, f.quiet, start)
	fetch := uint64(kafkadedup.DefaultFetchBytes)
	if kf.fetchBytes.set {
		fetch = kf.fetchBytes.n
	}
	stopLimit := limitMemory(p, kafkaHeadroom(fetch))
	runErr := p.Run(ctx)
	stopLimit()
	bar.Finish()
	if runErr != nil {
		return true, kafkaErr(kf, runErr)
	}
	if f.stats {
		printKafkaStats(e, p.Stats(), time.Since(start))
	}
	return true, nil
}

// kafkaHeadroom is the memory a Kafka run takes beyond its filters when
// it fetches at most fetch bytes at once: the runtime and franz-go's
// buffers, and the records in flight. Those are a fetch being judged, the
// next one fetched meanwhile and the output records, all decoded: about
// 20 times the fetch bytes for records of 16-byte values (docs/kafka.md,
// Memory), more for smaller ones; 32 times leaves the collector room, and
// at the default fetch bytes (1 MiB) the headroom is 48 MiB.
func kafkaHeadroom(fetch uint64) int64 {
	return 16<<20 + 32*int64(min(fetch, 1<<30))
}

// limitMemory keeps Go's soft memory limit at the filters' size plus
// headroom while p runs, unless GOMEMLIMIT is set. The filters are most
// of the heap and never garbage; by default (GOGC=100) the collector
// would let the heap grow to twice them, when the garbage is only the
// records of the last polls. The limit makes it collect before that (the
// filters, pointer-free, cost its marking nothing); the headroom must
// hold the records in flight, or the collector would run back to back.
func limitMemory(p *kafkadedup.Processor, headroom int64) (stop func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			debug.SetMemoryLimit(int64(p.Stats().FilterBytes) + headroom)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// kafkaOptions turns the flags into the Processor's options.
func kafkaOptions(e *env, f *dedupFlags) ([]kafkadedup.Option, error) {
	const remedy = "see 'cuckoo dedup --help'"
	kf := &f.kafka
	client, err := kf.clientOptions()
	if err != nil {
		return nil, err
	}
	opts := []kafkadedup.Option{
		kafkadedup.WithClient(client...),
		kafkadedup.WithFalsePositiveRate(f.filter.fpr.or(filterfile.DefaultRate)),
		kafkadedup.WithLogf(func(format string, args ...any) { e.kafkaNote(fmt.Sprintf(format, args...)) }),
	}
	if f.filter.capacity.set {
		opts = append(opts, kafkadedup.WithCapacity(f.filter.capacity.n))
	}
	if f.filter.seed.set {
		opts = append(opts, kafkadedup.WithSeed(f.filter.seed.n))
	}
	wf := &f.window
	if wf.window.set {
		opts = append(opts, kafkadedup.WithWindow(wf.window.d))
	} else if wf.timeField != "" || wf.timeFormat != "" {
		return nil, usageErr(remedy, "--time-field and --time-format are about --window; give --window DURATION")
	}
	if wf.timeFormat != "" && wf.timeField == "" {
		return nil, usageErr(remedy, "--time-format says how --time-field's time is written; give --time-field")
	}
	key := f.key
	if key == "" {
		key = f.fields.field
	}
	if key == "" && (f.fields.delimSet || f.fields.csv) {
		return nil, usageErr(remedy, "--delimiter and --csv need --key")
	}
	if key != "" {
		var fn kafkadedup.KeyFunc
		var err error
		if isJSONPath(key) {
			fn, err = kafkadedup.KeyJSON(key)
		} else {
			fn, err = kafkadedup.KeyFields(key, f.fields.delimiter, f.fields.csv)
		}
		if err != nil {
			return nil, usageErr(remedy, "bad --key %q: %v", key, trimPrefixes(err))
		}
		opts = append(opts, kafkadedup.WithKey(fn))
	}
	if wf.timeField != "" {
		var fn kafkadedup.TimeFunc
		var err error
		if isJSONPath(wf.timeField) {
			fn, err = kafkadedup.TimeJSON(wf.timeField, wf.timeFormat)
		} else {
			fn, err = kafkadedup.TimeFields(wf.timeField, f.fields.delimiter, f.fields.csv, wf.timeFormat)
		}
		if err != nil {
			return nil, usageErr(remedy, "bad --time-field %q or --time-format: %v", wf.timeField, trimPrefixes(err))
		}
		opts = append(opts, kafkadedup.WithTime(fn))
	}
	if kf.instance != "" {
		opts = append(opts, kafkadedup.WithInstanceID(kf.instance))
	}
	if kf.stateTopic != "" {
		opts = append(opts, kafkadedup.WithStateTopic(kf.stateTopic))
	}
	if kf.idle.set {
		opts = append(opts, kafkadedup.WithExitWhenIdle(kf.idle.d))
	}
	if kf.timeout.set {
		opts = append(opts, kafkadedup.WithTimeout(kf.timeout.d))
	}
	if kf.snapshotEvery.set {
		if kf.snapshotEvery.n == 0 || kf.snapshotEvery.n > 1<<62 {
			return nil, usageErr(remedy, "bad --snapshot-every %d: want 1 or more", kf.snapshotEvery.n)
		}
		opts = append(opts, kafkadedup.WithSnapshotEvery(int64(kf.snapshotEvery.n), kafkadedup.DefaultSnapshotInterval))
	}
	if kf.fetchBytes.set {
		if kf.fetchBytes.n < 1<<10 || kf.fetchBytes.n > 64<<20 {
			return nil, usageErr(remedy, "bad --fetch-bytes %d: want 1Ki to 64Mi (1024 to 67108864)", kf.fetchBytes.n)
		}
		opts = append(opts, kafkadedup.WithFetchBytes(int(kf.fetchBytes.n)))
	}
	if kf.passUnreadable {
		opts = append(opts, kafkadedup.WithPassUnreadable())
	}
	return opts, nil
}

// isJSONPath reports whether a --key or --time-field is a JSON path
// (".user.id", "$.user.id") rather than a field spec (2, 1,3, 2-4).
func isJSONPath(s string) bool { return strings.HasPrefix(s, ".") || strings.HasPrefix(s, "$") }

// clientOptions are the franz-go options of the brokers, TLS and SASL
// flags.
func (f *kafkaFlags) clientOptions() ([]kgo.Opt, error) {
	const remedy = "see docs/kafka.md, Connecting"
	var brokers []string
	for _, b := range strings.Split(f.brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	if len(brokers) == 0 {
		return nil, usageErr(remedy, "--kafka %q names no broker", f.brokers)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	if f.tls || f.tlsCA != "" || f.tlsCert != "" || f.tlsKey != "" || f.tlsSNI != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.tlsSNI}
		if f.tlsCA != "" {
			pem, err := os.ReadFile(f.tlsCA)
			if err != nil {
				return nil, fileErr(f.tlsCA, err, "check --tls-ca")
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, dataErr("give a file of PEM certificates", "--tls-ca %s holds no PEM certificate", f.tlsCA)
			}
		}
		if (f.tlsCert == "") != (f.tlsKey == "") {
			return nil, usageErr(remedy, "--tls-cert and --tls-key go together")
		}
		if f.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
			if err != nil {
				return nil, dataErr("check --tls-cert and --tls-key", "loading the client certificate: %v", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if f.sasl == "" {
		if f.saslUser != "" || f.saslPassFile != "" {
			return nil, usageErr(remedy, "--sasl-user and --sasl-password-file need --sasl MECHANISM")
		}
		return opts, nil
	}
	if f.saslUser == "" {
		return nil, usageErr(remedy, "--sasl needs --sasl-user")
	}
	pass, ok := os.LookupEnv(kafkaPasswordEnv)
	if f.saslPassFile != "" {
		b, err := os.ReadFile(f.saslPassFile)
		if err != nil {
			return nil, fileErr(f.saslPassFile, err, "check --sasl-password-file")
		}
		pass, ok = strings.TrimRight(string(b), "\r\n"), true
	}
	if !ok {
		return nil, usageErr(remedy, "--sasl needs a password: --sasl-password-file FILE, or $%s", kafkaPasswordEnv)
	}
	var mech sasl.Mechanism
	switch strings.ToLower(f.sasl) {
	case "plain":
		mech = plain.Auth{User: f.saslUser, Pass: pass}.AsMechanism()
	case "scram-sha-256":
		mech = scram.Auth{User: f.saslUser, Pass: pass}.AsSha256Mechanism()
	case "scram-sha-512":
		mech = scram.Auth{User: f.saslUser, Pass: pass}.AsSha512Mechanism()
	default:
		return nil, usageErr("want plain, scram-sha-256 or scram-sha-512", "bad --sasl %q", f.sasl)
	}
	return append(opts, kgo.SASL(mech)), nil
}

// kafkaErr explains an error of the Processor: status 2 for a bad
// parameter, 4 for a full filter, 3 for the cluster and the data.
func kafkaErr(f *kafkaFlags, err error) error {
	msg := trimPrefixes(err)
	switch {
	case errors.Is(err, kafkadedup.ErrInvalidParameter):
		return usageErr("see 'cuckoo dedup --help'", "%s", msg)
	case errors.Is(err, cuckoo.ErrFull):
		return &cliError{code: exitFull, msg: msg, remedy: "give a larger --capacity: the most distinct keys one window of one partition holds; the records after it are not processed"}
	case errors.Is(err, kafkadedup.ErrUnreachable):
		return dataErr("check --kafka, and that the cluster is up and reachable (TLS and SASL as it asks)", "no broker of --kafka %s answered: %s", f.brokers, strings.TrimPrefix(msg, "no broker reachable: "))
	case errors.Is(err, kafkadedup.ErrNoTopic):
		return dataErr("create it, or check --from and --to", "%s", msg)
	case errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.TopicAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed):
		return dataErr("ask the cluster's operators for the ACLs docs/kafka.md lists, or check --sasl-user", "not authorized: %s", msg)
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return dataErr("check --sasl, --sasl-user and the password", "%s", msg)
	case errors.Is(err, kafkadedup.ErrUnreadable):
		return dataErr("fix the record, or let such records through unjudged with --pass-unreadable; the records of earlier polls are written, those of its own poll are aborted and judged again at the next run", "%s", msg)
	}
	return dataErr("the records of the open transaction are aborted; run again to go on from the committed offsets", "%s", msg)
}

// trimPrefixes drops the package prefixes of an error's text: the CLI's
// own ("cuckoo dedup: ") starts the line.
func trimPrefixes(err error) string {
	return strings.NewReplacer("kafkadedup: ", "", "cuckoo: ", "").Replace(err.Error())
}

// startKafkaLine draws the status line of a Kafka run on a terminal:
// records in, kept, dropped, lag, speed.
func (e *env) startKafkaLine(p *kafkadedup.Processor, quiet bool, start time.Time) *progress.Bar {
	on := e.stderrTTY && !quiet
	b := progress.NewLine(e.stderr, func(int) string {
		st := p.Stats()
		secs := max(time.Since(start).Seconds(), 1e-9)
		return fmt.Sprintf("dedup --kafka  %s in  %s kept  %s dropped  lag %s  %s records/s",
			units.SI(float64(st.In)), units.SI(float64(st.Kept)), units.SI(float64(st.Dropped)),
			units.Count(uint64(max(st.Lag, 0))), units.SI(float64(st.In)/secs))
	}, on)
	e.mu.Lock()
	e.bar = b
	e.mu.Unlock()
	return b
}

// kafkaNote prints a note of the Processor on standard error, above the
// status line if one is drawn.
func (e *env) kafkaNote(note string) {
	line := "cuckoo dedup: " + note
	e.mu.Lock()
	b := e.bar
	e.mu.Unlock()
	if b != nil {
		b.Note(line)
		return
	}
	fmt.Fprintln(e.stderr, line)
}

// printKafkaStats prints what --stats promises for a Kafka run.
func printKafkaStats(e *env, st kafkadedup.Stats, elapsed time.Duration) {
	w := e.stderr
	secs := max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(w, "cuckoo dedup: %s in, %s kept, %s dropped as seen",
		units.Counted(st.In, "record"), units.Count(st.Kept), units.Count(st.Dropped))
	if st.Unreadable > 0 {
		fmt.Fprintf(w, ", %s of the kept unreadable, written unjudged", units.Count(st.Unreadable))
	}
	fmt.Fprintln(w)
	bpk := 0.0
	if st.Keys > 0 {
		bpk = float64(st.FilterBytes*8) / float64(st.Keys)
	}
	fmt.Fprintf(w, "cuckoo dedup: filters: %s, %s, %s (%.1f bits per key)\n",
		units.Counted(uint64(st.Partitions), "partition"), units.Counted(st.Keys, "key"), units.Bytes(st.FilterBytes), bpk)
	fmt.Fprintf(w, "cuckoo dedup: expected false positives (new records dropped wrongly): %.3g\n", st.ExpectedFalseDrops)
	if st.Misplaced > 0 {
		fmt.Fprintf(w, "cuckoo dedup: %s not in the partition Kafka's default partitioner gives their key (docs/kafka.md, Partitions)\n",
			units.Counted(st.Misplaced, "record"))
	}
	fmt.Fprintf(w, "cuckoo dedup: %s committed, %s aborted; %s restored in %.2f s, replaying %s; %s, %s\n",
		units.Counted(st.Transactions, "transaction"), units.Count(st.Aborted), units.Counted(st.Restores, "partition"),
		st.RestoreTime.Seconds(), units.Counted(st.Replayed, "record"), units.Counted(st.Snapshots, "snapshot"), units.Bytes(st.SnapshotBytes))
	fmt.Fprintf(w, "cuckoo dedup: %.2f s, %s records/s\n", secs, units.SI(float64(st.In)/secs))
}
