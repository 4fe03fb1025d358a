#!lua name=ckf2
-- revision 6
--
-- The write side of package redisfilter's cuckoo filters: one segment of a
-- filter is a string key T (its table: buckets of b slots of f bits,
-- packed low bits first, as in docs/format.md) and a hash key C in the same
-- hash slot (field "id": the filter's instance id; "n": the items of the
-- segment, copies included; "<bucket>:<fp>": the copies of fp beyond the two
-- its bucket pair holds, keyed by the pair's lower bucket).
--
-- The client hashes keys and passes each key's first bucket (counted from
-- the segment's first bucket) and fingerprint; it never sends the key. Every
-- number here stays below 2^48, so Lua's doubles hold it exactly; no bit
-- operation is used.
--
-- Writes run once however often a client sends them: each call of
-- ckf2_add or ckf2_del names a third key R in the segment's slot, unique to
-- the call (the client's request id is in its name). The call's first run
-- stores its reply in R for a window the client chooses; a run that finds
-- R returns that reply and changes nothing. So a call that a client sends
-- again, because no reply came back in time while the first copy waited
-- in the server, answers what the first copy did.
--
-- Writes of a batch run in the client's order (revision 6): a call may
-- name a fourth key P, the record of the call before it of its segment in
-- the batch, and then runs only once that call has run: while P is
-- missing it is refused (CKFORDER) and changes nothing, as a call Redis
-- refuses for now (BUSY, LOADING, READONLY) is, and the client sends it
-- again after P's call. So a call that Redis refused while it ran the next
-- one of its pipeline (a script or a load that ended between its reads of
-- the two) no longer runs after that next one. A call without P (the
-- first of its segment in a batch, a single write, a call of a client of
-- revision 5 or earlier, which names three keys) runs as before. P lives
-- for the retry window W after its call ran; a client sends a call only
-- within the retry horizon H, at most W/2 after its first send, so a
-- call refused for want of an expired P is a copy that waited in a
-- stalled server for longer than W/2, whose client has given up on it.
--
-- Frozen: the library name says the version of the functions' arguments
-- and replies. A change of either is a new library (ckf3) with new
-- function names, loaded beside this one, so that clients of both work at
-- once. A fix that keeps them raises the revision above: a client loads
-- its library over an older revision, never over a newer one.

-- Arguments common to the table functions: ARGV[1] id, [2] b, [3] f,
-- [4] buckets of the segment, [5] max kicks; then per-function arguments.
local function segment(keys, args)
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

-- BITFIELD types of c whole bytes, c ≤ 6 so that every value is exact in
-- a double.
local utype = { 'u8', 'u16', 'u24', 'u32', 'u40', 'u48' }

-- decimal returns integer x (below 2^53 in size) as a command argument
-- that every server reads as x: a number below 10^8 in size as it is,
-- a larger one as its decimal digits. Redis 7.2 (7.2.0 to 7.2.4 at
-- least) turns a Lua number into text with fpconv_dtoa, which writes an
-- integer with eight or more trailing zeros in scientific notation
-- (100000000 as "1e+08"), and the commands that take an integer (a
-- BITFIELD offset or value, a GETRANGE or SETRANGE offset) refuse it
-- (TestFunctionsWriteIntegersInFull); Redis 7.0, and the releases that
-- fixed it, write integers whole. Every number that may pass 10^8 goes
-- through it.
local function decimal(x)
	if x > -1e8 and x < 1e8 then
		return x
	end
	return string.format('%.0f', x)
end

-- stale returns an error reply unless the segment belongs to filter id.
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
-- differ from what it read with one BITFIELD (flush). A bucket is read
-- with one GETRANGE of its bytes, which string.byte splits in one step:
-- in Lua's doubles, cutting a BITFIELD_RO field into bytes costs more than
-- a command (bench/notes.md has the measurements). So a call of k keys
-- costs one read per bucket it reaches (2k, and those a displacement
-- reaches) and one write, and its Lua work is a decode of each bucket
-- read and an encode of each slot changed.

-- pow2n[k] = 2^k, for k up to 63.
local pow2n = { [0] = 1 }
for k = 1, 63 do
	pow2n[k] = pow2n[k - 1] * 2
end

-- slots[b] returns a new table of b zeros (b ≤ 8): a table made whole at
-- once, not grown slot by slot.
local slots = {
	function() return { 0 } end,
	function() return { 0, 0 } end,
	function() return { 0, 0, 0 } end,
	function() return { 0, 0, 0, 0 } end,
	function() return { 0, 0, 0, 0, 0 } end,
	function() return { 0, 0, 0, 0, 0, 0 } end,
	function() return { 0, 0, 0, 0, 0, 0, 0 } end,
	function() return { 0, 0, 0, 0, 0, 0, 0, 0 } end,
}

-- decode returns the b slots (from 1) of a bucket whose first bit is bit
-- sh of by[1]: the bits not yet cut into slots are acc, nbits of them
-- (fewer than f + 8, so acc is exact), taking a byte whenever a slot
-- needs more.
local function decode(g, by, sh)
	local f, pf, b = g.f, g.pf, g.b
	local v
	if b <= 8 then
		v = slots[b]()
	else
		v = {}
	end
	local p = pow2[sh]
	local acc = by[1]
	acc = (acc - acc % p) / p
	local nbits, k = 8 - sh, 2
	for j = 1, b do
		while nbits < f do
			acc = acc + by[k] * pow2n[nbits]
			k = k + 1
			nbits = nbits + 8
		end
		local x = acc % pf
		v[j] = x
		acc = (acc - x) / pf
		nbits = nbits - f
	end
	return v
end

-- fetch reads the buckets of list not read yet, one GETRANGE each (a
-- table shorter than the bucket's end, or absent, reads as zeros, as
-- BITFIELD_RO reads it).
local function fetch(g, list)
	local call, sbyte, T, B = redis.call, string.byte, g.T, g.B
	local gn, glo, gsh, gby, graw, gsl = g.n, g.lo, g.sh, g.by, g.raw, g.sl
	for x = 1, #list do
		local i = list[x]
		if not gn[i] then
			local p = i * B
			local sh = p % 8
			local lo = (p - sh) / 8
			local e = sh + B + 7
			local n = (e - e % 8) / 8
			glo[i], gsh[i], gn[i] = lo, sh, n
			local s = call('GETRANGE', T, decimal(lo), decimal(lo + n - 1))
			if #s < n then
				s = s .. string.rep('\0', n - #s)
			end
			local by = { sbyte(s, 1, n) }
			gby[i] = by
			local v = decode(g, by, sh)
			graw[i], gsl[i] = v, v
		end
	end
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

-- setfields writes value[off] into the field of type typ (u8, u16, ...)
-- at byte off of the table, for each offset of offs, with BITFIELD SET
-- fields, 500 to a command.
local function setfields(g, typ, offs, value)
	local cmd = { 'BITFIELD', g.T }
	for _, off in ipairs(offs) do
		cmd[#cmd + 1] = 'SET'
		cmd[#cmd + 1] = typ
		cmd[#cmd + 1] = decimal(off * 8)
		cmd[#cmd + 1] = decimal(value[off])
		if #cmd >= 2000 then
			redis.call(unpack(cmd))
			cmd = { 'BITFIELD', g.T }
		end
	end
	if #cmd > 2 then
		redis.call(unpack(cmd))
	end
end

-- flush writes the bytes of every slot that differs from what the call
-- read. A byte starts from what was read (every read of a call comes
-- before its writes, so a byte two buckets share was read the same by
-- both) and takes each change in turn, so a slot keeps the bits of the
-- slots that share its bytes. The slots changed are written with one
-- BITFIELD, for each a field of its bytes' final values (up to 6 bytes, a
-- value below 2^48, which Redis turns into its exact decimal); fields
-- that overlap write the same bytes alike.
local function flush(g)
	local dirty = g.dirty
	if #dirty == 0 then
		return
	end
	local glo, gby, gsh, graw, gsl, nb, f, b = g.lo, g.by, g.sh, g.raw, g.sl, g.nb, g.f, g.b
	local bytes = {}
	local bases, lens = {}, {}
	for d = 1, #dirty do
		local i = dirty[d]
		local raw, now, by, lo = graw[i], gsl[i], gby[i], glo[i]
		local o = gsh[i]
		for j = 1, b do
			if raw[j] ~= now[j] then
				local r = o % 8
				local base = lo + (o - r) / 8
				local n = nb[r]
				local v = 0
				for q = base + n - 1, base, -1 do
					v = v * 256 + (bytes[q] or by[q - lo + 1])
				end
				v = v + (now[j] - raw[j]) * pow2[r]
				for q = base, base + n - 1 do
					local c = v % 256
					bytes[q] = c
					v = (v - c) / 256
				end
				bases[#bases + 1], lens[#lens + 1] = base, n
			end
			o = o + f
		end
	end
	local call, T = redis.call, g.T
	local cmd, c = { 'BITFIELD', T }, 2
	for k = 1, #bases do
		local base, n = bases[k], lens[k]
		-- A slot spans at most 6 bytes (36 bits from bit 7); its field
		-- is their big-endian value.
		local v = 0
		for q = base, base + n - 1 do
			v = v * 256 + bytes[q]
		end
		cmd[c + 1], cmd[c + 2], cmd[c + 3], cmd[c + 4] = 'SET', utype[n], decimal(base * 8), decimal(v)
		c = c + 4
		if c >= 2000 then
			call(unpack(cmd))
			cmd, c = { 'BITFIELD', T }, 2
		end
	end
	if c > 2 then
		call(unpack(cmd))
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

-- room is the breadth-first search for room that the inserts of both
-- kinds make when a key's buckets i1 and i2 are full (the engine's
-- table.Search): for the shortest chain of moves that ends in a free
-- slot, over at most min(2·kicks, 256) slots, a level at a time, reading
-- each level's other buckets before looking in any; a node whose other
-- bucket the chain uses is not expanded (moving into it would undo the
-- chain). free(g, i) returns the first free slot of bucket i, or nil;
-- fpof(v) the fingerprint of a slot's value v. It moves nothing, and
-- returns the queue (q.b: a node's bucket, q.v: its value, q.p: its
-- parent, 0 for the key's own slots; node k holds slot (k-1) % b + 1 of
-- its bucket, whole buckets being queued), the chain's last node and the
-- free slot of that node's other bucket (q.a); or nil when there is no
-- chain.
local function room(g, i1, i2, free, fpof)
	local budget = math.min(2 * g.kicks, 256)
	local q = { b = {}, v = {}, p = {}, a = {} }
	local qb, qv, qp, qa = q.b, q.v, q.p, q.a
	local n = 0
	for _, i in ipairs({ i1, i2 }) do
		local v = bucket(g, i)
		for j = 1, g.b do
			n = n + 1
			qb[n], qv[n], qp[n] = i, v[j], 0
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
		-- Locate the level's other buckets and read them all first.
		local list = {}
		for k = lo, hi do
			local a = alt(g, qb[k], fpof(qv[k]))
			if onchain(k, a) then
				qa[k] = qb[k]
			else
				qa[k] = a
				list[#list + 1] = a
			end
		end
		fetch(g, list)
		for k = lo, hi do
			if qa[k] ~= qb[k] then
				local e = free(g, qa[k])
				if e then
					return q, k, e
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
					qb[n], qv[n], qp[n] = qa[k], v[j], k
				end
			end
		end
		lo = hi + 1
	end
	return nil
end

-- search makes room for fp, whose buckets i1 and i2 are full, by the
-- breadth-first search (room) for a chain of moves that ends in an empty
-- slot, then moves it hole first (the last fingerprint into the empty
-- slot, then the one before into the slot just freed, ...), so every
-- fingerprint is in one of its buckets at every moment. Each move takes
-- the first copy of its fingerprint in its bucket, as the engine's does.
local function search(g, i1, i2, fp)
	local q, k, e = room(g, i1, i2, function(g, i)
		return first(bucket(g, i), 0)
	end, function(v)
		return v
	end)
	if not q then
		return false
	end
	set(g, q.a[k], e, q.v[k])
	while true do
		local parent = q.p[k]
		local into = fp
		if parent > 0 then
			into = q.v[parent]
		end
		set(g, q.b[k], first(bucket(g, q.b[k]), q.v[k]), into)
		if parent == 0 then
			return true
		end
		k = parent
	end
end

-- add inserts one copy of fp (buckets i1 and i2) and returns 1, or 0 when
-- no room can be made (the segment is then as it was). With unique it
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
	-- tie, so that a segment and a library filter given the same keys hold
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
-- k on, computes each other bucket, and fetches all their buckets first.
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

-- answered returns what a write call whose keys' arguments start at
-- args[first], per arguments a key, replies without running: the reply
-- its first run stored, an error if the segment is not filter id's, or a
-- refusal (CKFORDER) if the call names the record of the call before it
-- (keys[4]) and that call has not run; nil if it must run.
local function answered(keys, args, first, per)
	local done = replay(keys, (#args - first + 1) / per)
	if done then
		return done
	end
	local err = stale(keys, args[1])
	if err then
		return err
	end
	if keys[4] and redis.call('EXISTS', keys[4]) == 0 then
		return redis.error_reply('CKFORDER the call before this one of its segment has not run yet')
	end
	return nil
end

-- remember stores a call's reply in R for window milliseconds.
local function remember(keys, window, out)
	redis.call('SET', keys[3], pack(out), 'PX', window)
end

-- ckf2_add: KEYS = T, C, R[, P]; ARGV = id, b, f, buckets, kicks, window
-- (ms), unique (0 or 1), then pairs (first bucket, fingerprint). Returns
-- one code per pair: 1 added, 0 full, 2 present (unique only).
redis.register_function('ckf2_add', function(keys, args)
	local reply = answered(keys, args, 8, 2)
	if reply then
		return reply
	end
	local g = segment(keys, args)
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

-- ckf2_del: KEYS = T, C, R[, P]; ARGV = id, b, f, buckets, kicks, window
-- (ms), then pairs (first bucket, fingerprint). Returns 1 (a copy
-- removed) or 0 per pair.
redis.register_function('ckf2_del', function(keys, args)
	local reply = answered(keys, args, 7, 2)
	if reply then
		return reply
	end
	local g = segment(keys, args)
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
-- it may run on a replica): a call for a segment of another filter gets
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
	local g = segment(keys, args)
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

-- ckf2_create: ARGV = id, table bytes. Makes the segment an empty one of
-- filter id unless it is one already (then it is left alone). Returns 1
-- when it created the segment, 0 when it was there.
redis.register_function('ckf2_create', function(keys, args)
	if redis.call('HGET', keys[2], 'id') == args[1] then
		return 0
	end
	redis.call('DEL', keys[1], keys[2])
	redis.call('SETRANGE', keys[1], decimal(tonumber(args[2]) - 1), '\0')
	redis.call('HSET', keys[2], 'id', args[1], 'n', '0')
	return 1
end)

-- ckf2_put: ARGV = id, table, items, then (counter field, copies) pairs.
-- Replaces the segment with the one given.
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

-- Windows: a cuckoo filter that forgets (docs/window.md), the twin of the
-- library's cuckoo.Window. A window's segment is a string T (its table:
-- buckets of b slots of s = f + 4 bits, each slot a fingerprint above a
-- 4-bit stamp, packed as above; then an 8-byte trailer holding the epoch
-- E of the segment's latest write, a big-endian 64-bit integer, which
-- lookups read with the buckets in one BITFIELD_RO) and a hash C ("id";
-- "c": the sweep's cursor; "eh", "el": the first nanosecond of epoch
-- E + 1, a Unix time in base 2^32, eh = -1 when any time is past it;
-- "s0" to "s15": the non-empty slots of each stamp).
--
-- Time is the server's (clock), or a time each key of a call brings (an
-- event's), and epochs are ⌊Unix ns / g⌋, g passed as two 32-bit halves;
-- a time is a pair (hi, lo) in base 2^32, so every step is exact in
-- doubles. Every function follows the library's Window step by step (the
-- same slots, stamps, sweep, search and walk), so a segment holds the bytes
-- of the library's table given the same keys at the same times
-- (TestWindowLuaMatchesLibrary).

local T32 = 4294967296

-- clock returns the server's time: Unix seconds and nanoseconds.
local function clock()
	local t = redis.call('TIME')
	return tonumber(t[1]), tonumber(t[2]) * 1000
end

-- nspair returns s seconds and ns nanoseconds (s < 2^34, ns < 10^9) as a
-- pair in base 2^32: (sa·2^17 + sb)·10^9 + ns, each product below 2^48.
local function nspair(s, ns)
	local sb = s % 131072
	local a = (s - sb) / 131072 * 1e9
	local hi = (a - a % 32768) / 32768
	local lo = (a % 32768) * 131072
	local rest = sb * 1e9 + ns
	local rl = rest % T32
	lo = lo + rl
	hi = hi + (rest - rl) / T32
	if lo >= T32 then
		lo = lo - T32
		hi = hi + 1
	end
	return hi, lo
end

-- divmod returns ⌊n/d⌋ and n mod d (a pair) for pairs n and d, d > 0,
-- by binary long division; the quotient stays below 2^53 (the client
-- refuses windows whose epochs would not).
local function divmod(nh, nl, dh, dl)
	local q, rh, rl = 0, 0, 0
	for i = 63, 0, -1 do
		local b
		if i >= 32 then
			b = math.floor(nh / 2 ^ (i - 32)) % 2
		else
			b = math.floor(nl / 2 ^ i) % 2
		end
		rh, rl = rh * 2, rl * 2 + b
		if rl >= T32 then
			rl = rl - T32
			rh = rh + 1
		end
		q = q * 2
		if rh > dh or (rh == dh and rl >= dl) then
			rh, rl = rh - dh, rl - dl
			if rl < 0 then
				rl = rl + T32
				rh = rh - 1
			end
			q = q + 1
		end
	end
	return q, rh, rl
end

-- wstamps sets the stamp of the current epoch and the stamp of the
-- entries that expired in it.
local function wstamps(g)
	g.now = g.E % 16
	g.expired = (g.E + 1) % 16
end

-- wload reads a window segment's state for a call whose arguments are
-- ARGV[7], [8]: the epoch length g (ns) in base 2^32.
local function wload(g, keys, args)
	g.gh, g.gl = tonumber(args[7]), tonumber(args[8])
	g.tb = math.ceil(g.m * g.B / 64) * 8
	g.E = redis.call('BITFIELD_RO', keys[1], 'GET', 'i64', decimal(g.tb * 8))[1]
	local st = redis.call('HMGET', keys[2], 'c', 'eh', 'el', 's0', 's1', 's2', 's3', 's4', 's5', 's6', 's7',
		's8', 's9', 's10', 's11', 's12', 's13', 's14', 's15')
	g.cursor = tonumber(st[1]) or 0
	g.eh, g.el = tonumber(st[2]) or -1, tonumber(st[3]) or 0
	g.E0, g.c0, g.eh0, g.el0 = g.E, g.cursor, g.eh, g.el
	g.cnt, g.dc = {}, {}
	for v = 0, 15 do
		g.cnt[v], g.dc[v] = tonumber(st[4 + v]) or 0, 0
	end
	g.pending = 0
	wstamps(g)
end

-- wcount returns how many non-empty slots hold a stamp that kill marks.
local function wcount(g, kill)
	local n = 0
	for v = 0, 15 do
		if kill[v] then
			n = n + g.cnt[v] + g.dc[v]
		end
	end
	return n
end

-- wpass_aligned is wpass's work on a run s of a table of byte-aligned
-- slots (fingerprints of 4, 12, 20 or 28 bits), starting at byte blo: a
-- slot's stamp is the low half of its first byte, so string.find looks
-- for the bytes whose low half the pass empties (pattern), and a slot
-- found is emptied if it is not empty already. It writes the slots it
-- empties, and returns how many such slots are left in the table.
local function wpass_aligned(g, s, blo, pattern, left)
	local w = g.f / 8
	local zeros = string.rep('\0', w)
	local kills = {} -- the positions in s of the slots emptied
	local p = 1
	while left > 0 do
		local at = string.find(s, pattern, p)
		if not at then
			break
		end
		p = at + 1
		if (blo + at - 1) % w == 0 then
			local st = string.byte(s, at) % 16
			if st ~= 0 or string.sub(s, at, at + w - 1) ~= zeros then
				kills[#kills + 1] = at
				g.dc[st] = g.dc[st] - 1
				left = left - 1
				p = at + w
			end
		end
	end
	if #kills * w * 64 > #s then
		-- Many: the run written again, in one SETRANGE.
		local parts, prev = {}, 1
		for _, at in ipairs(kills) do
			parts[#parts + 1] = string.sub(s, prev, at - 1)
			parts[#parts + 1] = zeros
			prev = at + w
		end
		parts[#parts + 1] = string.sub(s, prev)
		redis.call('SETRANGE', g.T, decimal(blo), table.concat(parts))
	elseif #kills > 0 then
		local offs, zero = {}, {}
		for k, at in ipairs(kills) do
			offs[k] = blo + at - 1
			zero[offs[k]] = 0
		end
		setfields(g, 'u' .. g.f, offs, zero)
	end
	return left
end

-- wpass_bits is wpass's work on a run s of a table of slots of any width,
-- holding buckets [lo, hi) from byte blo: it reads each slot's stamp,
-- and empties those kill marks, writing the bytes it changes, and
-- returns how many such slots are left in the table.
local function wpass_bits(g, s, blo, lo, hi, kill, left)
	-- changed[q]: the new value of byte q (counted from the table's
	-- start); touched: those bytes, in increasing order (slots are
	-- visited in order, and a byte two slots share is listed once).
	local changed, touched = {}, {}
	for i = lo, hi - 1 do
		if left == 0 then
			break
		end
		for j = 0, g.b - 1 do
			local o = i * g.B + j * g.f
			local r = o % 8
			local k = (o - r) / 8
			-- The stamp first: the slot's low 4 bits, in one byte or two.
			local st = changed[k] or string.byte(s, k - blo + 1)
			if r > 4 then
				st = st + (changed[k + 1] or string.byte(s, k - blo + 2)) * 256
			end
			st = math.floor(st / pow2[r]) % 16
			if kill[st] then
				local x = 0
				for q = k + g.nb[r] - 1, k, -1 do
					x = x * 256 + (changed[q] or string.byte(s, q - blo + 1))
				end
				local v = math.floor(x / pow2[r]) % g.pf
				if v ~= 0 then
					local y = x - v * pow2[r]
					for q = k, k + g.nb[r] - 1 do
						local c = y % 256
						if not changed[q] then
							touched[#touched + 1] = q
						end
						changed[q] = c
						y = (y - c) / 256
					end
					g.dc[st] = g.dc[st] - 1
					left = left - 1
				end
			end
		end
	end
	if #touched * 64 > #s then
		-- Many changes: the run written again, a stretch of changed bytes
		-- at a time.
		local parts, prev, k = {}, blo, 1
		while k <= #touched do
			local q = touched[k]
			if q > prev then
				parts[#parts + 1] = string.sub(s, prev - blo + 1, q - blo)
			end
			local r = {}
			while k <= #touched and touched[k] == q + #r and #r < 4000 do
				r[#r + 1] = changed[touched[k]]
				k = k + 1
			end
			parts[#parts + 1] = string.char(unpack(r))
			prev = q + #r
		end
		parts[#parts + 1] = string.sub(s, prev - blo + 1)
		redis.call('SETRANGE', g.T, decimal(blo), table.concat(parts))
	elseif #touched > 0 then
		setfields(g, 'u8', touched, changed)
	end
	return left
end

-- wpass empties the non-empty slots of buckets [from, to) whose stamp kill
-- marks, reading the table a run of buckets at a time and writing back
-- the bytes it changes. It stops once no such slot is left anywhere (the
-- counts say so).
local function wpass(g, from, to, kill)
	local left = wcount(g, kill)
	local run = 2048
	local class = {}
	for v = 0, 15 do
		if kill[v] then
			for h = 0, 15 do
				local c = string.char(h * 16 + v)
				if c == '\0' then
					c = '%z'
				elseif not c:match('%w') then
					c = '%' .. c
				end
				class[#class + 1] = c
			end
		end
	end
	local pattern = '[' .. table.concat(class) .. ']'
	for lo = from, to - 1, run do
		if left == 0 then
			return
		end
		local hi = math.min(lo + run, to)
		local blo = math.floor(lo * g.B / 8)
		local bhi = math.ceil(hi * g.B / 8) - 1
		local s = redis.call('GETRANGE', g.T, decimal(blo), decimal(bhi))
		if g.f % 8 == 0 then
			left = wpass_aligned(g, s, blo, pattern, left)
		else
			left = wpass_bits(g, s, blo, lo, hi, kill, left)
		end
	end
end

-- wsettle writes the buckets the call changed, then empties the expired
-- slots of the buckets the sweep owes (4 for each key put since the last
-- settle, as the library's sweepStep does after each put: a sweep that
-- empties only slots of the expired stamp, which no put of this epoch
-- writes, ends the same whether it runs after each put or after all of
-- them), and forgets the buckets read: what every pass over the string
-- needs first.
local function wsettle(g)
	flush(g)
	g.by, g.raw, g.sl, g.lo, g.sh, g.n, g.dirty = {}, {}, {}, {}, {}, {}, {}
	if g.pending > 0 and g.cursor < g.m then
		local to = math.min(g.cursor + 4 * g.pending, g.m)
		wpass(g, g.cursor, to, { [g.expired] = true })
		g.cursor = to
	end
	g.pending = 0
end

-- wadvance moves the epoch on to e > E, emptying the slots whose stamps
-- would otherwise be misread (the library's Window.advance has the
-- argument): after one epoch, the expired slots the sweep did not reach;
-- after 2 to 14, every slot whose age would pass 15; after more, all.
local function wadvance(g, e)
	wsettle(g)
	local j = e - g.E
	local ref = g.E % 16
	if j > 14 then
		local n = 0
		for v = 0, 15 do
			n = n + g.cnt[v] + g.dc[v]
		end
		if n > 0 then
			redis.call('SETRANGE', g.T, 0, string.rep('\0', g.tb))
			for v = 0, 15 do
				g.dc[v] = -g.cnt[v]
			end
		end
	elseif j == 1 then
		wpass(g, g.cursor, g.m, { [(ref + 1) % 16] = true })
	else
		local kill = {}
		for v = 0, 15 do
			if (ref - v) % 16 >= 16 - j then
				kill[v] = true
			end
		end
		wpass(g, 0, g.m, kill)
	end
	g.E, g.cursor = e, 0
	wstamps(g)
end

-- wadvance_to brings the segment's epoch to the one of time (nh, nl) if that
-- is later: its time never runs backwards.
local function wadvance_to(g, nh, nl)
	if g.eh >= 0 and (nh < g.eh or (nh == g.eh and nl < g.el)) then
		return
	end
	local e, rh, rl = divmod(nh, nl, g.gh, g.gl)
	-- The end of epoch e: n - (n mod g) + g.
	local eh, el = nh - rh + g.gh, nl - rl + g.gl
	if el < 0 then
		el = el + T32
		eh = eh - 1
	elseif el >= T32 then
		el = el - T32
		eh = eh + 1
	end
	wadvance(g, e)
	g.eh, g.el = eh, el
end

-- wsave writes what the call changed of the segment's state.
local function wsave(g)
	if g.E ~= g.E0 then
		redis.call('BITFIELD', g.T, 'SET', 'i64', decimal(g.tb * 8), decimal(g.E))
	end
	if g.cursor ~= g.c0 or g.eh ~= g.eh0 or g.el ~= g.el0 then
		redis.call('HSET', g.C, 'c', decimal(g.cursor), 'eh', decimal(g.eh), 'el', decimal(g.el))
	end
	for v = 0, 15 do
		if g.dc[v] ~= 0 then
			redis.call('HINCRBY', g.C, 's' .. v, decimal(g.dc[v]))
		end
	end
end

-- wfree returns how many slots of bucket i a put may take (empty, or
-- expired) and the first of them.
local function wfree(g, i)
	local v = bucket(g, i)
	local n, first_free = 0, nil
	for j = 1, g.b do
		local x = v[j]
		if x == 0 or x % 16 == g.expired then
			n = n + 1
			first_free = first_free or j
		end
	end
	return n, first_free
end

-- wplace puts x into slot j of bucket i, forgetting the expired entry it
-- may hold: the stamps' counts follow (an entry moved keeps its count, so
-- its move is set alone).
local function wplace(g, i, j, x)
	local old = set(g, i, j, x)
	if old ~= 0 then
		g.dc[old % 16] = g.dc[old % 16] - 1
	end
	g.dc[x % 16] = g.dc[x % 16] + 1
end

-- wsearch makes room for v (a stamped fingerprint), whose buckets i1 and
-- i2 have no free slot, as the library Window's searchPath does: the
-- breadth-first search (room), free slots being the empty and the expired
-- ones, then the chain moved hole first, node k's move taking slot
-- (k-1) % b + 1 of its bucket; the expired entry the first move
-- overwrites (if any) leaves the counts, and v joins them.
local function wsearch(g, i1, i2, v)
	local q, k, s = room(g, i1, i2, function(g, i)
		local _, first_free = wfree(g, i)
		return first_free
	end, function(x)
		return (x - x % 16) / 16
	end)
	if not q then
		return false
	end
	local old = set(g, q.a[k], s, q.v[k])
	if old ~= 0 then
		g.dc[old % 16] = g.dc[old % 16] - 1
	end
	while true do
		local parent = q.p[k]
		local into = v
		if parent > 0 then
			into = q.v[parent]
		end
		set(g, q.b[k], (k - 1) % g.b + 1, into)
		if parent == 0 then
			g.dc[v % 16] = g.dc[v % 16] + 1
			return true
		end
		k = parent
	end
end

-- The random walk's generator is the library's (internal/table/walk.go):
-- xorshift64* over a state (hi, lo) the client seeds from the key's hash,
-- its words computed with the bit library's 32-bit operations. A move
-- needs only the product's bits 32 to 34 (the slot) or its bit 0 (the
-- start: x's own bit 0, the multiplier being odd). The bit library is
-- there when a function runs, not when the library loads.
local function xorshift(h, l)
	local bxor, bor, lshift, rshift = bit.bxor, bit.bor, bit.lshift, bit.rshift
	l = bxor(l, bor(rshift(l, 12), lshift(h, 20)))
	h = bxor(h, rshift(h, 12))
	h = bxor(h, bor(lshift(h, 25), rshift(l, 7)))
	l = bxor(l, lshift(l, 25))
	l = bxor(l, bor(rshift(l, 27), lshift(h, 5)))
	h = bxor(h, rshift(h, 27))
	return h % T32, l % T32
end

-- mulhi returns ⌊a·b / 2^32⌋ for a, b < 2^32, in 16-bit halves.
local function mulhi(a, b)
	local a0, b0 = a % 65536, b % 65536
	local a1, b1 = (a - a0) / 65536, (b - b0) / 65536
	local t = (a1 * b0 + a0 * b1) * 65536 + a0 * b0
	return a1 * b1 + math.floor(t / T32)
end

-- kickslot returns the slot (from 1) that a walk's move takes from the
-- state (h, l): bits 32 and up of (h·2^32 + l)·0x2545f4914f6cdd1d, mod b
-- (a power of two, at most 8, so bits 32 to 34 decide).
local function kickslot(h, l, b)
	return (l * 1 + h * 5 + mulhi(l, 0x4f6cdd1d)) % 8 % b + 1
end

-- wwalk is the library's random walk (Window's walk): v goes into a
-- random slot of one of its buckets, the entry it displaces to that
-- entry's other bucket, and so on until a displaced entry finds a free
-- slot; after kicks moves without one, every move is undone.
local function wwalk(g, i1, i2, v, h, l)
	h, l = xorshift(h, l)
	local i = i1
	if l % 2 == 1 then
		i = i2
	end
	local cur = v
	local pb, ps, pp = {}, {}, {}
	for n = 1, g.kicks do
		h, l = xorshift(h, l)
		local s = kickslot(h, l, g.b)
		bucket(g, i)
		local victim = set(g, i, s, cur)
		pb[n], ps[n], pp[n] = i, s, cur
		cur = victim
		i = alt(g, i, (cur - cur % 16) / 16)
		local c, fs = wfree(g, i)
		if c > 0 then
			local old = set(g, i, fs, cur)
			if old ~= 0 then
				g.dc[old % 16] = g.dc[old % 16] - 1
			end
			g.dc[v % 16] = g.dc[v % 16] + 1
			return true
		end
	end
	-- INVARIANT: going backwards, cur is the entry step n displaced, and
	-- slot (pb[n], ps[n]) holds pp[n], as step n left it.
	for n = #pb, 1, -1 do
		set(g, pb[n], ps[n], cur)
		cur = pp[n]
	end
	return false
end

-- wput writes the key of fingerprint fp (first bucket i1, walk state
-- (h, l)) at the segment's epoch, as the library's Window.put: a live copy
-- is refreshed (unless unique) and the reply is 2; else the key takes a
-- free slot of the bucket with more of them (i1 on a tie), or one the
-- search or the walk makes, and the reply is 1; else 0 (no room: nothing
-- changed).
local function wput(g, i1, fp, h, l, unique)
	local i2 = alt(g, i1, fp)
	local v = fp * 16 + g.now
	for _, i in ipairs({ i1, i2 }) do
		local sl = bucket(g, i)
		for j = 1, g.b do
			local x = sl[j]
			if x ~= 0 and x % 16 ~= g.expired and (x - x % 16) / 16 == fp then
				if not unique then
					set(g, i, j, v)
					g.dc[x % 16] = g.dc[x % 16] - 1
					g.dc[g.now] = g.dc[g.now] + 1
				end
				return 2
			end
		end
	end
	local n1, s1 = wfree(g, i1)
	local n2, s2 = wfree(g, i2)
	if n2 > n1 then
		wplace(g, i2, s2, v)
		return 1
	end
	if n1 > 0 then
		wplace(g, i1, s1, v)
		return 1
	end
	if wsearch(g, i1, i2, v) or wwalk(g, i1, i2, v, h, l) then
		return 1
	end
	return 0
end

-- ckf2_wadd: KEYS = T, C, R[, P]; ARGV = id, b, s, buckets, kicks, retry
-- window (ms), g high, g low, unique (0 or 1), timed (0 or 1), then per
-- key: first bucket, fingerprint, walk state high, low, and when timed
-- its time (ns) high, low: the time the key is judged at, which the
-- client makes the latest of the stream so far (window.go, eventTimes),
-- as a segment sees only its own keys. Returns one code per key: 1 added,
-- 2 in the window (refreshed unless unique), 0 no room.
redis.register_function('ckf2_wadd', function(keys, args)
	local timed = args[10] == '1'
	local per = 4
	if timed then
		per = 6
	end
	local reply = answered(keys, args, 11, per)
	if reply then
		return reply
	end
	local g = segment(keys, args)
	wload(g, keys, args)
	local unique = args[9] == '1'
	local nh, nl
	if not timed then
		nh, nl = nspair(clock())
		wadvance_to(g, nh, nl)
	end
	local out = {}
	local all = {}
	for a = 11, #args, per do
		local i1, fp = tonumber(args[a]), tonumber(args[a + 1])
		all[#all + 1] = i1
		all[#all + 1] = alt(g, i1, fp)
	end
	fetch(g, all)
	for a = 11, #args, per do
		if timed then
			wadvance_to(g, tonumber(args[a + 4]), tonumber(args[a + 5]))
		end
		local r = wput(g, tonumber(args[a]), tonumber(args[a + 1]), tonumber(args[a + 2]), tonumber(args[a + 3]), unique)
		out[#out + 1] = r
		if r ~= 0 then
			g.pending = g.pending + 1
		end
	end
	wsettle(g)
	wsave(g)
	remember(keys, args[6], out)
	return out
end)

-- ckf2_wdel: KEYS = T, C, R[, P]; ARGV = id, b, s, buckets, kicks, retry
-- window (ms), g high, g low, then pairs (first bucket, fingerprint).
-- Returns 1 (the key's live entry removed) or 0 per pair.
redis.register_function('ckf2_wdel', function(keys, args)
	local reply = answered(keys, args, 9, 2)
	if reply then
		return reply
	end
	local g = segment(keys, args)
	wload(g, keys, args)
	wadvance_to(g, nspair(clock()))
	local i1, i2, fp = pairs2(g, args, 9)
	local out = {}
	for k = 1, #i1 do
		out[k] = 0
		for _, i in ipairs({ i1[k], i2[k] }) do
			local sl = bucket(g, i)
			for j = 1, g.b do
				local x = sl[j]
				if x ~= 0 and x % 16 ~= g.expired and (x - x % 16) / 16 == fp[k] then
					set(g, i, j, 0)
					g.dc[x % 16] = g.dc[x % 16] - 1
					out[k] = 1
				end
			end
		end
	end
	wsettle(g)
	wsave(g)
	remember(keys, args[6], out)
	return out
end)

-- ckf2_wnow: the time lookups judge ages by, read after the segment's
-- buckets: {seconds, nanoseconds, the segment's id ('' if none), the
-- table's length}. It writes nothing and checks nothing (a checked
-- lookup compares the id and length).
redis.register_function {
	function_name = 'ckf2_wnow',
	flags = { 'no-writes' },
	callback = function(keys, args)
		local s, ns = clock()
		return { s, ns, redis.call('HGET', keys[2], 'id') or '', redis.call('STRLEN', keys[1]) }
	end,
}

-- ckf2_wcount: ARGV = id, table bytes. Returns {seconds, nanoseconds, E,
-- then the counts of the slots of each stamp 0 to 15}, read at once.
register_read('ckf2_wcount', function(keys, args)
	local s, ns = clock()
	local e = redis.call('BITFIELD_RO', keys[1], 'GET', 'i64', decimal(tonumber(args[2]) * 8))[1]
	local st = redis.call('HMGET', keys[2], 's0', 's1', 's2', 's3', 's4', 's5', 's6', 's7',
		's8', 's9', 's10', 's11', 's12', 's13', 's14', 's15')
	local out = { s, ns, e }
	for v = 1, 16 do
		out[3 + v] = tonumber(st[v]) or 0
	end
	return out
end)

-- ckf2_wcreate: ARGV = id, trailer (8 bytes), table bytes. Makes the
-- segment an empty window segment of filter id unless it is one already
-- (then it is left alone). Returns 1 when it created the segment, 0 when it
-- was there.
redis.register_function('ckf2_wcreate', function(keys, args)
	if redis.call('HGET', keys[2], 'id') == args[1] then
		return 0
	end
	redis.call('DEL', keys[1], keys[2])
	redis.call('SETRANGE', keys[1], decimal(tonumber(args[3])), args[2])
	redis.call('HSET', keys[2], 'id', args[1], 'c', '0', 'eh', '-1', 'el', '0')
	return 1
end)

-- ckf2_wset: ARGV = id, string (table and trailer), cursor, eh, el, then
-- the counts of stamps 0 to 15. Replaces the segment with the one given.
redis.register_function('ckf2_wset', function(keys, args)
	redis.call('DEL', keys[1], keys[2])
	redis.call('SET', keys[1], args[2])
	local h = { 'HSET', keys[2], 'id', args[1], 'c', args[3], 'eh', args[4], 'el', args[5] }
	for v = 0, 15 do
		h[#h + 1] = 's' .. v
		h[#h + 1] = args[6 + v]
	end
	redis.call(unpack(h))
	return 1
end)
