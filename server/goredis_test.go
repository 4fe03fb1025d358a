package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// goRedisClient starts a server and returns a go-redis client of the
// given protocol on it.
func goRedisClient(t *testing.T, proto int) *redis.Client {
	cfg := testConfig(t)
	cfg.Password = "pw"
	_, addr := startServer(t, cfg)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: "pw", Protocol: proto, PoolSize: 4})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// scanDump runs a SCANDUMP through go-redis from iterator 0 to the end
// and returns the chunks.
func scanDump(t *testing.T, next func(iter int64) *redis.ScanDumpCmd) []redis.ScanDump {
	t.Helper()
	var chunks []redis.ScanDump
	for iter := int64(0); ; {
		sd, err := next(iter).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		if sd.Iter == 0 {
			return chunks
		}
		chunks = append(chunks, sd)
		iter = sd.Iter
	}
}

// TestGoRedisCuckoo drives the CF.* commands through go-redis's typed
// probabilistic API, in RESP2 and RESP3: every method parses its reply
// into the type it documents (bool for the yes/no commands, []bool for
// CF.MEXISTS and CF.INSERT, []int64 for CF.INSERTNX, int64 for CF.COUNT,
// the CFInfo struct, ScanDump), with the values RedisBloom 8 gives.
func TestGoRedisCuckoo(t *testing.T) {
	parallel(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp=", proto), func(t *testing.T) {
			ctx := context.Background()
			rdb := goRedisClient(t, proto)

			// Every option RedisBloom takes, BUCKETSIZE 3 among them.
			must(t, rdb.CFReserveWithArgs(ctx, "cf", &redis.CFReserveOptions{Capacity: 2048, BucketSize: 3, MaxIterations: 15, Expansion: 2}).Err())
			must(t, rdb.CFReserve(ctx, "plain", 1000).Err())
			must(t, rdb.CFReserveExpansion(ctx, "exp", 1000, 4).Err())
			must(t, rdb.CFReserveBucketSize(ctx, "b1", 1000, 1).Err())
			must(t, rdb.CFReserveBucketSize(ctx, "b255", 1000, 255).Err())
			must(t, rdb.CFReserveMaxIterations(ctx, "mi", 1000, 65535).Err())
			if err := rdb.CFReserve(ctx, "cf", 10).Err(); err == nil || err.Error() != "ERR item exists" {
				t.Fatalf("CFReserve of an existing key: %v", err)
			}
			if err := rdb.CFReserveBucketSize(ctx, "bad", 1000, 256).Err(); err == nil || err.Error() != "BUCKETSIZE: value must be in the range [1, 255]" {
				t.Fatalf("CFReserveBucketSize 256: %v", err)
			}

			for i := range 100 {
				for _, k := range []string{"cf", "b1", "b255"} {
					added, err := rdb.CFAdd(ctx, k, fmt.Sprint("url", i)).Result()
					if err != nil || !added {
						t.Fatalf("CFAdd %s: %v, %v", k, added, err)
					}
				}
			}
			if added, err := rdb.CFAdd(ctx, "cf", "url1").Result(); err != nil || !added {
				t.Fatalf("CFAdd of a present item (a multiset add): %v, %v", added, err)
			}
			if added, err := rdb.CFAddNX(ctx, "cf", "url1").Result(); err != nil || added {
				t.Fatalf("CFAddNX of a present item: %v, %v", added, err)
			}
			if added, err := rdb.CFAddNX(ctx, "cf", "new").Result(); err != nil || !added {
				t.Fatalf("CFAddNX of a new item: %v, %v", added, err)
			}
			for _, k := range []string{"cf", "b1", "b255"} {
				if ok, err := rdb.CFExists(ctx, k, "url5").Result(); err != nil || !ok {
					t.Fatalf("CFExists %s: %v, %v", k, ok, err)
				}
			}
			if ok, err := rdb.CFExists(ctx, "nokey", "url5").Result(); err != nil || ok {
				t.Fatalf("CFExists of a missing key: %v, %v", ok, err)
			}
			ex, err := rdb.CFMExists(ctx, "cf", "url1", "url2", "never-added").Result()
			if err != nil || !slices.Equal(ex[:2], []bool{true, true}) || len(ex) != 3 {
				t.Fatalf("CFMExists: %v, %v", ex, err)
			}
			if n, err := rdb.CFCount(ctx, "cf", "url1").Result(); err != nil || n < 2 {
				t.Fatalf("CFCount of an item added twice: %v, %v", n, err)
			}
			if n, err := rdb.CFCount(ctx, "nokey", "url1").Result(); err != nil || n != 0 {
				t.Fatalf("CFCount of a missing key: %v, %v", n, err)
			}
			if ok, err := rdb.CFDel(ctx, "cf", "url3").Result(); err != nil || !ok {
				t.Fatalf("CFDel: %v, %v", ok, err)
			}
			if _, err := rdb.CFDel(ctx, "nokey", "x").Result(); err == nil || err.Error() != "Not found" {
				t.Fatalf("CFDel of a missing key: %v", err)
			}

			info, err := rdb.CFInfo(ctx, "cf").Result()
			if err != nil || info.NumItemsInserted != 101 || info.NumItemsDeleted != 1 || info.BucketSize != 3 ||
				info.ExpansionRate != 2 || info.MaxIteration != 15 || info.NumFilters != 1 || info.Size <= 0 || info.NumBuckets <= 0 {
				t.Fatalf("CFInfo: %+v, %v", info, err)
			}
			if info, err := rdb.CFInfo(ctx, "b255").Result(); err != nil || info.BucketSize != 255 || info.NumItemsInserted != 100 {
				t.Fatalf("CFInfo of BUCKETSIZE 255: %+v, %v", info, err)
			}

			ins, err := rdb.CFInsert(ctx, "ins", &redis.CFInsertOptions{Capacity: 100}, "a", "b").Result()
			if err != nil || !slices.Equal(ins, []bool{true, true}) {
				t.Fatalf("CFInsert: %v, %v", ins, err)
			}
			nx, err := rdb.CFInsertNX(ctx, "ins", nil, "a", "c").Result()
			if err != nil || !slices.Equal(nx, []int64{0, 1}) {
				t.Fatalf("CFInsertNX: %v, %v", nx, err)
			}
			if _, err := rdb.CFInsert(ctx, "nokey", &redis.CFInsertOptions{NoCreate: true}, "a").Result(); err == nil || err.Error() != "ERR not found" {
				t.Fatalf("CFInsert NOCREATE: %v", err)
			}

			// A dump loads back into a filter with the same CF.INFO, Size
			// included.
			chunks := scanDump(t, func(iter int64) *redis.ScanDumpCmd { return rdb.CFScanDump(ctx, "cf", iter) })
			must(t, rdb.Del(ctx, "cf").Err())
			for _, c := range chunks {
				must(t, rdb.CFLoadChunk(ctx, "cf", c.Iter, c.Data).Err())
			}
			after, err := rdb.CFInfo(ctx, "cf").Result()
			if err != nil || after != info {
				t.Fatalf("CFInfo after a dump and load: %+v, want %+v (%v)", after, info, err)
			}
			if ok, _ := rdb.CFExists(ctx, "cf", "url7").Result(); !ok {
				t.Fatal("an item is missing after a dump and load")
			}
		})
	}
}

