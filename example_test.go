package cuckoo_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/dedupkit/cuckoo"
)

func Example() {
	// A filter for up to a million keys, with the default shape: 4-slot
	// buckets, 16-bit fingerprints: 2.1 MB, 0.012% false positives when full.
	f, err := cuckoo.New(1_000_000, cuckoo.WithSeed(1))
	if err != nil {
		panic(err)
	}
	f.AddString("https://example.com/")
	fmt.Println(f.ContainsString("https://example.com/"))
	fmt.Println(f.ContainsString("https://example.org/"))
	f.DeleteString("https://example.com/")
	fmt.Println(f.ContainsString("https://example.com/"))
	// Output:
	// true
	// false
	// false
}

func ExampleNew() {
	// Choose the fingerprint from the false-positive rate you can accept.
	f, err := cuckoo.New(1_100_000, cuckoo.WithFalsePositiveRate(0.002))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d-bit fingerprints, %.2f MB\n", f.FingerprintBits(), float64(f.SizeInBytes())/1e6)
	// Output:
	// 12-bit fingerprints, 1.74 MB
}

func ExampleNewPlan() {
	// Compare shapes before building anything.
	for _, bits := range []int{8, 12, 16} {
		p, err := cuckoo.NewPlan(10_000_000, cuckoo.WithFingerprintBits(bits))
		if err != nil {
			panic(err)
		}
		fmt.Printf("f=%d: %.1f MB, %.2f bits/item, %.4f%% false positives at capacity\n",
			bits, float64(p.SizeInBytes)/1e6, p.BitsPerItem, 100*p.FalsePositiveRate)
	}
	// Output:
	// f=8: 10.6 MB, 8.51 bits/item, 2.9115% false positives at capacity
	// f=12: 15.8 MB, 12.63 bits/item, 0.1854% false positives at capacity
	// f=16: 21.1 MB, 16.84 bits/item, 0.0116% false positives at capacity
}

func ExampleNew_invalid() {
	_, err := cuckoo.New(1000, cuckoo.WithBucketSize(300))
	fmt.Println(err)
	fmt.Println(errors.Is(err, cuckoo.ErrInvalidParameter))
	// Output:
	// cuckoo: invalid parameter: bucket size 300 outside [1, 255]
	// true
}

func ExampleFilter_Add_duplicates() {
	// Add is a multiset insert: a key added n times is counted n times, and
	// copies never fill the table.
	f, _ := cuckoo.New(100, cuckoo.WithSeed(1))
	for i := 0; i < 1000; i++ {
		if err := f.AddString("popular"); err != nil {
			panic(err)
		}
	}
	fmt.Println(f.CountString("popular"), f.Len())
	f.DeleteString("popular")
	fmt.Println(f.CountString("popular"))
	// Output:
	// 1000 1000
	// 999
}

func ExampleFilter_AddUnique() {
	// AddUnique gives set semantics: dedup a stream.
	f, _ := cuckoo.New(100, cuckoo.WithSeed(1))
	for _, word := range []string{"a", "b", "a", "c", "b", "a"} {
		if added, err := f.AddUniqueString(word); err != nil {
			panic(err)
		} else if added {
			fmt.Print(word, " ")
		}
	}
	fmt.Println()
	// Output:
	// a b c
}

func ExampleFilter_Add_full() {
	f, _ := cuckoo.New(10, cuckoo.WithSeed(1))
	var added int
	for i := 0; ; i++ {
		err := f.AddString(fmt.Sprint("key-", i))
		if errors.Is(err, cuckoo.ErrFull) {
			break // nothing was lost: every key added so far is still there
		}
		added++
	}
	fmt.Println(added >= 10, f.Len() == uint64(added))
	// Output:
	// true true
}

func ExampleFilter_MarshalBinary() {
	f, _ := cuckoo.New(1000, cuckoo.WithSeed(1))
	f.AddString("saved")
	data, err := f.MarshalBinary() // or f.WriteTo(file)
	if err != nil {
		panic(err)
	}

	var g cuckoo.Filter // the zero Filter can decode
	if err := g.UnmarshalBinary(data); err != nil {
		panic(err)
	}
	fmt.Println(g.ContainsString("saved"), g.Len())

	data[100] ^= 1 // damage is detected, never silently loaded
	err = g.UnmarshalBinary(data)
	fmt.Println(errors.Is(err, cuckoo.ErrCorrupt))
	// Output:
	// true 1
	// true
}

func ExampleFilter_WriteTo() {
	f, _ := cuckoo.New(1000, cuckoo.WithSeed(1))
	f.AddString("streamed")
	var file bytes.Buffer // an *os.File in real use
	if _, err := f.WriteTo(&file); err != nil {
		panic(err)
	}
	var g cuckoo.Filter
	if _, err := g.ReadFrom(&file); err != nil {
		panic(err)
	}
	fmt.Println(g.ContainsString("streamed"))
	// Output:
	// true
}

// Code written against cuckoo.Set takes a fixed, a growing or a
// concurrent filter alike.
func ExampleSet() {
	dedup := func(seen cuckoo.Set, lines []string) (fresh []string) {
		for _, l := range lines {
			if added, err := seen.AddUnique([]byte(l)); err == nil && added {
				fresh = append(fresh, l)
			}
		}
		return fresh
	}
	lines := []string{"a", "b", "a", "c", "b"}
	f, _ := cuckoo.New(100, cuckoo.WithSeed(1))
	s, _ := cuckoo.NewScalable(10, cuckoo.WithSeed(1))
	c, _ := cuckoo.NewConcurrent(100, cuckoo.WithSeed(1))
	for _, seen := range []cuckoo.Set{f, s, c} {
		fmt.Println(dedup(seen, lines))
	}
	// Output:
	// [a b c]
	// [a b c]
	// [a b c]
}
