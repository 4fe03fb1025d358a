// Package kafkadedup deduplicates Kafka topics exactly once: a Processor
// reads input topics with a consumer group and writes to an output topic
// every record whose dedup key was not seen within a window before it in
// its partition, using franz-go (github.com/twmb/franz-go).
//
// Each poll of the input is one transaction of franz-go's
// GroupTransactSession: the records kept, the snapshots of the filters
// that are due, and the group's offsets commit together or not at all. Each
// input partition has its own filter (a cuckoo.Window with a window, a
// growing or fixed cuckoo filter without), restored consistently with the
// committed offsets whenever the partition is assigned: the committed
// offset's metadata points at the partition's latest snapshot in a
// compacted state topic, and the input from the snapshot's offset to the
// committed one is replayed, writing nothing. So after a crash, a kill -9,
// a rebalance or a zombie (a paused member whose partitions moved; its late
// commit is refused), the output read with read_committed holds each kept
// record once and no dropped one; a record is dropped wrongly only by a
// false positive of its partition's filter, with probability at most the
// rate asked.
//
// The rule is the one of `cuckoo dedup --window`, per partition: a record's
// time is its Kafka timestamp (or one read from its value, WithTime), time
// never goes back within a partition, and every record counts as seen,
// kept or dropped. The key is the record's key, a field of its value
// (KeyFields, KeyJSON) or any function (WithKey). The output record is the
// input's key, value, headers and timestamp, in the partition Kafka's
// default partitioner gives its key.
//
// Duplicates must be in one partition for a per-partition rule to see
// them: with the record key as the dedup key and Kafka's default
// partitioner, they are. docs/kafka.md in the repository gives the
// argument, the costs, the settings and how to repartition a topic whose
// dedup key is not its partition key.
//
// A Processor is used once: New, then Run from one goroutine; Stats may be
// read from any goroutine meanwhile.
package kafkadedup
