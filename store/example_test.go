package store_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/dedupkit/cuckoo/store"
)

func Example() {
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := store.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	s.Put([]byte("apple"), []byte("red"))
	s.Put([]byte("banana"), []byte("yellow"))
	s.Put([]byte("apple"), []byte("green")) // overwrites; apple keeps its place
	s.Delete([]byte("banana"))

	v, _ := s.Get([]byte("apple"))
	fmt.Printf("apple: %s\n", v)
	_, err = s.Get([]byte("banana"))
	fmt.Println("banana:", errors.Is(err, store.ErrNotFound))
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	// Reopening reads the log back.
	s, err = store.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	fmt.Println("keys:", s.Len())
	// Output:
	// apple: green
	// banana: true
	// keys: 1
}

func ExampleStore_PutIfAbsent() {
	dir, _ := os.MkdirTemp("", "store-example-")
	defer os.RemoveAll(dir)
	s, err := store.Open(dir, store.WithSync(store.SyncNever))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for _, line := range []string{"a", "b", "a", "c", "b"} {
		if first, _ := s.PutIfAbsent([]byte(line), nil); first {
			fmt.Print(line, " ")
		}
	}
	fmt.Println()
	// Output: a b c
}

func ExampleStore_Range() {
	dir, _ := os.MkdirTemp("", "store-example-")
	defer os.RemoveAll(dir)
	s, err := store.Open(dir, store.WithSync(store.SyncNever))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	s.Put([]byte("one"), []byte("1"))
	s.Put([]byte("two"), []byte("2"))
	s.Put([]byte("three"), []byte("3"))
	s.Put([]byte("one"), []byte("uno")) // keeps its place
	s.Delete([]byte("two"))
	s.Put([]byte("two"), []byte("dos")) // deleted and put again: last
	s.Compact()                         // keeps the order
	s.Range(func(k, v []byte) bool {
		fmt.Printf("%s=%s ", k, v)
		return true
	})
	fmt.Println()
	// Output: one=uno three=3 two=dos
}
