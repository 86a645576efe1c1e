// Puts the cross-check against transformers into the bench's JSON (issue 32: `parity.transformers`, with its passed
// and failed counts and every check's figure and bound):  node bench/harness/merge-parity.mjs OUT FILE
// FILE is bench/runners/parity-transformers.ts's --json; the bench's JSON is the newest *.json in OUT that has the
// bench's `schema` field. Plain JavaScript: bench/parity-transformers.sh runs it with the pack's node, unbundled.
// Says on stderr what it did; no bench JSON in OUT (the step run alone) is not an error.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [out, file] = process.argv.slice(2);
if (!out || !file) {
  console.error('usage: node bench/harness/merge-parity.mjs OUT parity-transformers.json');
  process.exit(2);
}
const parity = JSON.parse(readFileSync(file, 'utf8'));
const read = (f) => { try { return JSON.parse(readFileSync(f, 'utf8')); } catch { return null; } };
const bench = readdirSync(out).filter((f) => f.endsWith('.json')).map((f) => join(out, f))
  .map((f) => ({ f, t: statSync(f).mtimeMs, j: read(f) }))
  .filter((x) => x.j && typeof x.j === 'object' && 'schema' in x.j && 'parity' in x.j)
  .sort((a, b) => b.t - a.t)[0];
if (!bench) {
  console.error(`merge-parity: no bench JSON in ${out}; ${file} stays on its own`);
} else {
  bench.j.parity = { ...(bench.j.parity ?? {}), transformers: parity };
  writeFileSync(bench.f, JSON.stringify(bench.j) + '\n');
  console.error(`merge-parity: ${bench.f} parity.transformers = ${file} ` +
    `(${parity.passed} passed, ${parity.failed} failed)`);
}