// TestGoRedisBloom is TestGoRedisCuckoo for the BF.* commands: bool for
// BF.ADD and BF.EXISTS, []bool for BF.MADD, BF.MEXISTS and BF.INSERT, int64
// for BF.CARD, the BFInfo struct for BF.INFO and each of its fields.
func TestGoRedisBloom(t *testing.T) {
	parallel(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp=", proto), func(t *testing.T) {
			ctx := context.Background()
			rdb := goRedisClient(t, proto)

			must(t, rdb.BFReserve(ctx, "bf", 0.001, 1000).Err())
			must(t, rdb.BFReserveExpansion(ctx, "exp", 0.01, 1000, 4).Err())
			must(t, rdb.BFReserveNonScaling(ctx, "fixed", 0.01, 3).Err())
			must(t, rdb.BFReserveWithArgs(ctx, "args", &redis.BFReserveOptions{Error: 0.01, Capacity: 500, Expansion: 3}).Err())
			if err := rdb.BFReserve(ctx, "bf", 0.01, 10).Err(); err == nil || err.Error() != "ERR item exists" {
				t.Fatalf("BFReserve of an existing key: %v", err)
			}
			if err := rdb.BFReserve(ctx, "bad", 0.01, 0).Err(); err == nil || err.Error() != "ERR capacity must be in the range [1, 1099511627776]" {
				t.Fatalf("BFReserve of capacity 0: %v", err)
			}

			if ok, err := rdb.BFAdd(ctx, "bf", "x").Result(); err != nil || !ok {
				t.Fatalf("BFAdd: %v, %v", ok, err)
			}
			if ok, err := rdb.BFAdd(ctx, "bf", "x").Result(); err != nil || ok {
				t.Fatalf("BFAdd of a present item: %v, %v", ok, err)
			}
			madd, err := rdb.BFMAdd(ctx, "bf", "x", "y", "z").Result()
			if err != nil || !slices.Equal(madd, []bool{false, true, true}) {
				t.Fatalf("BFMAdd: %v, %v", madd, err)
			}
			if ok, err := rdb.BFExists(ctx, "bf", "y").Result(); err != nil || !ok {
				t.Fatalf("BFExists: %v, %v", ok, err)
			}
			if ok, err := rdb.BFExists(ctx, "nokey", "y").Result(); err != nil || ok {
				t.Fatalf("BFExists of a missing key: %v, %v", ok, err)
			}
			mex, err := rdb.BFMExists(ctx, "bf", "x", "z").Result()
			if err != nil || !slices.Equal(mex, []bool{true, true}) {
				t.Fatalf("BFMExists: %v, %v", mex, err)
			}
			if n, err := rdb.BFCard(ctx, "bf").Result(); err != nil || n != 3 {
				t.Fatalf("BFCard: %v, %v", n, err)
			}
			if n, err := rdb.BFCard(ctx, "nokey").Result(); err != nil || n != 0 {
				t.Fatalf("BFCard of a missing key: %v, %v", n, err)
			}
			ins, err := rdb.BFInsert(ctx, "ins", &redis.BFInsertOptions{Capacity: 50, Error: 0.01, Expansion: 2}, "p", "q").Result()
			if err != nil || !slices.Equal(ins, []bool{true, true}) {
				t.Fatalf("BFInsert: %v, %v", ins, err)
			}
			if _, err := rdb.BFInsert(ctx, "nokey", &redis.BFInsertOptions{NoCreate: true}, "p").Result(); err == nil || err.Error() != "ERR not found" {
				t.Fatalf("BFInsert NOCREATE: %v", err)
			}
			// A NONSCALING filter of capacity 3 refuses a fourth item.
			if _, err := rdb.BFMAdd(ctx, "fixed", "a", "b", "c", "d").Result(); err == nil || err.Error() != "ERR non scaling filter is full" {
				t.Fatalf("BFMAdd past a NONSCALING filter's capacity: %v", err)
			}

			info, err := rdb.BFInfo(ctx, "bf").Result()
			if err != nil || info.Capacity != 1000 || info.ItemsInserted != 3 || info.Filters != 1 || info.ExpansionRate != 2 || info.Size <= 0 {
				t.Fatalf("BFInfo: %+v, %v", info, err)
			}
			for _, tc := range []struct {
				cmd  *redis.BFInfoCmd
				want redis.BFInfo
			}{
				{rdb.BFInfoCapacity(ctx, "bf"), redis.BFInfo{Capacity: 1000}},
				{rdb.BFInfoSize(ctx, "bf"), redis.BFInfo{Size: info.Size}},
				{rdb.BFInfoFilters(ctx, "bf"), redis.BFInfo{Filters: 1}},
				{rdb.BFInfoItems(ctx, "bf"), redis.BFInfo{ItemsInserted: 3}},
				{rdb.BFInfoExpansion(ctx, "exp"), redis.BFInfo{ExpansionRate: 4}},
				{rdb.BFInfoArg(ctx, "args", "EXPANSION"), redis.BFInfo{ExpansionRate: 3}},
			} {
				if got, err := tc.cmd.Result(); err != nil || got != tc.want {
					t.Errorf("%v: %+v, %v; want %+v", tc.cmd.Args(), got, err, tc.want)
				}
			}

			chunks := scanDump(t, func(iter int64) *redis.ScanDumpCmd { return rdb.BFScanDump(ctx, "bf", iter) })
			must(t, rdb.Del(ctx, "bf").Err())
			for _, c := range chunks {
				must(t, rdb.BFLoadChunk(ctx, "bf", c.Iter, c.Data).Err())
			}
			if after, err := rdb.BFInfo(ctx, "bf").Result(); err != nil || after != info {
				t.Fatalf("BFInfo after a dump and load: %+v, want %+v (%v)", after, info, err)
			}
			if ok, _ := rdb.BFExists(ctx, "bf", "z").Result(); !ok {
				t.Fatal("an item is missing after a dump and load")
			}
		})
	}
}

