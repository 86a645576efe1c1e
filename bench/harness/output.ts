// Writing a run's files (Node and Deno both provide node:fs). The JSON is rewritten after every section, so a run
// stopped by a time limit still leaves every figure measured so far.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchResult } from './result.ts';
import { withGoals } from './goals.ts';
import { baseName, type Rendered } from './report.ts';

/** Write <base>.json (partial results, in progress; with the goals they meet so far, as the final JSON has them). */
export function saveJson(dir: string, r: BenchResult): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${baseName(r)}.json`);
  writeFileSync(path, JSON.stringify(withGoals(r), null, 1) + '\n');
  return path;
}

/** Write <base>.json, .md and .svg; returns their paths. */
export function saveAll(dir: string, out: Rendered): string[] {
  mkdirSync(dir, { recursive: true });
  const paths: string[] = [];
  for (const [ext, text] of [['json', out.json], ['md', out.md], ['svg', out.svg]] as const) {
    const path = join(dir, `${out.base}.${ext}`);
    writeFileSync(path, text);
    paths.push(path);
  }
  return paths;
}
