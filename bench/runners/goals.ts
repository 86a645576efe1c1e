// Issue 30's "Done when" for a recorded run:  npx tsx bench/runners/goals.ts FILE.json|FILE.json.gz
// Prints the goals' table (harness/goals.ts; the run's Markdown has the same) and exits 1 when a required goal is not
// met or the run lacks its figures, 0 when every one is met, 2 when FILE is not a bench result it can read. The
// goals are computed from FILE's figures, not read from its `goals`: runs from before the checker have none, and a
// changed checker judges old runs alike.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import type { BenchResult } from '../harness/result.ts';
import { issueGoals, unmet } from '../harness/goals.ts';
import { goalLines } from '../harness/markdown-goals.ts';

const USAGE = 'usage: npx tsx bench/runners/goals.ts FILE.json|FILE.json.gz';
/**
 * harness.ts's SCHEMA without its version: that module loads the GPU code, which the checker has no use for, and
 * every version so far has the fields the goals read.
 */
const SCHEMA_FAMILY = 'hrm-webgpu-bench/';

const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0];

/** The bench result in `path`, gzip-compressed (`bench/results`) or not; throws a one-line error naming the file. */
function readResult(path: string): BenchResult {
  const bad = (why: string): never => { throw new Error(`[goals] ${path}: ${why}`); };
  let bytes: Buffer = Buffer.alloc(0);
  try {
    bytes = readFileSync(path);
  } catch (e) {
    bad(`cannot read it (${firstLine(e)})`);
  }
  let v: unknown;
  try {
    // gzip's magic bytes rather than the name: a decompressed copy may keep its .gz.
    v = JSON.parse((bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes).toString('utf8'));
  } catch (e) {
    bad(`not JSON, plain or gzip-compressed (${firstLine(e)})`);
  }
  const r = v as Partial<BenchResult> | null;
  if (!r || typeof r !== 'object' || typeof r.schema !== 'string' || !r.schema.startsWith(SCHEMA_FAMILY)) {
    bad(`not a bench result (no "${SCHEMA_FAMILY}..." schema)`);
  }
  if (!Array.isArray(r!.caches) || !r!.kernels || !Array.isArray(r!.kernels.gemv)) {
    bad('not a bench result (no caches or kernels)');
  }
  return r as BenchResult;
}

function main(argv: string[]): number {
  let files: string[];
  try {
    const { values, positionals } = parseArgs({
      args: argv, allowPositionals: true, options: { help: { type: 'boolean', short: 'h' } },
    });
    if (values.help) { console.log(USAGE); return 0; }
    files = positionals;
  } catch (e) {
    console.error(`[goals] ${firstLine(e)}; ${USAGE}`);
    return 2;
  }
  if (files.length !== 1) { console.error(`[goals] one FILE, not ${files.length}; ${USAGE}`); return 2; }
  let r: BenchResult;
  try {
    r = readResult(files[0]);
  } catch (e) {
    console.error(firstLine(e));
    return 2;
  }
  const goals = issueGoals(r);
  console.log(`${files[0]}: ${r.env?.runtime ?? '?'} ${r.settings?.config ?? '?'}, ${r.date ?? '?'}` +
    `${r.env?.commit ? `, commit ${r.env.commit}` : ''}${r.complete === false ? ' (incomplete)' : ''}\n`);
  console.log(goalLines(goals).join('\n'));
  return unmet(goals).length ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
