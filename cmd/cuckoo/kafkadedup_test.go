package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dedupkit/cuckoo/internal/kafkatest"
)

// kafkaEvents writes n events to topic in (2 partitions, keys placed by
// the default partitioner): event i is of user i mod 37, 10 minutes after
// event i-1, so that a user's events are 6 h 10 min apart. The value is
// JSON with the user and the time in Unix ms; the record's key and
// timestamp are the same, or with misleading, the same for every event.
func kafkaEvents(t *testing.T, addr string, n int, misleading bool) {
	kafkatest.CreateTopic(t, addr, "in", 2)
	kafkatest.CreateTopic(t, addr, "out", 2)
	cl := kafkatest.Client(t, addr)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for i := range n {
		user := fmt.Sprintf("user-%d", i%37)
		ts := base.Add(time.Duration(i) * 10 * time.Minute)
		r := &kgo.Record{Topic: "in", Key: []byte(user), Timestamp: ts,
			Value: []byte(fmt.Sprintf(`{"e": %d, "user": {"id": %q}, "at": %d}`, i, user, ts.UnixMilli()))}
		if misleading {
			r.Key, r.Timestamp = []byte("same"), base
		}
		recs = append(recs, r)
	}
	kafkatest.Produce(t, cl, recs...)
}

// kafkaOutput returns the values of the output topic's records, sorted.
func kafkaOutput(t *testing.T, addr string) []string {
	var vs []string
	for _, r := range kafkatest.ReadCommitted(t, addr, "out") {
		vs = append(vs, string(r.Value))
	}
	return vs
}

func TestKafkaDedup(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Start(t)
	// A user's events are 6 h 10 min apart, far beyond a window of 1 h
	// (plus its granularity): every event is kept with --window 1h;
	// without a window, only each user's first.
	kafkaEvents(t, addr, 200, false)
	e := newEnv(t)
	// Fetches of 2 kB: many small transactions. The seed is fixed: the
	// window's 17-bit fingerprints in 290 buckets make each pair of users
	// live in it together (about 110 pairs in one partition) share a
	// fingerprint and a bucket pair with probability 2/(290·2^17), so a
	// drawn seed dropped a user's event as seen in about 6 runs in a
	// million; with this seed, none of the 37 users' keys collide.
	r := e.run("", "dedup", "--kafka", addr, "--from", "in", "--to", "out", "--group", "g", "--window", "1h",
		"--capacity", "1000", "--seed", "7", "--exit-when-idle", "300ms", "--fetch-bytes", "2k", "--stats")
	r.want(t, 0, "dedup")
	if got := len(kafkaOutput(t, addr)); got != 200 {
		t.Fatalf("--window 1h kept %d of 200 events, want all\n%s", got, r.stderr)
	}
	for _, want := range []string{"200 records in, 200 kept, 0 dropped as seen", "filters: 2 partitions", "committed, 0 aborted", "2 partitions restored in "} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("--stats printed %q, without %q", r.stderr, want)
		}
	}
	// Another group, without a window, on the same input: each user once.
	kafkatest.CreateTopic(t, addr, "out2", 2)
	r = e.run("", "dedup", "--kafka", addr, "--from", "in", "--to", "out2", "--group", "g2", "--seed", "7", "--exit-when-idle", "300ms")
	r.want(t, 0, "dedup")
	if got := len(kafkatest.ReadCommitted(t, addr, "out2")); got != 37 {
		t.Fatalf("without a window: %d records kept, want 37 (one per user)", got)
	}
}

