// `refract score --candidate ctk=turbo3,ctv=turbo3` end to end on the embedded model (small sizes): the report
// names the TurboQuant candidate and its KLD against the full-precision reference is positive and finite.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { PROMPTS_V01, parseReport } from '../../src/refract/index.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const CORPUS = ('The Fulton County Grand Jury said Friday an investigation of recent primary election produced no '
  + 'evidence that any irregularities took place. ').repeat(12);

describe('refract score with TurboQuant caches', () => {
  it('`refract score --candidate ctk=turbo3,ctv=turbo3` runs and reports the turbo candidate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'refract-turbo-'));
    writeFileSync(join(dir, 'corpus.txt'), CORPUS);
    const prompts = join(dir, 'prompts.jsonl');
    writeFileSync(prompts, PROMPTS_V01.slice(0, 2).map((p) => JSON.stringify(p)).join('\n') + '\n');
    const tsx = join(root, 'node_modules/.bin/tsx');
    const { stdout } = await promisify(execFile)(tsx, ['src/cli/refract.ts', 'score', '--candidate', 'ctk=turbo3,ctv=turbo3',
      '--prompts', prompts, '--corpus', join(dir, 'corpus.txt'), '--chunks', '1', '-c', '64', '--n-predict', '4', '--no-progress',
      '--json-out', join(dir, 'r.json')], { cwd: root, timeout: 240_000 });
    expect(stdout).toMatch(/REFRACT/);
    const r = parseReport(readFileSync(join(dir, 'r.json'), 'utf8'));
    expect(r.candidate).toContain('ctk=turbo3,ctv=turbo3');
    const kld = r.axes.kld!.mean_kld;
    expect(Number.isFinite(kld) && kld > 0, `mean KLD ${kld}`).toBe(true);
    expect(r.composite).toBeGreaterThanOrEqual(0);
    expect(r.composite).toBeLessThanOrEqual(100);
  });
});
