package guard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/guard"
)

// users is a table for the examples: a map behind a mutex, standing for a
// database.
type users struct {
	mu      sync.Mutex
	rows    map[string]string
	queries int
}

func (u *users) load(_ context.Context, id []byte) (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.queries++
	if name, ok := u.rows[string(id)]; ok {
		return name, nil
	}
	return "", fmt.Errorf("user %s: %w", id, guard.ErrNotFound)
}

func (u *users) insert(id, name string) func(context.Context) error {
	return func(context.Context) error {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.rows[id] = name
		return nil
	}
}

func (u *users) delete(id string) func(context.Context) error {
	return func(context.Context) error {
		u.mu.Lock()
		defer u.mu.Unlock()
		if _, ok := u.rows[id]; !ok {
			return guard.ErrNotFound // nothing deleted: the filter must keep its copies
		}
		delete(u.rows, id)
		return nil
	}
}

func (u *users) scan(_ context.Context, yield func([]byte) error) error {
	u.mu.Lock()
	ids := make([]string, 0, len(u.rows))
	for id := range u.rows {
		ids = append(ids, id)
	}
	u.mu.Unlock()
	for _, id := range ids {
		if err := yield([]byte(id)); err != nil {
			return err
		}
	}
	return nil
}

func Example() {
	ctx := context.Background()
	db := &users{rows: map[string]string{"ada": "Ada Lovelace", "alan": "Alan Turing"}}

	// A filter of every user id, sized for the table's growth.
	f, err := cuckoo.NewConcurrent(1_000_000, cuckoo.WithFalsePositiveRate(0.001), cuckoo.WithSeed(1))
	if err != nil {
		panic(err)
	}
	if _, err := guard.Fill(ctx, guard.Local(f), db.scan); err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Local(f), db.load)
	if err != nil {
		panic(err)
	}

	// Writes go through the guard: the filter learns of a row before it
	// can be read, and forgets it only after it is gone.
	if err := g.Insert(ctx, []byte("grace"), db.insert("grace", "Grace Hopper")); err != nil {
		panic(err)
	}
	if err := g.Remove(ctx, []byte("alan"), db.delete("alan")); err != nil {
		panic(err)
	}

	name, err := g.Get(ctx, []byte("grace"))
	fmt.Println(name, err)
	for i := range 1000 {
		g.Get(ctx, fmt.Appendf(nil, "made-up-%d", i)) // a flood of ids that do not exist
	}
	_, err = g.Get(ctx, []byte("alan"))
	fmt.Println(errors.Is(err, guard.ErrNotFound))
	s := g.Stats()
	fmt.Printf("lookups %d, database queries %d\n", s.Lookups, db.queries)
	// Output:
	// Grace Hopper <nil>
	// true
	// lookups 1002, database queries 1
}

// A service that already runs starts guarding its table with a Rebuild
// from a scan: until it completes, lookups go to the database; writes
// during it reach the fresh filter.
func ExampleGuard_Rebuild() {
	ctx := context.Background()
	db := &users{rows: map[string]string{"ada": "Ada Lovelace"}}
	g, err := guard.New[string](nil, db.load) // no filter yet
	if err != nil {
		panic(err)
	}

	fresh, err := cuckoo.NewConcurrent(1_000_000, cuckoo.WithSeed(1))
	if err != nil {
		panic(err)
	}
	if err := g.Rebuild(ctx, guard.Local(fresh), db.scan); err != nil {
		panic(err)
	}
	_, err = g.Get(ctx, []byte("nobody"))
	fmt.Println(err, db.queries)
	// Output:
	// guard: not found 0
}

func ExampleGuard_GetMany() {
	ctx := context.Background()
	db := &users{rows: map[string]string{"ada": "Ada Lovelace", "alan": "Alan Turing"}}
	f, _ := cuckoo.NewConcurrent(1000, cuckoo.WithSeed(1))
	guard.Fill(ctx, guard.Local(f), db.scan)
	g, err := guard.New(guard.Local(f), db.load)
	if err != nil {
		panic(err)
	}

	ids := [][]byte{[]byte("ada"), []byte("nobody"), []byte("alan")}
	names, errs := make([]string, len(ids)), make([]error, len(ids))
	if err := g.GetMany(ctx, ids, names, errs); err != nil {
		panic(err)
	}
	for i := range ids {
		fmt.Printf("%s: %q %v\n", ids[i], names[i], errs[i])
	}
	// Output:
	// ada: "Ada Lovelace" <nil>
	// nobody: "" guard: not found
	// alan: "Alan Turing" <nil>
}
