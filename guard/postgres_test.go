package guard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/guard"
	"github.com/dedupkit/cuckoo/guard/internal/pgtest"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgTable is a table of rows in PostgreSQL: each write is a transaction
// that stays open for a random moment before it commits, so that commits
// interleave with lookups, scans and the guard's filter updates.
type pgTable struct {
	pool     *pgxpool.Pool
	maxHold  time.Duration
	paginate bool // scan by key ranges, one statement per page
	loadsN   atomic.Int64
}

func newPGTable(t *testing.T, seedRows int) *pgTable {
	t.Helper()
	srv := pgtest.New(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 40
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE rows (id text PRIMARY KEY, v text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO rows SELECT 'row:' || lpad(i::text, 6, '0'), 'seed' FROM generate_series(0, $1 - 1) i`, seedRows); err != nil {
		t.Fatal(err)
	}
	return &pgTable{pool: pool, maxHold: 2 * time.Millisecond}
}

// tx runs fn in a transaction held open a random moment before commit.
func (p *pgTable) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		time.Sleep(time.Duration(rand.Int64N(int64(p.maxHold))))
		return nil
	})
}

func (p *pgTable) insert(ctx context.Context, key []byte) error {
	err := p.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO rows (id, v) VALUES ($1, $2)`, string(key), "v")
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		return errExists
	}
	return err
}

func (p *pgTable) remove(ctx context.Context, key []byte) error {
	return p.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM rows WHERE id = $1`, string(key))
		if err == nil && tag.RowsAffected() == 0 {
			return fmt.Errorf("delete %s: %w", key, guard.ErrNotFound)
		}
		return err
	})
}

func (p *pgTable) load(ctx context.Context, key []byte) (string, error) {
	p.loadsN.Add(1)
	var v string
	err := p.pool.QueryRow(ctx, `SELECT v FROM rows WHERE id = $1`, string(key)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("row %s: %w", key, guard.ErrNotFound)
	}
	return v, err
}

func (p *pgTable) exists(ctx context.Context, key []byte) (bool, error) {
	var ok bool
	err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM rows WHERE id = $1)`, string(key)).Scan(&ok)
	return ok, err
}

func (p *pgTable) loads() int64 { return p.loadsN.Load() }

// scan reads every key with one SELECT (one snapshot), or, paginated, by
// key ranges of 50 rows, each page its own statement and snapshot.
func (p *pgTable) scan(ctx context.Context, yield func(key []byte) error) error {
	if !p.paginate {
		rows, err := p.pool.Query(ctx, `SELECT id FROM rows`)
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
	after := ""
	for {
		rows, err := p.pool.Query(ctx, `SELECT id FROM rows WHERE id > $1 ORDER BY id LIMIT 50`, after)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		for _, id := range ids {
			if err := yield([]byte(id)); err != nil {
				return err
			}
		}
		after = ids[len(ids)-1]
	}
}

// TestPostgresConcurrent: transactions insert and delete rows of a real
// PostgreSQL table through the guard while readers look up committed rows
// and keys that never existed, and Rebuilds fill fresh sets from SELECT
// scans (one snapshot, or pages in key order). No committed row is ever
// reported missing, and absent keys reach the database at the filter's
// rate. With redis-server installed, the same runs with two processes
// sharing a Shared set.
func TestPostgresConcurrent(t *testing.T) {
	testlong.Skip(t)
	for _, tc := range []struct {
		set      string
		paginate bool
	}{{"local", false}, {"local", true}, {"shared", false}} {
		t.Run(fmt.Sprintf("set=%s/paginate=%v", tc.set, tc.paginate), func(t *testing.T) {
			ctx := context.Background()
			db := newPGTable(t, 1000)
			db.paginate = tc.paginate
			w := &workload{db: db, keys: 1500, writers: 12, readers: 6, writes: 400, rebuilds: 6, seed: 31, minChecked: 500}
			switch tc.set {
			case "local":
				f := newFilter(t, 4000)
				if _, err := guard.Fill(ctx, guard.Local(f), db.scan); err != nil {
					t.Fatal(err)
				}
				g := newGuard(t, guard.Local(f), w.loader())
				w.guards = []*guard.Guard[string]{g}
				w.rebuild = func(ctx context.Context, _ int) error {
					return g.Rebuild(ctx, guard.Local(newFilter(t, 4000)), db.scan)
				}
			case "shared":
				fl := newFleet(t, 2)
				first := newGeneration(t, fl.clients[0], "pg", 4000)
				if _, err := guard.Fill(ctx, guard.Shared(first), db.scan); err != nil {
					t.Fatal(err)
				}
				for _, c := range fl.clients {
					// The grace period is well above the longest write (a
					// transaction held up to 2 ms, on a busy machine).
					w.guards = append(w.guards, newGuard(t, openShared(t, c, "pg"), w.loader(), guard.WithGrace(500*time.Millisecond)))
				}
				w.rebuilds = 3
				w.rebuild = func(ctx context.Context, round int) error {
					c := fl.clients[round%2]
					fresh := newGeneration(t, c, fmt.Sprintf("pg@%d", round+1), 4000)
					return w.guards[round%2].Rebuild(ctx, guard.Shared(fresh), db.scan)
				}
			}
			w.run(t)
			for _, err := range w.rebuildErrs {
				t.Errorf("Rebuild: %v", err)
			}
			if w.checked.Load() < 500 {
				t.Errorf("only %d lookups of committed rows checked", w.checked.Load())
			}
			w.checkRate(t, 0.01)
			for i, g := range w.guards {
				s := g.Stats()
				t.Logf("guard %d: %+v; measured rate %.4f", i, s, s.FalsePositiveRate())
			}
		})
	}
}
