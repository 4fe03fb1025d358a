package cuckoo_test

import (
	"fmt"
	"sync"

	"github.com/dedupkit/cuckoo"
)

// Goroutines share one filter; AddUnique tells exactly one of them that a
// key is new.
func ExampleNewConcurrent() {
	seen, err := cuckoo.NewConcurrent(10_000, cuckoo.WithSeed(1))
	if err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	firsts := 0
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ { // every worker sees the same 1000 events
				if added, _ := seen.AddUniqueString(fmt.Sprint("event-", i)); added {
					mu.Lock()
					firsts++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	fmt.Println(firsts, seen.Len())
	// Output:
	// 1000 1000
}

// With WithGrowth a Concurrent grows instead of returning ErrFull.
func ExampleNewConcurrent_growing() {
	c, _ := cuckoo.NewConcurrent(1000, cuckoo.WithGrowth(2), cuckoo.WithSeed(3))
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50_000; i++ {
				if err := c.AddString(fmt.Sprint(w, "/", i)); err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Println(c.Len(), c.NumTables(), c.ContainsString("1/49999"))
	// Output:
	// 100000 7 true
}

// A snapshot of a live Concurrent loads as a plain Filter.
func ExampleConcurrent_MarshalBinary() {
	c, _ := cuckoo.NewConcurrent(1000, cuckoo.WithSeed(4))
	c.AddString("a")
	c.AddString("b")
	data, _ := c.MarshalBinary() // writers pause for a copy; readers never
	var f cuckoo.Filter
	if err := f.UnmarshalBinary(data); err != nil {
		panic(err)
	}
	fmt.Println(f.Len(), f.ContainsString("a"), f.ContainsString("c"))
	// Output:
	// 2 true false
}
