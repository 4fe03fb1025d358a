// Package hugepages asks Linux to back large tables with transparent huge
// pages (2 MiB), so that their random lookups miss the TLB far less: the
// engine's tables (Advise) and the index of cuckoo dedup --exact (Words).
// Elsewhere it does nothing.
package hugepages