// The key and the time read from a JSON value, whose record keys and
// timestamps are all the same: with --window 5h (keys forgotten 5 h to
// 5 h 22 min after their last event), every event is kept; by the record's
// key and time, only the first would be.
func TestKafkaDedupJSONKeyAndTime(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Start(t)
	kafkaEvents(t, addr, 37*6, true)
	e := newEnv(t)
	// The seed is fixed: every record is in one partition (one record
	// key), and each of the 666 pairs of the 37 users is in the window
	// together at some time; a pair shares a fingerprint and a bucket
	// pair with probability 2/(290·2^17) (17-bit fingerprints, 290
	// buckets), so a drawn seed dropped an event as seen in about 1 run in
	// 30,000. With this seed, none of the users' keys collide.
	r := e.run("", "dedup", "--kafka", addr, "--from", "in", "--to", "out", "--group", "g",
		"--key", ".user.id", "--window", "5h", "--time-field", "$.at", "--time-format", "unix-ms",
		"--capacity", "1000", "--seed", "7", "--exit-when-idle", "300ms")
	r.want(t, 0, "dedup")
	if got := len(kafkaOutput(t, addr)); got != 37*6 {
		t.Fatalf("%d records kept, want %d", got, 37*6)
	}
}

// SIGTERM finishes the open transaction and exits 0, with everything it
// committed in the output. Meanwhile --metrics serves the processor's
// counts, which a scrape finds once the records are out.
func TestKafkaDedupStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	addr := kafkatest.Start(t)
	kafkaEvents(t, addr, 100, false)
	// A fixed seed, as in TestKafkaDedup: with a drawn one, two users in
	// the window together share a fingerprint and a bucket pair in about
	// 6 runs in a million, and the output never reaches 100 records.
	cmd := exec.Command(binary, "dedup", "--kafka", addr, "--from", "in", "--to", "out", "--group", "g", "--window", "1h", "--capacity", "1000",
		"--seed", "7", "--metrics", "127.0.0.1:0")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	metricsAt := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if rest, ok := strings.CutPrefix(sc.Text(), "cuckoo dedup: metrics on http://"); ok {
				at, _, _ := strings.Cut(rest, "/")
				metricsAt <- at
			}
		}
	}()
	kafkatest.Eventually(t, "the records in the output", func() bool { return len(kafkaOutput(t, addr)) == 100 })
	select {
	case at := <-metricsAt:
		// The counts of the committed transactions: every record, once.
		kafkatest.Eventually(t, "the metrics", func() bool {
			code, body := httpGet(t, "http://"+at+"/metrics")
			return code == 200 && strings.Contains(body, `cuckoo_kafka_records_total{group="g"} 100`+"\n") &&
				strings.Contains(body, "go_goroutines ")
		})
		if code, body := httpGet(t, "http://"+at+"/readyz"); code != 200 {
			t.Errorf("/readyz: %d %s", code, body)
		}
	case <-time.After(kafkatest.Wait):
		t.Errorf("no line naming the metrics' address")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select { // standard error read to its end before Wait closes it
	case <-copied:
	case <-time.After(kafkatest.Wait):
		cmd.Process.Kill()
		<-copied
	}
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("exit status %d after SIGTERM, want 0\n%s", code, stderr.String())
	}
}

func TestKafkaDedupErrors(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Start(t)
	kafkaEvents(t, addr, 50, false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	e := newEnv(t)
	e.write("x.txt", "a\n")
	// A state topic of its own, made beforehand: the runs print no note
	// of its creation.
	kafkatest.CreateTopic(t, addr, "state", 1, "cleanup.policy", "compact")
	k := []string{"dedup", "--kafka", addr, "--from", "in", "--to", "out", "--group", "g", "--state-topic", "state",
		"--kafka-timeout", "10s", "--exit-when-idle", "300ms"}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"dedup", "--from", "in"}, 2, "--from is about Kafka"},
		{[]string{"dedup", "--kafka", addr, "--from", "in", "--group", "g"}, 2, "needs --from TOPIC, --to TOPIC and --group NAME"},
		{append(k, "x.txt"), 2, "not files"},
		{append(k, "--exact"), 2, "--exact and --redis do not apply"},
		{append(k, "--count"), 2, "--count do not apply"},
		{append(k, "--bloom"), 2, "do not apply"},
		{append(k, "--time-field", "1"), 2, "give --window"},
		{append(k, "--key", "0"), 2, "bad --key"},
		{append(k, "--key", ".a["), 2, "bad --key"},
		{append(k, "--window", "1h", "--time-field", ".t", "--time-format", "soon"), 2, "bad --time-format value"},
		{append(k, "--sasl", "plain"), 2, "--sasl needs --sasl-user"},
		{append(k, "--tls-cert", "x.txt"), 2, "--tls-cert and --tls-key go together"},
		{append(k, "--to", "in"), 2, "is an input too"},
		{append(k, "--fetch-bytes", "100"), 2, "bad --fetch-bytes 100"},
		{append(k, "--fetch-bytes", "1e12"), 2, "bad --fetch-bytes"},
		{[]string{"dedup", "--kafka", closed, "--from", "in", "--to", "out", "--group", "g"}, 3, "no broker of --kafka " + closed + " answered"},
		{append(k, "--to", "nowhere"), 3, "no such topic: nowhere"},
		{append(k, "--from", "nothing"), 3, "no such topic: nothing"},
		{append(k, "--capacity", "5"), 4, "full"}, // 37 keys, a fixed filter of 5 a partition
	} {
		r := e.run("", c.args...)
		r.want(t, c.code, "dedup")
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: %q, want %q", c.args, r.stderr, c.want)
		}
	}
}

