module github.com/dedupkit/cuckoo

go 1.24

require (
	github.com/restic/chunker v0.4.0
	github.com/zeebo/xxh3 v1.1.0
	golang.org/x/term v0.29.0
)

require (
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