// TestGoRedisGeneric: the generic commands a go-redis service sends
// around the filters.
func TestGoRedisGeneric(t *testing.T) {
	parallel(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp=", proto), func(t *testing.T) {
			ctx := context.Background()
			rdb := goRedisClient(t, proto)
			must(t, rdb.Ping(ctx).Err())
			for _, k := range []string{"cf1", "cf2", "cf3"} {
				must(t, rdb.CFAdd(ctx, k, "x").Err())
			}
			must(t, rdb.BFAdd(ctx, "bf", "x").Err())
			if n, _ := rdb.DBSize(ctx).Result(); n != 4 {
				t.Fatalf("DBSize: %d", n)
			}
			if typ, _ := rdb.Type(ctx, "cf1").Result(); typ != "MBbloomCF" {
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
			must(t, rdb.Rename(ctx, "cf2", "cf4").Err())
			if n, _ := rdb.Del(ctx, "cf4", "bf").Result(); n != 2 {
				t.Fatalf("Del: %d", n)
			}
			if v, err := rdb.ConfigGet(ctx, "cf-bucket-size").Result(); err != nil || v["cf-bucket-size"] != "4" {
				t.Fatalf("ConfigGet: %v, %v", v, err)
			}
			must(t, rdb.ConfigSet(ctx, "cf-bucket-size", "2").Err())
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err == nil || err.Error() != "ERR unknown command 'set', with args beginning with: 'k' 'v' " {
				t.Fatalf("SET: %v", err)
			}
		})
	}
}
