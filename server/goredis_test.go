package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestGoRedis drives the server with go-redis, the Go client most services
// use, in RESP2 and RESP3: its typed RedisBloom methods must parse every
// reply.
func TestGoRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp=", proto), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Password = "pw"
			_, addr := startServer(t, cfg)
			ctx := context.Background()
			rdb := redis.NewClient(&redis.Options{Addr: addr, Password: "pw", Protocol: proto, PoolSize: 4})
			defer rdb.Close()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(rdb.Ping(ctx).Err())

			// Cuckoo filters.
			must(rdb.CFReserveWithArgs(ctx, "cf", &redis.CFReserveOptions{Capacity: 1000, BucketSize: 4, MaxIterations: 100, Expansion: 2}).Err())
			for i := range 100 {
				added, err := rdb.CFAdd(ctx, "cf", fmt.Sprint("url", i)).Result()
				if err != nil || !added {
					t.Fatalf("CFAdd: %v, %v", added, err)
				}
			}
			if ok, _ := rdb.CFAddNX(ctx, "cf", "url1").Result(); ok {
				t.Fatal("CFAddNX of a present item added it")
			}
			if ok, err := rdb.CFExists(ctx, "cf", "url5").Result(); err != nil || !ok {
				t.Fatalf("CFExists: %v, %v", ok, err)
			}
			ex, err := rdb.CFMExists(ctx, "cf", "url1", "url2", "nope").Result()
			if err != nil || !ex[0] || !ex[1] {
				t.Fatalf("CFMExists: %v, %v", ex, err)
			}
			if n, err := rdb.CFCount(ctx, "cf", "url3").Result(); err != nil || n < 1 || n > 2 { // 2 when another item shares url3's fingerprint in its buckets
				t.Fatalf("CFCount: %v, %v", n, err)
			}
			if ok, err := rdb.CFDel(ctx, "cf", "url3").Result(); err != nil || !ok {
				t.Fatalf("CFDel: %v, %v", ok, err)
			}
			info, err := rdb.CFInfo(ctx, "cf").Result()
			if err != nil || info.NumItemsInserted != 99 || info.NumItemsDeleted != 1 || info.BucketSize != 4 ||
				info.ExpansionRate != 2 || info.MaxIteration != 100 || info.NumFilters != 1 || info.Size <= 0 {
				t.Fatalf("CFInfo: %+v, %v", info, err)
			}
			ins, err := rdb.CFInsert(ctx, "cf2", &redis.CFInsertOptions{Capacity: 100}, "a", "b").Result()
			if err != nil || len(ins) != 2 || !ins[0] {
				t.Fatalf("CFInsert: %v, %v", ins, err)
			}
			nx, err := rdb.CFInsertNX(ctx, "cf2", nil, "a", "c").Result()
			if err != nil || len(nx) != 2 || nx[0] != 0 || nx[1] != 1 {
				t.Fatalf("CFInsertNX: %v, %v", nx, err)
			}
			if _, err := rdb.CFInsert(ctx, "nope", &redis.CFInsertOptions{NoCreate: true}, "a").Result(); err == nil || err.Error() != "ERR not found" {
				t.Fatalf("CFInsert NOCREATE: %v", err)
			}

			// A dump through go-redis loads back into an equal filter.
			var chunks []redis.ScanDump
			for iter := int64(0); ; {
				sd, err := rdb.CFScanDump(ctx, "cf", iter).Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					t.Fatal(err)
				}
				if sd.Iter == 0 {
					break
				}
				chunks = append(chunks, sd)
				iter = sd.Iter
			}
			for _, c := range chunks {
				must(rdb.CFLoadChunk(ctx, "cf-copy", c.Iter, c.Data).Err())
			}
			copyInfo, err := rdb.CFInfo(ctx, "cf-copy").Result()
			if err != nil || copyInfo != info {
				t.Fatalf("CFInfo of the copy: %+v, want %+v (%v)", copyInfo, info, err)
			}

			// Bloom filters.
			must(rdb.BFReserve(ctx, "bf", 0.001, 1000).Err())
			if ok, err := rdb.BFAdd(ctx, "bf", "x").Result(); err != nil || !ok {
				t.Fatalf("BFAdd: %v, %v", ok, err)
			}
			madd, err := rdb.BFMAdd(ctx, "bf", "x", "y").Result()
			if err != nil || madd[0] || !madd[1] {
				t.Fatalf("BFMAdd: %v, %v", madd, err)
			}
			if ok, _ := rdb.BFExists(ctx, "bf", "y").Result(); !ok {
				t.Fatal("BFExists")
			}
			if n, _ := rdb.BFCard(ctx, "bf").Result(); n != 2 {
				t.Fatalf("BFCard: %d", n)
			}
			binfo, err := rdb.BFInfo(ctx, "bf").Result()
			if err != nil || binfo.Capacity != 1000 || binfo.ItemsInserted != 2 || binfo.Filters != 1 || binfo.ExpansionRate != 2 {
				t.Fatalf("BFInfo: %+v, %v", binfo, err)
			}
			if c, err := rdb.BFInfoCapacity(ctx, "bf").Result(); err != nil || c.Capacity != 1000 {
				t.Fatalf("BFInfoCapacity: %+v, %v", c, err)
			}
			must(rdb.BFReserveNonScaling(ctx, "bf-fixed", 0.01, 10).Err())
			bins, err := rdb.BFInsert(ctx, "bf3", &redis.BFInsertOptions{Capacity: 50, Error: 0.01}, "p", "q").Result()
			if err != nil || len(bins) != 2 {
				t.Fatalf("BFInsert: %v, %v", bins, err)
			}

			// Generic commands.
			if n, _ := rdb.DBSize(ctx).Result(); n != 6 {
				t.Fatalf("DBSize: %d", n)
			}
			if typ, _ := rdb.Type(ctx, "cf").Result(); typ != "MBbloomCF" {
				t.Fatalf("Type: %q", typ)
			}
			var scanned []string
			iter := rdb.Scan(ctx, 0, "cf*", 2).Iterator()
			for iter.Next(ctx) {
				scanned = append(scanned, iter.Val())
			}
			if iter.Err() != nil || len(scanned) != 3 {
				t.Fatalf("Scan: %v, %v", scanned, iter.Err())
			}
			must(rdb.Rename(ctx, "cf2", "cf3").Err())
			if n, _ := rdb.Del(ctx, "cf3", "bf3").Result(); n != 2 {
				t.Fatalf("Del: %d", n)
			}
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err == nil || err.Error() != "ERR unknown command 'set', with args beginning with: 'k' 'v' " {
				t.Fatalf("SET: %v", err)
			}
		})
	}
}
