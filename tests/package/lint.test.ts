// Line and file length as `npm test` enforces them (eslint.config.mjs: max-len 120 columns and max-lines 300 a file,
// comments included; the generated shaders.gen.ts excepted). Lines written before a linter held the rule (issue 40)
// are being wrapped file by file: long-lines.json holds how many each file still has. The count must match, so a
// new long line fails and a wrapped one is taken off the list in the same change (`node scripts/long-lines.mjs`
// writes the list as it is).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('../../', import.meta.url));
const BEFORE = JSON.parse(readFileSync(new URL('./long-lines.json', import.meta.url),
  'utf8')) as Record<string, number>;

/** Long lines per file, and every other message as `file:line rule message`. */
export async function lint(): Promise<{ long: Record<string, number>; other: string[] }> {
  const results = await new ESLint({ cwd: root }).lintFiles(['.']);
  const long: Record<string, number> = {};
  const other: string[] = [];
  for (const r of results) {
    const file = relative(root, r.filePath);
    for (const m of r.messages) {
      if (m.ruleId === 'max-len') long[file] = (long[file] ?? 0) + 1;
      else other.push(`${file}:${m.line} ${m.ruleId ?? 'parse'} ${m.message}`);
    }
  }
  return { long, other };
}

describe('line and file length (ESLint)', () => {
  it('no file over 300 lines; no line over 120 columns but those long-lines.json lists', async () => {
    const { long, other } = await lint();
    expect(other).toEqual([]);
    expect(long).toEqual(BEFORE);
  }, 240_000);
});
