package store_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

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

// Repair cuts a damaged last record that Open refuses, keeping the
// bytes it cuts in a file beside the log file.
func ExampleRepair() {
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	s.Put([]byte("a"), []byte("1"))
	s.Put([]byte("b"), []byte("2"))
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
	// One bit of the last record flipped, with no checkpoint covering it
	// (as after a crash).
	os.Remove(filepath.Join(dir, "INDEX"))
	logFile := filepath.Join(dir, "0000000000000000.log")
	b, _ := os.ReadFile(logFile)
	b[len(b)-1] ^= 1
	os.WriteFile(logFile, b, 0o644)

	_, err = store.Open(dir)
	fmt.Println("Open:", errors.Is(err, store.ErrCorrupt))
	rep, err := store.Repair(dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("cut at %d: %d bytes, %d record, kept in %s\n", rep.Offset, rep.Bytes, rep.Records, filepath.Base(rep.Copy))
	s, err = store.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	v, _ := s.Get([]byte("a"))
	fmt.Printf("a: %s, keys: %d\n", v, s.Len())
	// Output:
	// Open: true
	// cut at 53: 13 bytes, 1 record, kept in 0000000000000000.log.cut-53
	// a: 1, keys: 1
}
