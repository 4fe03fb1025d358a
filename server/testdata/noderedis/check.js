// check.js drives `cuckoo serve` with node-redis (the `redis` package on
// npm, with @redis/bloom), as a Node.js service would, in RESP3 (node-redis
// 6's default) and RESP2, and checks that every typed bf/cf call returns
// the type the package's typings promise, with the value RedisBloom 8
// gives for the same calls (except where docs/server.md lists a
// difference). .ci/run installs a pinned version in a temporary directory
// and runs:
//
//	node check.js path/to/cuckoo
//
// It starts the server itself (--port 0, a temporary --dir), prints one
// line per failed check and a summary, and exits 1 if any check failed.
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createClient, RESP_TYPES } = require('redis');

const bin = process.argv[2];
if (!bin) {
  console.error('usage: node check.js path/to/cuckoo');
  process.exit(2);
}

const version = require('redis/package.json').version;
const major = Number(version.split('.')[0]);

let checks = 0;
let failures = 0;

// check records one typed call's result: ok says whether its type and
// value are the promised ones.
function check(proto, call, got, ok, want) {
  checks++;
  if (!ok) {
    failures++;
    console.log(`FAIL RESP${proto} ${call}: got ${show(got)}, want ${want}`);
  }
}

function show(v) {
  if (Buffer.isBuffer(v)) return `Buffer(${v.length})`;
  if (v instanceof Map) return `Map(${JSON.stringify([...v])})`;
  if (v === undefined) return 'undefined';
  return `${typeof v} ${JSON.stringify(v)}`;
}

const isBool = (v, want) => typeof v === 'boolean' && (want === undefined || v === want);
const isNum = (v, want) => typeof v === 'number' && (want === undefined || v === want);
const isBools = (v, want) => Array.isArray(v) && v.length === want.length && v.every((x, i) => x === want[i]);
const isNums = (v, want) => Array.isArray(v) && v.length === want.length && v.every((x, i) => typeof x === 'number' && x === want[i]);

// errorOf returns the error a call rejects with, or null.
async function errorOf(p) {
  try {
    await p;
    return null;
  } catch (e) {
    return e;
  }
}

// startServer starts cuckoo serve on a free port and resolves to it.
function startServer(dir) {
  return new Promise((resolve, reject) => {
    const srv = spawn(bin, ['serve', '--port', '0', '--dir', dir, '--save-on-shutdown', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    srv.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on [^ ]*:(\d+),/);
      if (m) resolve({ srv, port: Number(m[1]) });
    });
    srv.on('exit', (code) => reject(new Error(`cuckoo serve exited with ${code}: ${out}`)));
  });
}

