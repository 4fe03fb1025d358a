package option_test

import (
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo/internal/option"
)

type config struct{ a, b int }

type opt func(*config) error

func TestApply(t *testing.T) {
	bad := errors.New("bad")
	var c config
	err := option.Apply(&c, []opt{
		func(c *config) error { c.a = 1; return nil },
		nil,
		func(*config) error { return bad },
		func(c *config) error { c.b = 2; return nil },
	})
	if !errors.Is(err, bad) || c.a != 1 || c.b != 0 {
		t.Fatalf("Apply = %v, config %+v: want the first error, and the options after it not applied", err, c)
	}
	if err := option.Apply[config, opt](&c, nil); err != nil {
		t.Fatal(err)
	}
}
