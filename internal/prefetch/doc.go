// Package prefetch asks the CPU to start loading memory a program will
// read soon, and returns at once: PREFETCHT0 in assembly on amd64, plain
// loads elsewhere (Go has no prefetch instruction). The filters' engine
// (internal/table) prefetches the buckets of the next keys of a batch
// with it, and `cuckoo dedup --exact` the index buckets of its next lines;
// a prefetch is a hint, which never faults and changes nothing visible.
package prefetch
