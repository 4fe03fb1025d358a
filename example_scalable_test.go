package cuckoo_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/dedupkit/cuckoo"
)

// A stream of unknown length: start small, let the filter grow.
func ExampleNewScalable() {
	seen, err := cuckoo.NewScalable(1000, cuckoo.WithFalsePositiveRate(0.001), cuckoo.WithSeed(1))
	if err != nil {
		panic(err)
	}
	dups := 0
	for i := 0; i < 200_000; i++ {
		url := fmt.Sprintf("https://example.com/page/%d", i%150_000) // 50,000 repeats
		if added, _ := seen.AddUniqueString(url); !added {
			dups++
		}
	}
	// 50,000 true repeats, and new URLs taken for repeats at about the
	// false-positive rate of a filter holding 150,000 keys.
	fmt.Println("repeats found:", dups, "of which false:", dups-50_000)
	fmt.Println("tables:", seen.NumTables())
	// The rate asked for is a bound at every size.
	fmt.Printf("false-positive rate at most %.2f%%: %v\n", 100*seen.TargetFalsePositiveRate(),
		seen.FalsePositiveRate() <= seen.TargetFalsePositiveRate())
	// The newest table grows in place, so memory follows the keys.
	fmt.Printf("memory: %.1f bits per key\n", float64(8*seen.SizeInBytes())/float64(seen.Len()))
	// Output:
	// repeats found: 50084 of which false: 84
	// tables: 8
	// false-positive rate at most 0.10%: true
	// memory: 19.1 bits per key
}

// Save a grown filter and load it back: it goes on growing from where it
// was.
func ExampleScalable_MarshalBinary() {
	s, _ := cuckoo.NewScalable(100, cuckoo.WithSeed(7))
	for i := 0; i < 1000; i++ {
		s.AddString(fmt.Sprint("key-", i))
	}
	data, err := s.MarshalBinary()
	if err != nil {
		panic(err)
	}
	var loaded cuckoo.Scalable
	if err := loaded.UnmarshalBinary(data); err != nil {
		panic(err)
	}
	fmt.Println(loaded.Len(), loaded.NumTables(), loaded.ContainsString("key-999"))
	s.AddString("more")
	loaded.AddString("more")
	again, _ := loaded.MarshalBinary()
	now, _ := s.MarshalBinary()
	fmt.Println(bytes.Equal(again, now))
	// Output:
	// 1000 4 true
	// true
}

// Deleting keys in the order they came (a sliding window) releases the
// tables that empty.
func ExampleScalable_Delete() {
	s, _ := cuckoo.NewScalable(1000, cuckoo.WithSeed(2))
	for i := 0; i < 50_000; i++ {
		s.AddString(fmt.Sprint(i))
		if i >= 10_000 {
			s.DeleteString(fmt.Sprint(i - 10_000)) // keep the last 10,000
		}
	}
	fmt.Println(s.Len(), s.NumTables(), s.Capacity())
	// Output:
	// 10000 1 16000
}

// Dedup a stream a batch of lines at a time: the batch overlaps the cache
// misses of its keys in every table, and keeps the order of a loop of
// AddUnique (a repeat inside the batch is not added twice).
func ExampleScalable_AddUniqueBatch() {
	seen, _ := cuckoo.NewScalable(1000, cuckoo.WithSeed(1))
	batch := [][]byte{[]byte("a"), []byte("b"), []byte("a"), []byte("c"), []byte("b")}
	added := make([]bool, len(batch))
	seen.AddUniqueBatch(batch, added)
	var out []string
	for i, line := range batch {
		if added[i] {
			out = append(out, string(line))
		}
	}
	fmt.Println(strings.Join(out, " "))
	found := make([]bool, 2)
	seen.ContainsBatch([][]byte{[]byte("c"), []byte("d")}, found)
	fmt.Println(found)
	// Output:
	// a b c
	// [true false]
}
