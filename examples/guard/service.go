package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/guard"
	_ "modernc.org/sqlite"
)

// User is a row of the users table.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// store is the users table in SQLite, counting its queries.
type store struct {
	db      *sql.DB
	queries atomic.Int64
}

func openStore(path string) (*store, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		db.Close()
		return nil, err
	}
	return &store{db: db}, nil
}

// load reads one user: the guard's Loader.
func (s *store) load(ctx context.Context, id []byte) (User, error) {
	s.queries.Add(1)
	u := User{ID: string(id)}
	err := s.db.QueryRowContext(ctx, `SELECT name FROM users WHERE id = ?`, u.ID).Scan(&u.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("user %s: %w", id, guard.ErrNotFound)
	}
	return u, err
}

// scan yields every user's id: Rebuild's scan, one SELECT.
func (s *store) scan(ctx context.Context, yield func(key []byte) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM users`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var id []byte
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return err
		}
		if err := yield(id); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *store) count(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM users`).Scan(&n)
	return n, err
}

// service serves /users/{id} (GET, PUT, DELETE), /stats and /rebuild,
// with a guard in front of the table, or without one (direct).
type service struct {
	st       *store
	g        *guard.Guard[User]
	direct   bool
	capacity uint64
}

// newFilter returns an empty filter for the users table.
func (sv *service) newFilter() guard.Filter {
	f, err := cuckoo.NewConcurrent(sv.capacity, cuckoo.WithFalsePositiveRate(0.001))
	if err != nil {
		panic(err) // the capacity comes from a flag checked at start
	}
	return guard.Local(f)
}

func (sv *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	switch {
	case r.URL.Path == "/stats":
		writeJSON(w, http.StatusOK, map[string]any{
			"queries": sv.st.queries.Load(),
			"guard":   sv.g.Stats(),
			"rate":    sv.g.Stats().FalsePositiveRate(),
		})
	case r.URL.Path == "/rebuild" && r.Method == http.MethodPost:
		if err := sv.g.Rebuild(ctx, sv.newFilter(), sv.st.scan); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(r.URL.Path, "/users/"):
		id := []byte(strings.TrimPrefix(r.URL.Path, "/users/"))
		if len(id) == 0 {
			http.NotFound(w, r)
			return
		}
		switch r.Method {
		case http.MethodGet:
			sv.get(w, r, id)
		case http.MethodPut:
			name := r.URL.Query().Get("name")
			err := sv.g.Insert(ctx, id, func(ctx context.Context) error {
				_, err := sv.st.db.ExecContext(ctx, `INSERT INTO users (id, name) VALUES (?, ?)`, string(id), name)
				return err
			})
			if err != nil {
				http.Error(w, err.Error(), http.StatusConflict)
				return
			}
			writeJSON(w, http.StatusCreated, User{ID: string(id), Name: name})
		case http.MethodDelete:
			err := sv.g.Remove(ctx, id, func(ctx context.Context) error {
				res, err := sv.st.db.ExecContext(ctx, `DELETE FROM users WHERE id = ?`, string(id))
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n == 0 {
					return guard.ErrNotFound // deleted nothing: the filter must not lose a copy
				}
				return nil
			})
			switch {
			case errors.Is(err, guard.ErrNotFound):
				http.NotFound(w, r)
			case err != nil && !errors.Is(err, guard.ErrStale):
				http.Error(w, err.Error(), http.StatusInternalServerError)
			default:
				w.WriteHeader(http.StatusNoContent)
			}
		default:
			w.Header().Set("Allow", "GET, PUT, DELETE")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	default:
		http.NotFound(w, r)
	}
}

func (sv *service) get(w http.ResponseWriter, r *http.Request, id []byte) {
	var u User
	var err error
	if sv.direct {
		u, err = sv.st.load(r.Context(), id)
	} else {
		u, err = sv.g.Get(r.Context(), id)
	}
	switch {
	case errors.Is(err, guard.ErrNotFound):
		http.NotFound(w, r)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		writeJSON(w, http.StatusOK, u)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
