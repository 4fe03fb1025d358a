package bloom_test

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/dedupkit/cuckoo/bloom"
)

// A crawler's "seen URL" set: AddUnique tests and adds in one pass.
func Example() {
	seen, err := bloom.New(1_000_000, bloom.WithFalsePositiveRate(0.001), bloom.WithSeed(1))
	if err != nil {
		panic(err)
	}
	for _, url := range []string{"https://a.example/", "https://b.example/", "https://a.example/"} {
		added, err := seen.AddUniqueString(url)
		if err != nil {
			panic(err)
		}
		if !added {
			fmt.Println("skip ", url)
			continue
		}
		fmt.Println("crawl", url)
	}
	// Output:
	// crawl https://a.example/
	// crawl https://b.example/
	// skip  https://a.example/
}

func ExampleNew() {
	f, err := bloom.New(1_000_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(1))
	if err != nil {
		panic(err)
	}
	if err := f.Add([]byte("alice")); err != nil { // only a zero Filter refuses a key
		panic(err)
	}
	fmt.Println(f.Contains([]byte("alice")), f.Contains([]byte("bob")))
	fmt.Printf("%.1f bits per key in blocks of 512, k = %d\n", float64(f.SizeInBytes()*8)/float64(f.Capacity()), f.HashCount())
	// Output:
	// true false
	// 9.9 bits per key in blocks of 512, k = 6
}

func ExampleNewClassic() {
	f, err := bloom.NewClassic(1_000_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(1))
	if err != nil {
		panic(err)
	}
	f.AddString("alice")
	fmt.Println(f.ContainsString("alice"), f.ContainsString("bob"))
	fmt.Printf("%.1f bits per key, k = %d\n", float64(f.SizeInBytes()*8)/float64(f.Capacity()), f.HashCount())
	// Output:
	// true false
	// 9.6 bits per key, k = 7
}

func ExampleNewCounting() {
	f, err := bloom.NewCounting(1000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(1))
	if err != nil {
		panic(err)
	}
	f.AddString("session-42")
	f.AddString("session-42") // a second copy
	fmt.Println(f.ContainsString("session-42"), f.Len())
	f.DeleteString("session-42")
	fmt.Println(f.ContainsString("session-42"), f.Len())
	f.DeleteString("session-42")
	fmt.Println(f.ContainsString("session-42"), f.Len())
	fmt.Println(f.DeleteString("never-added")) // absent: nothing changes
	// Output:
	// true 2
	// true 1
	// false 0
	// false
}

func ExampleNewScalable() {
	f, err := bloom.NewScalable(1000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(1))
	if err != nil {
		panic(err)
	}
	for i := range 100_000 {
		f.AddString(fmt.Sprint("user-", i))
	}
	fmt.Println(f.ContainsString("user-0"), f.ContainsString("user-99999"))
	fmt.Printf("%d layers, room for %d keys; expected rate below 1 %%: %v\n",
		f.NumTables(), f.Capacity(), f.FalsePositiveRate() < 0.01)
	// Output:
	// true true
	// 7 layers, room for 127000 keys; expected rate below 1 %: true
}

// Sizing a filter for a billion keys without allocating it: which layout
// is smaller at a rate, and what it costs.
func ExampleNewPlan() {
	for _, p := range []float64{0.01, 1e-4} {
		blocked, err := bloom.NewPlan(1_000_000_000, bloom.WithFalsePositiveRate(p))
		if err != nil {
			panic(err)
		}
		classic, err := bloom.NewClassicPlan(1_000_000_000, bloom.WithFalsePositiveRate(p))
		if err != nil {
			panic(err)
		}
		fmt.Printf("rate %g: New %.1f bits per key (%.2f GB, k = %d), NewClassic %.1f (%.2f GB, k = %d)\n", p,
			blocked.BitsPerItem, float64(blocked.SizeInBytes)/1e9, blocked.HashCount,
			classic.BitsPerItem, float64(classic.SizeInBytes)/1e9, classic.HashCount)
	}
	// Output:
	// rate 0.01: New 9.9 bits per key (1.24 GB, k = 6), NewClassic 9.6 (1.20 GB, k = 7)
	// rate 0.0001: New 22.0 bits per key (2.75 GB, k = 12), NewClassic 19.2 (2.40 GB, k = 13)
}

// What a Scalable started at a thousand keys costs once it holds a
// million, and the rate it then delivers.
func ExampleNewScalablePlan() {
	p, err := bloom.NewScalablePlan(1000, 1_000_000, bloom.WithFalsePositiveRate(0.01))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d layers, %.1f bits per key, expected rate %.2f %%\n", p.NumTables, p.BitsPerItem, 100*p.FalsePositiveRate)
	// Output:
	// 10 layers, 19.0 bits per key, expected rate 0.86 %
}

// Shards built with the same parameters and seed merge into one filter.
func ExampleFilter_Union() {
	a, _ := bloom.New(10_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(7))
	b, _ := bloom.New(10_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(7))
	a.AddString("from shard a")
	b.AddString("from shard b")
	if err := a.Union(b); err != nil {
		panic(err)
	}
	fmt.Println(a.ContainsString("from shard a"), a.ContainsString("from shard b"))

	c, _ := bloom.New(10_000, bloom.WithFalsePositiveRate(0.01)) // another, random, seed
	fmt.Println(a.Union(c))
	// Output:
	// true true
	// bloom: incompatible filters: different seeds
}

// A filter saved and loaded again answers the same.
func ExampleFilter_MarshalBinary() {
	f, _ := bloom.New(1000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(1))
	f.AddString("kept")
	data, err := f.MarshalBinary()
	if err != nil {
		panic(err)
	}
	var g bloom.Filter // the zero Filter can decode
	if err := g.UnmarshalBinary(data); err != nil {
		panic(err)
	}
	fmt.Println(len(data), g.ContainsString("kept"), g.Len())

	data[100] ^= 1 // damage
	fmt.Println(g.UnmarshalBinary(data))
	// Output:
	// 1340 true 1
	// bloom: corrupt encoding: checksum mismatch
}

// Goroutines may add to one Filter at once, without a lock.
func ExampleFilter_concurrent() {
	f, _ := bloom.New(100_000, bloom.WithFalsePositiveRate(0.001), bloom.WithSeed(1))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				f.AddString(fmt.Sprintf("worker %d item %d", w, i))
			}
		}()
	}
	wg.Wait()
	fmt.Println(f.Len(), f.ContainsString("worker 3 item 999"))
	// Output:
	// 4000 true
}

// A Counting filter shared between goroutines through its locking wrapper.
func ExampleSyncCounting() {
	c, _ := bloom.NewCounting(10_000, bloom.WithFalsePositiveRate(0.01), bloom.WithSeed(1))
	s := bloom.NewSyncCounting(c)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				key := []byte(fmt.Sprintf("w%d-%d", w, i))
				s.Add(key)
				if i%2 == 0 {
					s.Delete(key)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Println(s.Len(), s.ContainsString("w0-1"))
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		panic(err)
	}
	fmt.Println(buf.Len() > 0)
	// Output:
	// 200 true
	// true
}
