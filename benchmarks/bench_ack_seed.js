// The seed's side of benchmarks/bench_memory.py: npm `ack` (0.1.0) on the same workload.
//
//   node bench_ack_seed.js <path to node_modules/ack> <chains> <rounds> <nbytes>
//
// Workload, per chain: add(tag, s0); stamp(tag, s0 ^ w1 ^ w2); stamp(tag, w1); stamp(tag, w2)
// -- "add a chain, then three stamps that complete it", 4 operations.  Stamps are made
// before the clock starts; 'acked' and 'failed' listeners are registered.  One warm-up
// round (JIT) is run and not reported.  Prints one JSON object per line.
"use strict";

const crypto = require("crypto");

const [ackPath, chainsArg, roundsArg, nbytesArg] = process.argv.slice(2);
const Ack = require(ackPath);
const chains = Number(chainsArg);
const rounds = Number(roundsArg);
const nbytes = Number(nbytesArg);

function xor(a, b) {
  const r = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) r[i] = a[i] ^ b[i];
  return r;
}

const tags = new Array(chains);
const s0 = new Array(chains);
const s1 = new Array(chains);
const s2 = new Array(chains);
const s3 = new Array(chains);
for (let i = 0; i < chains; i++) {
  tags[i] = "chain-" + i;
  const root = crypto.randomBytes(nbytes);
  const w1 = crypto.randomBytes(nbytes);
  const w2 = crypto.randomBytes(nbytes);
  s0[i] = root;
  s1[i] = xor(xor(root, w1), w2);
  s2[i] = w1;
  s3[i] = w2;
}

function round() {
  const ack = new Ack();
  let acked = 0;
  let failed = 0;
  ack.on("acked", () => { acked++; });
  ack.on("failed", () => { failed++; });
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < chains; i++) {
    const tag = tags[i];
    ack.add(tag, s0[i]);
    ack.stamp(tag, s1[i]);
    ack.stamp(tag, s2[i]);
    ack.stamp(tag, s3[i]);
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (acked !== chains || failed !== 0) {
    throw new Error(`expected ${chains} acked, got ${acked} acked and ${failed} failed`);
  }
  return seconds;
}

round(); // warm-up
for (let r = 0; r < rounds; r++) {
  const seconds = round();
  console.log(JSON.stringify({ seconds, ops: 4 * chains, ops_per_s: (4 * chains) / seconds }));
}
