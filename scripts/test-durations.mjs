// Writes tests/durations.json (seconds per test file) from the results vitest cached in its last run here, so that a
// fresh clone, which has no cache, still starts the longest files first (tests/sequencer.ts). Run it after a full
// `npm test` on a machine like CI's (2 cores, no GPU) when files have been added or have changed much.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = 'node_modules/.vite/vitest';
const runs = readdirSync(dir).map((d) => join(dir, d, 'results.json')).filter((f) => {
  try { return statSync(f).isFile(); } catch { return false; }
}).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
if (!runs.length) throw new Error(`[test-durations] no results.json under ${dir}: run npm test first`);
const { results } = JSON.parse(readFileSync(runs[0], 'utf8'));
const out = Object.fromEntries(results
  .map(([key, r]) => [key.replace(/^[^:]*:/, ''), Math.round(r.duration / 100) / 10])
  .sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync('tests/durations.json', `${JSON.stringify(out, null, 2)}\n`);
console.log(`tests/durations.json: ${Object.keys(out).length} files from ${runs[0]}`);
