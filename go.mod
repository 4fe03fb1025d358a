module github.com/dedupkit/cuckoo

go 1.24
