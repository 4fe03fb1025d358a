#!lua name=ckf2
-- revision 2
--
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
-- Writes run once however often a client sends them: each call of
-- ckf2_add or ckf2_del names a third key R in the shard's slot, unique to
-- the call (the client's request id is in its name). The call's first run
-- stores its reply in R for a window the client chooses; a run that finds
-- R returns that reply and changes nothing. So a call that a client sends
-- again, because no reply came back in time while the first copy waited
-- in the server, answers what the first copy did.
--
-- Frozen: the library name says the version of the functions' arguments
-- and replies. A change of either is a new library (ckf3) with new
-- function names, loaded beside this one, so that clients of both work at
-- once. A fix that keeps them raises the revision above: a client loads
-- its library over an older revision, never over a newer one.

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
	g.by, g.raw, g.sl, g.lo, g.sh, g.n, g.dirty = {}, {}, {}, {}, {}, {}, {}
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

-- maxFields bounds the fields of one BITFIELD_RO that fetch sends.
local maxFields = 1000

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

-- A call works on slots, not bytes. It reads each bucket it needs once
-- (g.by[i]: the bytes that hold bucket i as the call found them, from
-- byte g.lo[i], the bucket starting at bit g.sh[i] of the first; g.raw[i]:
-- its slots then), changes slots in its own copy (g.sl[i]; g.dirty lists
-- the buckets copied), and at its end writes the bytes of the slots that
-- differ from what it read with one BITFIELD (flush). So a call of many
-- keys costs two table commands in all (its keys' buckets read at once,
-- its changes written at once) plus one read per bucket a displacement
-- reaches, and its Lua work is a decode of each bucket read and an encode
-- of each slot changed.

-- decode returns the b slots (from 1) of a bucket whose first bit is bit
-- sh of by[1].
local function decode(g, by, sh)
	local v = {}
	for j = 0, g.b - 1 do
		local o = sh + j * g.f
		local r = o % 8
		local k = (o - r) / 8
		local x = 0
		for q = k + g.nb[r], k + 1, -1 do
			x = x * 256 + by[q]
		end
		v[j + 1] = ((x - x % pow2[r]) / pow2[r]) % g.pf
	end
	return v
end

-- fetch reads the buckets of list not read yet, with one BITFIELD_RO per
-- 64 of them, or fewer when their fields pass maxFields (unpack, which
-- makes the command's arguments, returns at most a few thousand values,
-- and a bucket of wide slots needs many fields). Each bucket's bytes are read in fields of at most 6 bytes
-- (every value exact in a double); BITFIELD reads most significant bit
-- first, so a field of c bytes is their big-endian value.
local function fetch(g, list)
	local cmd, want = { 'BITFIELD_RO', g.T }, {}
	local function run()
		if #want == 0 then
			return
		end
		local r = redis.call(unpack(cmd))
		local k = 1
		for _, i in ipairs(want) do
			local n, by = g.n[i], {}
			for off = 0, n - 1, 6 do
				local c = n - off
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
			g.by[i] = by
			g.raw[i] = decode(g, by, g.sh[i])
			g.sl[i] = g.raw[i]
		end
		cmd, want = { 'BITFIELD_RO', g.T }, {}
	end
	for _, i in ipairs(list) do
		if not g.n[i] then
			local p = i * g.B
			local sh = p % 8
			local lo = (p - sh) / 8
			local e = sh + g.B + 7
			local n = (e - e % 8) / 8
			g.lo[i], g.sh[i], g.n[i] = lo, sh, n
			for off = 0, n - 1, 6 do
				local c = n - off
				if c > 6 then
					c = 6
				end
				cmd[#cmd + 1] = 'GET'
				cmd[#cmd + 1] = utype[c]
				cmd[#cmd + 1] = (lo + off) * 8
			end
			want[#want + 1] = i
			if #want == 64 or #cmd >= maxFields * 3 then
				run()
			end
		end
	end
	run()
end

-- bucket returns the slots of bucket i as they are now (a table the
-- caller must not change: use set).
local function bucket(g, i)
	if not g.n[i] then
		fetch(g, { i })
	end
	return g.sl[i]
end

-- set writes x into slot j (from 1) of bucket i, which must have been
-- read, and returns what was there.
local function set(g, i, j, x)
	local v = g.sl[i]
	if v == g.raw[i] then
		local c = {}
		for q = 1, g.b do
			c[q] = v[q]
		end
		g.sl[i] = c
		v = c
		g.dirty[#g.dirty + 1] = i
	end
	local old = v[j]
	v[j] = x
	return old
end

-- flush writes the bytes of every slot that differs from what the call
-- read. Bytes shared with a neighbouring bucket start from what was read
-- and take each bucket's changes in turn, so each keeps the other's bits.
local function flush(g)
	local bytes, touched = {}, {}
	for _, i in ipairs(g.dirty) do
		local lo, by = g.lo[i] - 1, g.by[i]
		for q = 1, #by do
			if bytes[lo + q] == nil then
				bytes[lo + q] = by[q]
			end
		end
	end
	for _, i in ipairs(g.dirty) do
		local raw, now, sh = g.raw[i], g.sl[i], g.sh[i]
		for j = 1, g.b do
			if raw[j] ~= now[j] then
				local o = sh + (j - 1) * g.f
				local r = o % 8
				local base = g.lo[i] + (o - r) / 8
				local n = g.nb[r]
				local v = 0
				for q = n - 1, 0, -1 do
					v = v * 256 + bytes[base + q]
				end
				v = v + (now[j] - raw[j]) * pow2[r]
				for q = 0, n - 1 do
					local c = v % 256
					bytes[base + q] = c
					touched[base + q] = true
					v = (v - c) / 256
				end
			end
		end
	end
	local cmd = { 'BITFIELD', g.T }
	for off in pairs(touched) do
		cmd[#cmd + 1] = 'SET'
		cmd[#cmd + 1] = 'u8'
		cmd[#cmd + 1] = off * 8
		cmd[#cmd + 1] = bytes[off]
		if #cmd >= 2000 then
			redis.call(unpack(cmd))
			cmd = { 'BITFIELD', g.T }
		end
	end
	if #cmd > 2 then
		redis.call(unpack(cmd))
	end
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
	for n = 1, g.kicks do
		local j = rand() % g.b + 1
		bucket(g, i)
		local victim = set(g, i, j, cur)
		pb[n], ps[n], pp[n] = i, j, cur
		cur = victim
		i = alt(g, i, cur)
		local e = first(bucket(g, i), 0)
		if e then
			set(g, i, e, cur)
			return true
		end
	end
	-- INVARIANT: going backwards, cur is the fingerprint step n displaced,
	-- and slot (pb[n], ps[n]) holds pp[n], as step n left it.
	for n = #pb, 1, -1 do
		set(g, pb[n], ps[n], cur)
		cur = pp[n]
	end
	return false
end

-- search makes room for fp, whose buckets i1 and i2 are full, by a
-- breadth-first search for the shortest chain of moves that ends in an
-- empty slot, over at most min(2·kicks, 256) slots, reading each level's
-- buckets at once. It moves nothing until it has found the chain, then
-- moves it hole first (the last fingerprint into the empty slot, then the
-- one before into the slot just freed, ...), so every fingerprint is in
-- one of its buckets at every moment.
local function search(g, i1, i2, fp)
	local budget = math.min(2 * g.kicks, 256)
	local qb, qf, qp, qa = {}, {}, {}, {} -- bucket, fingerprint, parent, alt
	local n = 0
	for _, i in ipairs({ i1, i2 }) do
		local v = bucket(g, i)
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
		-- Locate the level's other buckets and read them all at once.
		local list = {}
		for k = lo, hi do
			local a = alt(g, qb[k], qf[k])
			if onchain(k, a) then
				-- Moving into a bucket the chain uses would undo the chain.
				qa[k] = qb[k]
			else
				qa[k] = a
				list[#list + 1] = a
			end
		end
		fetch(g, list)
		for k = lo, hi do
			if qa[k] ~= qb[k] then
				local e = first(bucket(g, qa[k]), 0)
				if e then
					set(g, qa[k], e, qf[k])
					local j = k
					while true do
						local parent = qp[j]
						local into = fp
						if parent > 0 then
							into = qf[parent]
						end
						set(g, qb[j], first(bucket(g, qb[j]), qf[j]), into)
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
				local v = bucket(g, qa[k])
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

-- add inserts one copy of fp (buckets i1 and i2) and returns 1, or 0 when
-- no room can be made (the shard is then as it was). With unique it
-- returns 2, adding nothing, when fp is in either bucket already.
local function add(g, i1, i2, fp, unique)
	local v1, v2 = bucket(g, i1), bucket(g, i2)
	local copies, e1, e2, n1, n2 = 0, nil, nil, 0, 0
	for j = 1, g.b do
		if v1[j] == fp then
			copies = copies + 1
		elseif v1[j] == 0 then
			e1 = e1 or j
			n1 = n1 + 1
		end
		if v2[j] == fp then
			copies = copies + 1
		elseif v2[j] == 0 then
			e2 = e2 or j
			n2 = n2 + 1
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
	-- The engine's placement rule (cuckoo.Filter.AddHash): fp goes into
	-- the first empty slot of the bucket with more empty slots, i1 on a
	-- tie, so that a shard and a library filter given the same keys hold
	-- the same bytes.
	if n2 > n1 then
		set(g, i2, e2, fp)
		return 1
	end
	if e1 then
		set(g, i1, e1, fp)
		return 1
	end
	if search(g, i1, i2, fp) or walk(g, i1, i2, fp) then
		return 1
	end
	return 0
end

-- del removes one copy of fp (buckets i1 and i2) and returns 1, or 0 when
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
		local j = first(bucket(g, i), fp)
		if j then
			set(g, i, j, 0)
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

-- A remembered reply packs a call's codes (each 0 to 3) four to a byte,
-- the first code in the lowest two bits; its length in codes is the
-- call's number of pairs.
local function pack(out)
	local bytes = {}
	for k = 1, #out, 4 do
		local v = 0
		for j = math.min(k + 3, #out), k, -1 do
			v = v * 4 + out[j]
		end
		bytes[#bytes + 1] = string.char(v)
	end
	return table.concat(bytes)
end

local function unpack_codes(s, n)
	local out = {}
	for k = 1, n do
		local v = string.byte(s, math.floor((k - 1) / 4) + 1)
		out[k] = math.floor(v / 4 ^ ((k - 1) % 4)) % 4
	end
	return out
end

-- replay returns the reply of n codes that an earlier run of this call
-- stored in R, or nil. It stores it again (same value, same expiry): a
-- write, so that this run advances the replication offset of its
-- connection past the first run's changes, and a WAIT after it covers
-- them.
local function replay(keys, n)
	local r = redis.call('GET', keys[3])
	if not r then
		return nil
	end
	redis.call('SET', keys[3], r, 'KEEPTTL')
	return unpack_codes(r, n)
end

-- answered returns what a write call whose pairs start at args[first]
-- replies without running: the reply its first run stored, or an error
-- if the shard is not filter id's; nil if it must run.
local function answered(keys, args, first)
	local done = replay(keys, (#args - first + 1) / 2)
	if done then
		return done
	end
	return stale(keys, args[1])
end

-- remember stores a call's reply in R for window milliseconds.
local function remember(keys, window, out)
	redis.call('SET', keys[3], pack(out), 'PX', window)
end

-- ckf2_add: KEYS = T, C, R; ARGV = id, b, f, buckets, kicks, window (ms),
-- unique (0 or 1), then pairs (first bucket, fingerprint). Returns one
-- code per pair: 1 added, 0 full, 2 present (unique only).
redis.register_function('ckf2_add', function(keys, args)
	local reply = answered(keys, args, 8)
	if reply then
		return reply
	end
	local g = shard(keys, args)
	local unique = args[7] == '1'
	local i1, i2, fp = pairs2(g, args, 8)
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
	remember(keys, args[6], out)
	return out
end)

-- ckf2_del: KEYS = T, C, R; ARGV = id, b, f, buckets, kicks, window (ms),
-- then pairs (first bucket, fingerprint). Returns 1 (a copy removed) or 0
-- per pair.
redis.register_function('ckf2_del', function(keys, args)
	local reply = answered(keys, args, 7)
	if reply then
		return reply
	end
	local g = shard(keys, args)
	local i1, i2, fp = pairs2(g, args, 7)
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
	remember(keys, args[6], out)
	return out
end)

-- register_read registers a function that writes nothing (flag no-writes:
-- it may run on a replica): a call for a shard of another filter gets
-- stale's error, any other body's reply.
local function register_read(name, body)
	redis.register_function {
		function_name = name,
		flags = { 'no-writes' },
		callback = function(keys, args)
			local err = stale(keys, args[1])
			if err then
				return err
			end
			return body(keys, args)
		end,
	}
end

-- ckf2_count: ARGV = id, b, f, buckets, kicks, first bucket, fingerprint.
-- Returns {slot copies, counted copies as a decimal string}.
register_read('ckf2_count', function(keys, args)
	local g = shard(keys, args)
	local i1, fp = tonumber(args[6]), tonumber(args[7])
	local i2 = alt(g, i1, fp)
	local n = 0
	fetch(g, { i1, i2 })
	for _, i in ipairs({ i1, i2 }) do
		for _, x in ipairs(bucket(g, i)) do
			if x == fp then
				n = n + 1
			end
		end
	end
	return { n, redis.call('HGET', g.C, pair(i1, i2, fp)) or '0' }
end)

-- ckf2_create: ARGV = id, table bytes. Makes the shard an empty one of
-- filter id unless it is one already (then it is left alone). Returns 1
-- when it created the shard, 0 when it was there.
redis.register_function('ckf2_create', function(keys, args)
	if redis.call('HGET', keys[2], 'id') == args[1] then
		return 0
	end
	redis.call('DEL', keys[1], keys[2])
	redis.call('SETRANGE', keys[1], tonumber(args[2]) - 1, '\0')
	redis.call('HSET', keys[2], 'id', args[1], 'n', '0')
	return 1
end)

-- ckf2_put: ARGV = id, table, items, then (counter field, copies) pairs.
-- Replaces the shard with the one given.
redis.register_function('ckf2_put', function(keys, args)
	redis.call('DEL', keys[1], keys[2])
	redis.call('SETRANGE', keys[1], 0, args[2])
	redis.call('HSET', keys[2], 'id', args[1], 'n', args[3])
	-- HSET in groups: unpack has a limit on the values it returns.
	for k = 4, #args, 512 do
		redis.call('HSET', keys[2], unpack(args, k, math.min(k + 511, #args)))
	end
	return 1
end)

-- ckf2_dump: ARGV = id. Returns {table, fields and values of the hash}.
register_read('ckf2_dump', function(keys, args)
	return { redis.call('GET', keys[1]), redis.call('HGETALL', keys[2]) }
end)
