// `refract score --candidate ctk=turbo3,ctv=turbo3` end to end on the embedded model (small sizes): the report
// names the TurboQuant candidate and its KLD against the full-precision reference is positive and finite; Deno
// runs the same KLD axis through the library (deno-turbo.ts) and gets Node's KLD.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { PROMPTS_V01, parseReport, runRefract } from '../../src/refract/index.ts';
import { HrmBackend } from '../../src/refract/hrm-backend.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { modelFiles } from '../../src/hrm/files.ts';
import { getGpu } from '../helpers/gpu.ts';
import { TURBO_KLD_RUN } from './turbo-run.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const CORPUS = ('The Fulton County Grand Jury said Friday an investigation of recent primary election produced no '
  + 'evidence that any irregularities took place. ').repeat(12);

describe('refract score with TurboQuant caches', () => {
  it('`refract score --candidate ctk=turbo3,ctv=turbo3` runs and reports the turbo candidate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'refract-turbo-'));
    writeFileSync(join(dir, 'corpus.txt'), CORPUS);
    const prompts = join(dir, 'prompts.jsonl');
    writeFileSync(prompts, JSON.stringify(PROMPTS_V01[0]) + '\n');
    const tsx = join(root, 'node_modules/.bin/tsx');
    const args = ['src/cli/refract.ts', 'score', '--candidate', 'ctk=turbo3,ctv=turbo3', '--prompts', prompts,
      '--corpus', join(dir, 'corpus.txt'), '--chunks', '1', '-c', '64', '--n-predict', '4', '--no-progress',
      '--json-out', join(dir, 'r.json')];
    const { stdout } = await promisify(execFile)(tsx, args, { cwd: root, timeout: 280_000 });
    expect(stdout).toMatch(/REFRACT/);
    const r = parseReport(readFileSync(join(dir, 'r.json'), 'utf8'));
    expect(r.candidate).toContain('ctk=turbo3,ctv=turbo3');
    const kld = r.axes.kld!.mean_kld!;
    expect(Number.isFinite(kld) && kld > 0, `mean KLD ${kld}`).toBe(true);
    expect(r.composite).toBeGreaterThanOrEqual(0);
    expect(r.composite).toBeLessThanOrEqual(100);
  });

  it('Deno runs the KLD axis of ctk=turbo3,ctv=turbo3 and gets the KLD Node gets', async () => {
    const deno = join(root, 'node_modules/.bin/deno');
    const opts = { cwd: root, timeout: 200_000 };
    const { stdout } = await promisify(execFile)(deno, ['run', '-A', 'tests/refract/deno-turbo.ts'], opts);
    const d = JSON.parse(stdout.trim().split('\n').pop()!) as { runtime: string; candidate: string; meanKld: number };
    const lm = await loadModel(modelFiles(), { gpu: await getGpu(), dtype: 'f32' });
    const backend = new HrmBackend(lm, { condition: 'noisy' });
    const node = (await runRefract({ backend, model: lm.name, ...TURBO_KLD_RUN })).axes.kld!.mean_kld!;
    expect([d.runtime, d.candidate]).toEqual(['deno', 'ctk=turbo3,ctv=turbo3']);
    // Naga and Tint compile the same WGSL for the same driver: the same KLD to f32 summation-order noise.
    expect(Math.abs(d.meanKld - node), `Deno ${d.meanKld}, Node ${node}`).toBeLessThan(1e-6 * node + 1e-9);
  });
});