// bloom runs the BF.* calls on client c of protocol proto.
async function bloom(c, proto) {
  const k = (s) => `bf-${proto}-${s}`;
  let r;

  r = await c.bf.reserve(k('bf'), 0.001, 1000);
  check(proto, 'bf.reserve', r, r === 'OK', "'OK'");
  r = await c.bf.reserve(k('exp'), 0.01, 1000, { EXPANSION: 4 });
  check(proto, 'bf.reserve EXPANSION', r, r === 'OK', "'OK'");
  r = await c.bf.reserve(k('fixed'), 0.01, 3, { NONSCALING: true });
  check(proto, 'bf.reserve NONSCALING', r, r === 'OK', "'OK'");
  r = await errorOf(c.bf.reserve(k('bf'), 0.01, 10));
  check(proto, 'bf.reserve of an existing key', r && r.message, r && r.message === 'ERR item exists', "the error 'ERR item exists'");

  r = await c.bf.add(k('bf'), 'x');
  check(proto, 'bf.add', r, isBool(r, true), 'true');
  r = await c.bf.add(k('bf'), 'x');
  check(proto, 'bf.add of a present item', r, isBool(r, false), 'false');
  r = await c.bf.add(k('auto'), 'x');
  check(proto, 'bf.add creating the key', r, isBool(r, true), 'true');
  r = await c.bf.mAdd(k('bf'), ['x', 'y', 'z']);
  check(proto, 'bf.mAdd', r, isBools(r, [false, true, true]), '[false, true, true]');
  r = await c.bf.exists(k('bf'), 'y');
  check(proto, 'bf.exists', r, isBool(r, true), 'true');
  r = await c.bf.exists(k('nokey'), 'y');
  check(proto, 'bf.exists of a missing key', r, isBool(r, false), 'false');
  r = await c.bf.mExists(k('bf'), ['x', 'z']);
  check(proto, 'bf.mExists', r, isBools(r, [true, true]), '[true, true]');
  r = await c.bf.card(k('bf'));
  check(proto, 'bf.card', r, isNum(r, 3), '3');
  r = await c.bf.card(k('nokey'));
  check(proto, 'bf.card of a missing key', r, isNum(r, 0), '0');
  r = await c.bf.insert(k('ins'), ['p', 'q'], { CAPACITY: 50, ERROR: 0.01, EXPANSION: 2 });
  check(proto, 'bf.insert', r, isBools(r, [true, true]), '[true, true]');
  r = await c.bf.insert(k('ins'), ['p', 'r']);
  check(proto, 'bf.insert of a present item', r, isBools(r, [false, true]), '[false, true]');
  r = await errorOf(c.bf.insert(k('nokey'), ['p'], { NOCREATE: true }));
  check(proto, 'bf.insert NOCREATE', r && r.message, r && r.message === 'ERR not found', "the error 'ERR not found'");
  r = await c.bf.mAdd(k('fixed'), ['a', 'b', 'c']);
  check(proto, 'bf.mAdd to a NONSCALING filter', r, isBools(r, [true, true, true]), '[true, true, true]');
  r = await errorOf(c.bf.add(k('fixed'), 'd'));
  check(proto, 'bf.add past a NONSCALING capacity', r && r.message, r && r.message === 'ERR non scaling filter is full',
    "the error 'ERR non scaling filter is full'");

  r = await c.bf.info(k('bf'));
  check(proto, 'bf.info', r, r && isNum(r.Capacity, 1000) && isNum(r.Size) && r.Size > 0 && isNum(r['Number of filters'], 1) &&
    isNum(r['Number of items inserted'], 3) && isNum(r['Expansion rate'], 2),
    '{Capacity: 1000, Size: n, "Number of filters": 1, "Number of items inserted": 3, "Expansion rate": 2}');
  r = await c.bf.info(k('fixed'));
  check(proto, 'bf.info of a NONSCALING filter', r, r && isNum(r.Capacity, 3) && r['Expansion rate'] === null,
    '{Capacity: 3, …, "Expansion rate": null}');
  r = await c.bf.info(k('exp'));
  check(proto, 'bf.info EXPANSION 4', r, r && isNum(r['Expansion rate'], 4), '{…, "Expansion rate": 4}');

  await copyByDump(c, proto, c.bf, 'bf', k('bf'), k('copy'));
  r = await c.bf.mExists(k('copy'), ['x', 'y', 'z']);
  check(proto, 'bf.mExists of the loaded copy', r, isBools(r, [true, true, true]), '[true, true, true]');
}

// copyByDump copies filter src to dst with the group's scanDump and
// loadChunk (group: c.bf or c.cf, named name), chunk by chunk, checking
// each call, and checks that the copy's info equals the source's.
async function copyByDump(c, proto, group, name, src, dst) {
  const raw = c.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  const rawGroup = raw[name];
  const chunks = [];
  for (let it = 0; ;) {
    const d = await rawGroup.scanDump(src, it);
    check(proto, `${name}.scanDump`, d, d && isNum(d.iterator) && (d.iterator === 0 ? d.chunk === null || name === 'bf' : Buffer.isBuffer(d.chunk)),
      '{iterator: number, chunk: Buffer (null at the end)}');
    if (!d || d.iterator === 0) break;
    chunks.push(d);
    it = d.iterator;
  }
  for (const d of chunks) {
    const r = await rawGroup.loadChunk(dst, d.iterator, d.chunk);
    check(proto, `${name}.loadChunk`, r, r === 'OK', "'OK'");
  }
  const info = await group.info(src);
  const r = await group.info(dst);
  check(proto, `${name}.info of the loaded copy`, r, JSON.stringify(r) === JSON.stringify(info), JSON.stringify(info));
}