// TLS with the CA of --tls-ca, SASL SCRAM with the password in a file;
// a wrong password and a group the user may not join: status 3 and one
// line.
func TestKafkaDedupTLSAndSASL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	serverTLS := selfSigned(t, e.dir)
	allow := func(res kmsg.ACLResourceType, name string) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAll, Allow: true}
	}
	addr := kafkatest.Start(t, kfake.TLS(serverTLS), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin"),
		kfake.User("SCRAM-SHA-256", "app", "s3cret",
			allow(kmsg.ACLResourceTypeTopic, "*"), allow(kmsg.ACLResourceTypeTransactionalId, "*"),
			allow(kmsg.ACLResourceTypeCluster, "kafka-cluster"), allow(kmsg.ACLResourceTypeGroup, "g")))
	admin := []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: serverTLS.ClientCAs}), kgo.SASL(scramAuth("admin", "admin"))}
	for _, topic := range []string{"in", "out"} {
		kafkatest.CreateTopicWith(t, addr, topic, 1, admin...)
	}
	kafkatest.Produce(t, kafkatest.Client(t, addr, admin...), &kgo.Record{Topic: "in", Key: []byte("k"), Value: []byte("v")})
	e.write("pass", "s3cret\n")
	e.write("wrong", "nope\n")
	k := []string{"dedup", "--kafka", addr, "--from", "in", "--to", "out", "--tls-ca", "ca.pem", "--sasl", "scram-sha-256",
		"--sasl-user", "app", "--state-topic", "state", "--kafka-timeout", "10s"}
	r := e.run("", append(k, "--group", "g", "--sasl-password-file", "pass", "--exit-when-idle", "300ms")...)
	r.want(t, 0, "dedup")
	r = e.run("", append(k, "--group", "g", "--sasl-password-file", "wrong")...)
	r.want(t, 3, "dedup")
	r = e.run("", append(k, "--group", "other", "--sasl-password-file", "pass")...)
	r.want(t, 3, "dedup")
	if !strings.Contains(r.stderr, "not authorized") || !strings.Contains(r.stderr, "GROUP_AUTHORIZATION_FAILED") {
		t.Fatalf("a denied group: %q", r.stderr)
	}
	r = e.run("", "dedup", "--kafka", addr, "--from", "in", "--to", "out", "--group", "g", "--kafka-timeout", "3s")
	r.want(t, 3, "dedup") // no TLS: the broker does not answer
}

func scramAuth(user, pass string) sasl.Mechanism {
	return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
}

// selfSigned writes a CA certificate for 127.0.0.1 to dir/ca.pem and
// returns the broker's TLS configuration with it (ClientCAs holds the CA,
// for the test's own clients).
func selfSigned(t *testing.T, dir string) *tls.Config {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafkatest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, MinVersion: tls.VersionTLS12}
}
