package store_test

import (
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo/store"
)

func TestSmoke(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		t.Run("fs="+fsName, func(t *testing.T) {
			dir := t.TempDir()
			var opts []store.Option
			mfs := store.NewMemFS()
			if fsName == "mem" {
				opts = append(opts, store.WithFS(mfs))
			}
			s, err := store.Open(dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			const n = 300000
			for i := range n {
				if err := s.Put([]byte(fmt.Sprint("key", i)), []byte(fmt.Sprint("value", i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.CheckIndex(); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				v, err := s.Get([]byte(fmt.Sprint("key", i)))
				if err != nil || string(v) != fmt.Sprint("value", i) {
					t.Fatalf("get %d: %q %v", i, v, err)
				}
			}
			t.Logf("%+v", s.Stats())
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = store.Open(dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if s.Len() != n {
				t.Fatalf("len %d", s.Len())
			}
			for i := range n {
				v, err := s.Get([]byte(fmt.Sprint("key", i)))
				if err != nil || string(v) != fmt.Sprint("value", i) {
					t.Fatalf("get %d: %q %v", i, v, err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