// cuckoo runs the CF.* calls on client c of protocol proto.
async function cuckoo(c, proto) {
  const k = (s) => `cf-${proto}-${s}`;
  let r;

  r = await c.cf.reserve(k('cf'), 2048, { BUCKETSIZE: 3, MAXITERATIONS: 15, EXPANSION: 2 });
  check(proto, 'cf.reserve BUCKETSIZE 3 MAXITERATIONS 15 EXPANSION 2', r, r === 'OK', "'OK'");
  r = await c.cf.reserve(k('plain'), 1000);
  check(proto, 'cf.reserve', r, r === 'OK', "'OK'");
  r = await c.cf.reserve(k('fixed'), 4, { BUCKETSIZE: 1, EXPANSION: 0 });
  check(proto, 'cf.reserve BUCKETSIZE 1 EXPANSION 0', r, r === 'OK', "'OK'");
  r = await errorOf(c.cf.reserve(k('bad'), 1000, { BUCKETSIZE: 256 }));
  check(proto, 'cf.reserve BUCKETSIZE 256', r && r.message, r && r.message === 'BUCKETSIZE: value must be in the range [1, 255]',
    "the error 'BUCKETSIZE: value must be in the range [1, 255]'");
  r = await errorOf(c.cf.reserve(k('bad'), 1000, { MAXITERATIONS: 0 }));
  check(proto, 'cf.reserve MAXITERATIONS 0', r && r.message, r && r.message === 'MAXITERATIONS: value must be in the range [1, 65535]',
    "the error 'MAXITERATIONS: value must be in the range [1, 65535]'");

  r = await c.cf.add(k('cf'), 'a');
  check(proto, 'cf.add', r, isBool(r, true), 'true');
  r = await c.cf.add(k('cf'), 'a');
  check(proto, 'cf.add of a present item', r, isBool(r, true), 'true (a multiset add)');
  r = await c.cf.add(k('auto'), 'a');
  check(proto, 'cf.add creating the key', r, isBool(r, true), 'true');
  r = await c.cf.addNX(k('cf'), 'a');
  check(proto, 'cf.addNX of a present item', r, isBool(r, false), 'false');
  r = await c.cf.addNX(k('cf'), 'b');
  check(proto, 'cf.addNX', r, isBool(r, true), 'true');
  r = await c.cf.exists(k('cf'), 'a');
  check(proto, 'cf.exists', r, isBool(r, true), 'true');
  r = await c.cf.exists(k('nokey'), 'a');
  check(proto, 'cf.exists of a missing key', r, isBool(r, false), 'false');
  if (c.cf.mExists) { // node-redis 5 has no cf.mExists
    r = await c.cf.mExists(k('cf'), ['a', 'b']);
    check(proto, 'cf.mExists', r, isBools(r, [true, true]), '[true, true]');
    r = await c.cf.mExists(k('nokey'), ['a', 'b']);
    check(proto, 'cf.mExists of a missing key', r, isBools(r, [false, false]), '[false, false]');
  }
  r = await c.cf.count(k('cf'), 'a');
  check(proto, 'cf.count', r, isNum(r) && r >= 2, 'a number ≥ 2');
  r = await c.cf.count(k('nokey'), 'a');
  check(proto, 'cf.count of a missing key', r, isNum(r, 0), '0');
  r = await c.cf.del(k('cf'), 'a');
  check(proto, 'cf.del', r, isBool(r, true), 'true');
  r = await errorOf(c.cf.del(k('nokey'), 'a'));
  check(proto, 'cf.del of a missing key', r && r.message, r && r.message === 'Not found', "the error 'Not found'");
  r = await c.cf.insert(k('ins'), ['c', 'd'], { CAPACITY: 100 });
  check(proto, 'cf.insert', r, isBools(r, [true, true]), '[true, true]');
  // CF.INSERTNX answers integers in both protocols; node-redis 5 typed
  // its RESP2 reply as booleans (6 as the integers).
  const nxBools = major < 6 && proto === 2;
  r = await c.cf.insertNX(k('ins'), ['c', 'e']);
  check(proto, 'cf.insertNX', r, nxBools ? isBools(r, [false, true]) : isNums(r, [0, 1]), nxBools ? '[false, true]' : '[0, 1]');
  r = await errorOf(c.cf.insert(k('nokey'), ['c'], { NOCREATE: true }));
  check(proto, 'cf.insert NOCREATE', r && r.message, r && r.message === 'ERR not found', "the error 'ERR not found'");

  // A fixed filter with no room for an item: cf.insert false for it (in
  // RESP2 its -1, which node-redis maps to false), cf.insertNX -1,
  // cf.add the error. A refused item is refused again: the filter is as
  // it was.
  let refused = null;
  for (let batch = 0; batch < 50 && refused === null; batch++) {
    const items = Array.from({ length: 200 }, (_, i) => `f${batch}-${i}`);
    r = await c.cf.insert(k('fixed'), items);
    const ok = Array.isArray(r) && r.length === 200 && r.every((x) => typeof x === 'boolean');
    if (!ok || r.includes(false)) {
      check(proto, 'cf.insert into a fixed filter past its room', r, ok, 'booleans, false for the refused');
      refused = ok ? items[r.indexOf(false)] : '';
    }
  }
  check(proto, 'cf.insert filling a fixed filter', refused, refused !== null, 'an item refused');
  if (refused) {
    r = await c.cf.insertNX(k('fixed'), [refused]);
    check(proto, 'cf.insertNX into a full filter', r, nxBools ? isBools(r, [false]) : isNums(r, [-1]), nxBools ? '[false]' : '[-1]');
    r = await errorOf(c.cf.add(k('fixed'), refused));
    check(proto, 'cf.add into a full filter', r && r.message, r && r.message === 'Filter is full', "the error 'Filter is full'");
  }

  r = await c.cf.info(k('cf'));
  check(proto, 'cf.info', r, r && isNum(r.Size) && r.Size > 0 && isNum(r['Number of buckets']) && isNum(r['Number of filters'], 1) &&
    isNum(r['Number of items inserted'], 2) && isNum(r['Number of items deleted'], 1) && isNum(r['Bucket size'], 3) &&
    isNum(r['Expansion rate'], 2) && isNum(r['Max iterations'], 15),
    '{Size: n, "Number of buckets": n, "Number of filters": 1, "Number of items inserted": 2, "Number of items deleted": 1, "Bucket size": 3, "Expansion rate": 2, "Max iterations": 15}');

  await copyByDump(c, proto, c.cf, 'cf', k('cf'), k('copy'));
  r = await c.cf.exists(k('copy'), 'b');
  check(proto, 'cf.exists in the loaded copy', r, isBool(r, true), 'true');
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuckoo-noderedis-'));
  const { srv, port } = await startServer(dir);
  try {
    for (const proto of [3, 2]) {
      const c = createClient({ socket: { host: '127.0.0.1', port }, RESP: proto });
      c.on('error', (e) => console.error(`RESP${proto} client error:`, e.message));
      await c.connect();
      await bloom(c, proto);
      await cuckoo(c, proto);
      await c.quit();
    }
  } finally {
    srv.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`node-redis ${version}, Node.js ${process.version}: ${checks - failures} of ${checks} typed calls as promised, ${failures} failed`);
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
