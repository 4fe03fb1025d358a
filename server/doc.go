// Package server is `cuckoo serve`: the filters of this module behind the
// Redis protocol, so that many processes, on many hosts and in any
// language, share one filter through any Redis client. It speaks RESP2 and
// RESP3 and answers the CF.* (cuckoo) and BF.* (Bloom) commands as Redis 8
// does (RedisBloom 8: booleans and maps in RESP3, Redis 8's error texts
// and its bf-* and cf-* settings, FilterSettings), plus the generic
// commands clients and tools send (PING, HELLO, AUTH, INFO, SCAN, DEL…);
// docs/commands.md lists them all, with every difference.
//
// A key holds one filter: a cuckoo.Filter or cuckoo.Scalable (CF.RESERVE
// with EXPANSION 0 or more), a bloom.Filter or bloom.Scalable (BF.RESERVE
// with or without NONSCALING). The filters keep their promises over the
// network: no item lost by a failed insert, duplicates without limit, any
// fingerprint width (CF.RESERVE's FPR and FINGERPRINT options).
//
// # Choosing the parameters
//
// Reserve each filter for the distinct items it will hold and the
// false-positive rate you accept: `CF.RESERVE seen 10000000 FPR 0.001`
// takes 13.7 bits per item (17 MB); with EXPANSION 0 it refuses items past
// its capacity ("Filter is full"), without it it grows, each new table
// twice the last, its rate staying below twice the one asked for. A filter
// created by CF.ADD on a missing key starts at cf-initial-size (1024)
// items and grows to whatever it is given, probing every table on each
// lookup: reserve when you know the size. BUCKETSIZE takes any size from 1
// to 255, as Redis 8 does; 2, 4 (the default) and 8 are the fast ones.
// Choose BF.* for a filter that never deletes at rates
// of a few percent or more, where a Bloom filter is smaller.
//
// For the server itself, DefaultConfig is the configuration of `cuckoo
// serve` with no flags: loopback only, data in ./cuckoo-data, an
// append-only log fsynced every second (FsyncAlways for no loss of
// acknowledged writes on a machine crash), a snapshot every five minutes
// when there were writes. docs/server.md explains each setting.
//
// # Concurrency
//
// On Linux, event loops serve the connections, one per GOMAXPROCS (the
// --threads of `cuckoo serve`), as Redis's event loop does: a loop waits
// for the connections that have data, reads each once, runs the commands
// that arrived, makes their log records durable with one write for all of
// them, and sends the replies. Elsewhere one goroutine serves each
// connection. The key space is split into shards, and each key has its
// own lock, so commands on different keys run in parallel and never wait
// for each other; a write holds its key's lock until its log record is
// appended, which keeps the log in the order the writes ran. All methods
// of Server are safe for concurrent use.
//
// # Persistence
//
// With a data directory, every write that succeeds is appended to the log
// before its reply is sent, and snapshots (in this module's checksummed
// encodings) compact the log in the background: each key is copied as it
// was when the snapshot began, by the first write to it or by a background
// scan, so a command waits at most for one copy of its own key. New loads
// the newest snapshot and replays the log after it; it cuts a torn last
// record (a crash during a write) and refuses to start on any other damage
// unless Config.Repair is set.
//
// # Operating
//
// Server.Stats returns the figures an operator watches: connections,
// errors by kind, keys and memory by type of filter, fills and growths,
// the log's fsyncs, snapshots and the replay at start, and, with
// Config.CommandStats, each command's count and the durations of a
// sample of them. Package server/servermetrics exports them as Prometheus
// metrics, as `cuckoo serve --metrics` serves them. Shutdown's context
// bounds a graceful stop; docs/server.md ("Operating") describes each
// figure, the health checks and the signals.
package server
