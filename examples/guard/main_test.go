package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestService(t *testing.T) {
	var out bytes.Buffer
	sv, err := start(context.Background(), filepath.Join(t.TempDir(), "u.db"), 500, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.st.db.Close()
	srv := httptest.NewServer(sv)
	defer srv.Close()
	if err := check(srv.Client(), srv.URL); err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Get(srv.URL + "/users/u000000007")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a seeded user: %v %v", resp.Status, err)
	}
	resp.Body.Close()
	q := sv.st.queries.Load()
	r, err := askAbsent(srv.Client(), srv.URL, 2000, 4)
	if err != nil || r.unexpected != 0 {
		t.Fatalf("absent ids: %+v, %v", r, err)
	}
	if extra := sv.st.queries.Load() - q; extra > 20 {
		t.Errorf("%d of 2000 absent ids reached the database through a 0.1 %% filter", extra)
	}
}

func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"demo", "-dir", t.TempDir(), "-users", "1000", "-n", "2000", "-c", "4"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"without guard", "with guard", "database queries saved", "measured rate"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}
