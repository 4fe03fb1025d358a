#!lua name=ckf1
-- The write side of package redisfilter's cuckoo filters: one shard of a
-- filter is a string key T (its table: buckets of b slots of f bits,
-- packed low bits first, as in docs/format.md) and a hash key C in the same
-- hash slot (field "id": the filter's instance id; "n": the items of the
-- shard, copies included; "<bucket>:<fp>": the copies of fp beyond the two
-- its bucket pair holds, keyed by the pair's lower bucket).
--
-- The client hashes keys and passes each key's first bucket (counted from
-- the shard's first bucket) and fingerprint; it never sends the key. Every
-- number here stays below 2^48, so Lua's doubles hold it exactly; no bit
-- operation is used.
--
-- Frozen: the library name says the version. A change of behaviour or of
-- arguments is a new library (ckf2) with new function names.

-- Arguments common to the table functions: ARGV[1] id, [2] b, [3] f,
-- [4] buckets of the shard, [5] max kicks; then per-function arguments.
local function shard(keys, args)
	local g = { T = keys[1], C = keys[2] }
	g.b = tonumber(args[2])
	g.f = tonumber(args[3])
	g.m = tonumber(args[4])
	g.kicks = tonumber(args[5])
	g.B = g.b * g.f
	g.pf = 2 ^ g.f
	g.raw, g.pend = {}, {}
	-- nb[r]: the bytes a slot spans when it starts at bit r of a byte.
	g.nb = {}
	for r = 0, 7 do
		g.nb[r] = math.floor((r + g.f + 7) / 8)
	end
	return g
end

-- pow2[r] = 2^r.
local pow2 = { [0] = 1, 2, 4, 8, 16, 32, 64, 128 }

-- BITFIELD types that read c whole bytes, c ≤ 6 so that every value is
-- exact in a double.
local utype = { 'u8', 'u16', 'u24', 'u32', 'u40', 'u48' }

-- stale returns an error reply unless the shard belongs to filter id.
local function stale(keys, id)
	local got = redis.call('HGET', keys[2], 'id')
	if got == id then
		return nil
	end
	return redis.error_reply('CKFGONE the filter was dropped or replaced')
end

-- alt is the other bucket of fingerprint fp in bucket i (internal/addr.Alt):
-- x = fp·0x9e3779b1 mod 2^32 and r = ⌊x·m/2^32⌋ | 1, with the products
-- split into 16-bit halves so that none exceeds 2^48.
local function alt(g, i, fp)
	local fl = fp % 65536
	local fh = (fp - fl) / 65536
	local x = (fl * 0x79b1 + ((fl * 0x9e37 + fh * 0x79b1) % 65536) * 65536) % 4294967296
	local xl = x % 65536
	local xh = (x - xl) / 65536
	local t = xh * g.m + (xl * g.m - (xl * g.m) % 65536) / 65536
	local r = (t - t % 65536) / 65536
	if r % 2 == 0 then
		r = r + 1
	end
	local j = g.m - i - r
	if j < 0 then
		j = j + g.m
	end
	return j
end

-- A bucket as read: {i, lo (its first byte), sh (its first bit in that
-- byte), by (its bytes, from 1)}. addfields appends to a BITFIELD_RO
-- command the fields that read bucket i's bytes, at most 6 a field, and
-- returns the bucket with its bytes to come.
local function addfields(g, cmd, i)
	local p = i * g.B
	local sh = p % 8
	local lo = (p - sh) / 8
	local e = sh + g.B + 7
	local n = (e - e % 8) / 8
	for off = 0, n - 1, 6 do
		local c = n - off
		if c > 6 then
			c = 6
		end
		cmd[#cmd + 1] = 'GET'
		cmd[#cmd + 1] = utype[c]
		cmd[#cmd + 1] = (lo + off) * 8
	end
	return { i = i, lo = lo, sh = sh, n = n }
end

-- fill takes a bucket's bytes from the replies r, from index k (BITFIELD
-- reads most significant bit first: a field of c bytes is their
-- big-endian value), and returns the next index.
local function fill(bk, r, k)
	local by = {}
	for off = 0, bk.n - 1, 6 do
		local c = bk.n - off
		if c > 6 then
			c = 6
		end
		local v = r[k]
		k = k + 1
		for q = off + c, off + 1, -1 do
			local x = v % 256
			by[q] = x
			v = (v - x) / 256
		end
	end
	bk.by = by
	return k
end

-- A call reads the table as it was when the call began (g.raw: bucket
-- bytes read from Redis, cached) overlaid with the bytes the call has
-- changed (g.pend: byte offset → value), and writes g.pend back with one
-- BITFIELD at its end (flush). So a call of many keys costs two table
-- commands (its buckets read at once, its changes written at once), plus
-- one read per bucket a displacement reaches.

-- fetch reads the buckets of list that are not cached, with one
-- BITFIELD_RO per 64 of them.
local function fetch(g, list)
	local cmd, want = { 'BITFIELD_RO', g.T }, {}
	local function run()
		if #want == 0 then
			return
		end
		local r = redis.call(unpack(cmd))
		local k = 1
		for _, bk in ipairs(want) do
			k = fill(bk, r, k)
			g.raw[bk.i] = bk
		end
		cmd, want = { 'BITFIELD_RO', g.T }, {}
	end
	for _, i in ipairs(list) do
		if not g.raw[i] then
			g.raw[i] = false -- asked for
			want[#want + 1] = addfields(g, cmd, i)
			if #want == 64 then
				run()
			end
		end
	end
	run()
end

-- read returns bucket i as it is now.
local function read(g, i)
	if not g.raw[i] then
		fetch(g, { i })
	end
	local raw = g.raw[i]
	local by, pend, lo = {}, g.pend, raw.lo - 1
	for q = 1, raw.n do
		by[q] = pend[lo + q] or raw.by[q]
	end
	return { i = i, lo = raw.lo, sh = raw.sh, n = raw.n, by = by }
end

-- flush writes the changed bytes to Redis.
local function flush(g)
	local cmd = { 'BITFIELD', g.T }
	for off, v in pairs(g.pend) do
		cmd[#cmd + 1] = 'SET'
		cmd[#cmd + 1] = 'u8'
		cmd[#cmd + 1] = off * 8
		cmd[#cmd + 1] = v
		if #cmd >= 2000 then
			redis.call(unpack(cmd))
			cmd = { 'BITFIELD', g.T }
		end
	end
	if #cmd > 2 then
		redis.call(unpack(cmd))
	end
	g.pend = {}
end

-- get returns slot j (from 0) of bucket bk.
local function get(g, bk, j)
	local o = bk.sh + j * g.f
	local r = o % 8
	local k = (o - r) / 8
	local by = bk.by
	local x = 0
	for q = k + g.nb[r], k + 1, -1 do
		x = x * 256 + by[q]
	end
	x = (x - x % pow2[r]) / pow2[r]
	return x % g.pf
end

-- slots returns the b fingerprints of bucket bk (0: empty).
local function slots(g, bk)
	local v = {}
	for j = 0, g.b - 1 do
		v[j + 1] = get(g, bk, j)
	end
	return v
end

-- put writes x into slot j (from 0) of bucket bk, in bk and in g.pend,
-- and returns what was there. bk must be current: read since the last put
-- on another bucket object.
local function put(g, bk, j, x)
	local o = bk.sh + j * g.f
	local r = o % 8
	local k = (o - r) / 8
	local n = g.nb[r]
	local by = bk.by
	local v = 0
	for q = k + n, k + 1, -1 do
		v = v * 256 + by[q]
	end
	local sc = pow2[r]
	local old = ((v - v % sc) / sc) % g.pf
	v = v + (x - old) * sc
	local base = bk.lo - 1
	for q = k + 1, k + n do
		local c = v % 256
		by[q] = c
		g.pend[base + q] = c
		v = (v - c) / 256
	end
	return old
end

-- first returns the first slot (from 1) of v holding x, or nil.
local function first(v, x)
	for j = 1, #v do
		if v[j] == x then
			return j
		end
	end
	return nil
end

-- pair names the duplicate counter of fp in the pair of buckets i1, i2.
local function pair(i1, i2, fp)
	if i2 < i1 then
		i1 = i2
	end
	return i1 .. ':' .. fp
end

-- walk makes room for fp, whose buckets i1 and i2 are full, by a random
-- walk of at most g.kicks moves: put the carried fingerprint in a random
-- slot of its bucket and carry the one it displaces to that one's other
-- bucket, until a carried fingerprint finds an empty slot. The choices come
-- from a Park-Miller generator seeded with (i1, fp), so the table after an
-- insert depends only on the table before it and the key. When no move
-- ends in an empty slot, the moves are undone in reverse order, which
-- restores every slot, and walk returns false.
local function walk(g, i1, i2, fp)
	local x = ((i1 % 2147483647) * 48271 + fp) % 2147483647
	if x == 0 then
		x = 1
	end
	local function rand()
		x = (x * 48271) % 2147483647
		return x
	end
	local i = i1
	if rand() % 2 == 1 then
		i = i2
	end
	local cur = fp
	local pb, ps, pp = {}, {}, {}
	local bk = read(g, i)
	for n = 1, g.kicks do
		local j = rand() % g.b
		local victim = put(g, bk, j, cur)
		pb[n], ps[n], pp[n] = i, j, cur
		cur = victim
		i = alt(g, i, cur)
		bk = read(g, i)
		local e = first(slots(g, bk), 0)
		if e then
			put(g, bk, e - 1, cur)
			return true
		end
	end
	-- INVARIANT: going backwards, cur is the fingerprint step n displaced,
	-- and slot (pb[n], ps[n]) holds pp[n], as step n left it.
	for n = #pb, 1, -1 do
		put(g, read(g, pb[n]), ps[n], cur)
		cur = pp[n]
	end
	return false
end

-- search makes room for fp, whose buckets i1 and i2 are full, by a
-- breadth-first search for the shortest chain of moves that ends in an
-- empty slot, over at most min(2·kicks, 256) slots. It moves nothing until
-- it has found the chain, then moves it hole first (the last fingerprint
-- into the empty slot, then the one before into the slot just freed, ...),
-- so every fingerprint is in one of its buckets at every moment.
local function search(g, i1, i2, fp)
	local budget = math.min(2 * g.kicks, 256)
	local qb, qf, qp, qa = {}, {}, {}, {} -- bucket, fingerprint, parent, alt
	local n = 0
	for _, i in ipairs({ i1, i2 }) do
		local v = slots(g, read(g, i))
		for j = 1, g.b do
			n = n + 1
			qb[n], qf[n], qp[n] = i, v[j], 0
		end
	end
	local function onchain(k, i)
		while k > 0 do
			if qb[k] == i then
				return true
			end
			k = qp[k]
		end
		return false
	end
	local lo = 1
	while lo <= n do
		local hi = n
		local qv = {}
		for k = lo, hi do
			local a = alt(g, qb[k], qf[k])
			qa[k] = a
			if onchain(k, a) then
				-- Moving into a bucket the chain uses would undo the chain.
				qa[k] = qb[k]
			else
				local bk = read(g, a)
				local v = slots(g, bk)
				qv[k] = v
				local e = first(v, 0)
				if e then
					put(g, bk, e - 1, qf[k])
					local j = k
					while true do
						local parent = qp[j]
						local into = fp
						if parent > 0 then
							into = qf[parent]
						end
						local cb = read(g, qb[j])
						put(g, cb, first(slots(g, cb), qf[j]) - 1, into)
						if parent == 0 then
							return true
						end
						j = parent
					end
				end
			end
		end
		for k = lo, hi do
			if qa[k] ~= qb[k] then
				local v = qv[k]
				for j = 1, g.b do
					if n >= budget then
						break
					end
					n = n + 1
					qb[n], qf[n], qp[n] = qa[k], v[j], k
				end
			end
		end
		lo = hi + 1
	end
	return false
end

-- add inserts one copy of fp (first bucket i1) and returns 1, or 0 when
-- no room can be made (the shard is then as it was). With unique it
-- returns 2, adding nothing, when fp is in either bucket already.
local function add(g, i1, i2, fp, unique)
	local bk1, bk2 = read(g, i1), read(g, i2)
	local v1, v2 = slots(g, bk1), slots(g, bk2)
	local copies, e1, e2 = 0, nil, nil
	for j = 1, g.b do
		if v1[j] == fp then
			copies = copies + 1
		elseif v1[j] == 0 and not e1 then
			e1 = j
		end
		if v2[j] == fp then
			copies = copies + 1
		elseif v2[j] == 0 and not e2 then
			e2 = j
		end
	end
	if unique and copies > 0 then
		return 2
	end
	-- A pair holds at most two slot copies of a fingerprint; the others
	-- are counted.
	if copies >= 2 then
		redis.call('HINCRBY', g.C, pair(i1, i2, fp), 1)
		return 1
	end
	if e1 then
		put(g, bk1, e1 - 1, fp)
		return 1
	end
	if e2 then
		put(g, bk2, e2 - 1, fp)
		return 1
	end
	if walk(g, i1, i2, fp) or search(g, i1, i2, fp) then
		return 1
	end
	return 0
end

-- del removes one copy of fp (first bucket i1) and returns 1, or 0 when
-- there is none. Counted copies go first: the two slot copies stay while
-- any counted copy remains.
local function del(g, i1, i2, fp)
	local field = pair(i1, i2, fp)
	local c = redis.call('HGET', g.C, field)
	if c then
		if c == '1' then
			redis.call('HDEL', g.C, field)
		else
			redis.call('HINCRBY', g.C, field, -1)
		end
		return 1
	end
	for _, i in ipairs({ i1, i2 }) do
		local bk = read(g, i)
		local j = first(slots(g, bk), fp)
		if j then
			put(g, bk, j - 1, 0)
			return 1
		end
	end
	return 0
end

-- pairs2 reads the (first bucket, fingerprint) pairs of args from index
-- k on, computes each other bucket, and fetches all their buckets at once.
local function pairs2(g, args, k)
	local i1, i2, fp, all = {}, {}, {}, {}
	for a = k, #args - 1, 2 do
		local n = #i1 + 1
		i1[n], fp[n] = tonumber(args[a]), tonumber(args[a + 1])
		i2[n] = alt(g, i1[n], fp[n])
		all[#all + 1] = i1[n]
		all[#all + 1] = i2[n]
	end
	fetch(g, all)
	return i1, i2, fp
end

-- ckf1_add: ARGV = id, b, f, buckets, kicks, unique (0 or 1), then pairs
-- (first bucket, fingerprint). Returns one code per pair: 1 added, 0 full,
-- 2 present (unique only).
redis.register_function('ckf1_add', function(keys, args)
	local err = stale(keys, args[1])
	if err then
		return err
	end
	local g = shard(keys, args)
	local unique = args[6] == '1'
	local i1, i2, fp = pairs2(g, args, 7)
	local out, added = {}, 0
	for k = 1, #i1 do
		local r = add(g, i1[k], i2[k], fp[k], unique)
		out[k] = r
		if r == 1 then
			added = added + 1
		end
	end
	flush(g)
	if added > 0 then
		redis.call('HINCRBY', g.C, 'n', added)
	end
	return out
end)

-- ckf1_del: ARGV = id, b, f, buckets, kicks, then pairs (first bucket,
-- fingerprint). Returns 1 (a copy removed) or 0 per pair.
redis.register_function('ckf1_del', function(keys, args)
	local err = stale(keys, args[1])
	if err then
		return err
	end
	local g = shard(keys, args)
	local i1, i2, fp = pairs2(g, args, 6)
	local out, removed = {}, 0
	for k = 1, #i1 do
		local r = del(g, i1[k], i2[k], fp[k])
		out[k] = r
		removed = removed + r
	end
	flush(g)
	if removed > 0 then
		redis.call('HINCRBY', g.C, 'n', -removed)
	end
	return out
end)

-- ckf1_count: ARGV = id, b, f, buckets, kicks, first bucket, fingerprint.
-- Returns {slot copies, counted copies as a decimal string}.
redis.register_function {
	function_name = 'ckf1_count',
	flags = { 'no-writes' },
	callback = function(keys, args)
		local err = stale(keys, args[1])
		if err then
			return err
		end
		local g = shard(keys, args)
		local i1, fp = tonumber(args[6]), tonumber(args[7])
		local i2 = alt(g, i1, fp)
		local n = 0
		fetch(g, { i1, i2 })
		for _, i in ipairs({ i1, i2 }) do
			for _, x in ipairs(slots(g, read(g, i))) do
				if x == fp then
					n = n + 1
				end
			end
		end
		return { n, redis.call('HGET', g.C, pair(i1, i2, fp)) or '0' }
	end,
}

-- ckf1_create: ARGV = id, table bytes. Makes the shard an empty one of
-- filter id unless it is one already (then it is left alone). Returns 1
-- when it created the shard, 0 when it was there.
redis.register_function('ckf1_create', function(keys, args)
	if redis.call('HGET', keys[2], 'id') == args[1] then
		return 0
	end
	redis.call('DEL', keys[1], keys[2])
	redis.call('SETRANGE', keys[1], tonumber(args[2]) - 1, '\0')
	redis.call('HSET', keys[2], 'id', args[1], 'n', '0')
	return 1
end)

-- ckf1_put: ARGV = id, table, items, then (counter field, copies) pairs.
-- Replaces the shard with the one given.
redis.register_function('ckf1_put', function(keys, args)
	redis.call('DEL', keys[1], keys[2])
	redis.call('SETRANGE', keys[1], 0, args[2])
	redis.call('HSET', keys[2], 'id', args[1], 'n', args[3])
	-- HSET in groups: unpack has a limit on the values it returns.
	for k = 4, #args, 512 do
		redis.call('HSET', keys[2], unpack(args, k, math.min(k + 511, #args)))
	end
	return 1
end)

-- ckf1_dump: ARGV = id. Returns {table, fields and values of the hash}.
redis.register_function {
	function_name = 'ckf1_dump',
	flags = { 'no-writes' },
	callback = function(keys, args)
		local err = stale(keys, args[1])
		if err then
			return err
		end
		return { redis.call('GET', keys[1]), redis.call('HGETALL', keys[2]) }
	end,
}
