module github.com/dedupkit/cuckoo

go 1.24

require (
	github.com/redis/go-redis/v9 v9.22.0
	github.com/zeebo/xxh3 v1.1.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
