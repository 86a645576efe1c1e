// REFRACT on the WebGPU HRM backend: the embedded model and the MLX fixture.
import { describe, expect, it } from 'vitest';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { HrmBackend } from '../../src/refract/hrm-backend.ts';
import { runRefract, PROMPTS_V01, parseReport, type RefractReport } from '../../src/refract/index.ts';
import { getGpu } from '../helpers/gpu.ts';
import { fixture, FIXTURES } from '../helpers/fixtures.ts';
import { model } from '../helpers/model.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const CORPUS = 'The Fulton County Grand Jury said Friday an investigation of recent primary election produced no evidence that any irregularities took place. '.repeat(12);
const small = { prompts: PROMPTS_V01.slice(0, 2), nPredict: 4, ctx: 64, chunks: 2, seed: 7, corpus: { text: CORPUS, label: 'test corpus' } };

function stripVolatile(r: RefractReport): unknown {
  return JSON.parse(JSON.stringify(r, (k, v) => (k === 'timestamp' || k.endsWith('_seconds') || k === 'elapsed_s' ? undefined : v)));
}

// Generation on a CPU driver takes ~0.3-1 s a token for the tiny model: runs stay small and get 5 minutes.
describe('REFRACT on HRM-Text (WebGPU)', { timeout: 300_000 }, () => {
  it('the reference against itself scores 100 on every axis and composite 100', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const backend = new HrmBackend(lm, { condition: 'noisy' });
    const r = await runRefract({ backend, model: lm.name, candidate: 'ctk=f16,ctv=f16', ...small, axes: { plad: { perturbations: ['punct'] } } });
    expect(r.axes.gtm!.score).toBe(100);
    expect(r.axes.kld!.score).toBe(100);
    expect(r.axes.kld!.mean_kld).toBe(0);
    expect(r.axes.plad!.score).toBe(100);
    expect(r.composite).toBe(100);
    expect(r.band).toBe('EXCELLENT');
  });

  it('q4/q4 drifts more than q8/q8, both above zero, and a seed gives identical reports', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const backend = new HrmBackend(lm, { condition: 'noisy' });
    const q8 = await backend.runKld({ model: lm.name, corpus: CORPUS, refKv: 'ctk=f16,ctv=f16', candKv: 'ctk=q8_0,ctv=q8_0', chunks: 2, ctx: 64 });
    const q4 = await backend.runKld({ model: lm.name, corpus: CORPUS, refKv: 'ctk=f16,ctv=f16', candKv: 'ctk=q4_0,ctv=q4_0', chunks: 2, ctx: 64 });
    expect(q8.meanKld).toBeGreaterThan(0);
    expect(q4.meanKld).toBeGreaterThan(q8.meanKld);
    expect(q8.chunks).toBe(2);
    const tiny = { ...small, prompts: PROMPTS_V01.slice(0, 1), chunks: 1 };
    const a = await runRefract({ backend, model: lm.name, candidate: 'ctk=q8_0,ctv=q4_0', ...tiny });
    const b = await runRefract({ backend, model: lm.name, candidate: 'ctk=q8_0,ctv=q4_0', ...tiny });
    expect(stripVolatile(a)).toEqual(stripVolatile(b));
    expect(a.axes.kld!.mean_kld).toBeGreaterThan(0);
  });

  it("KLD@D on the fixture ids of hrm-tiny-b equals MLX's mean KL within 10 %", async () => {
    const lm = await model(await getGpu(), 'hrm-tiny-b', 'f32');
    const backend = new HrmBackend(lm);
    const ids = [...await (await fixture('hrm-tiny-b/reference.safetensors')).array('kld_ids')];
    const want = JSON.parse(readFileSync(FIXTURES + 'hrm-tiny-b/reference.json', 'utf8')) as Record<string, number>;
    for (const bits of [8, 4]) {
      const acc = await backend.kldOnIds([ids], 'ctk=f16,ctv=f16', `ctk=q${bits}_0,ctv=q${bits}_0`);
      const mean = acc.result().meanKld;
      expect(Math.abs(mean - want[`f32.kv${bits}.mean_kl`]), `kv${bits}: ours ${mean}, MLX ${want[`f32.kv${bits}.mean_kl`]}`).toBeLessThanOrEqual(0.1 * want[`f32.kv${bits}.mean_kl`]);
    }
  });

  it('`refract score` writes JSON and HTML reports that parse and carry the required fields', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'refract-'));
    const corpus = join(dir, 'corpus.txt');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(corpus, CORPUS);
    const prompts = join(dir, 'prompts.jsonl');
    writeFileSync(prompts, PROMPTS_V01.slice(0, 2).map((p) => JSON.stringify(p)).join('\n') + '\n');
    const tsx = join(root, 'node_modules/.bin/tsx');
    const { stdout, stderr } = await promisify(execFile)(tsx, ['src/cli/refract.ts', 'score', '--candidate', 'ctk=q8_0,ctv=q4_0', '--prompts', prompts,
      '--corpus', corpus, '--chunks', '1', '-c', '64', '--n-predict', '4', '--condition', 'noisy', '--json-out', join(dir, 'r.json'), '--html-out', join(dir, 'r.html')],
    { cwd: root, timeout: 300_000 });
    expect(stdout).toMatch(/REFRACT/);
    expect(stderr).toMatch(/kld: 1\/1/);
    const r = parseReport(readFileSync(join(dir, 'r.json'), 'utf8'));
    for (const k of ['framework_version', 'environment', 'repro_command', 'timestamp', 'score_direction', 'score_range', 'model', 'reference', 'candidate', 'composite', 'band', 'summary', 'diagnosis', 'composite_detail', 'axes', 'extras']) {
      expect(r, k).toHaveProperty(k);
    }
    expect(r.candidate).toContain('q4_0');
    expect(r.axes.kld!.mean_kld).toBeGreaterThan(0);
    const html = readFileSync(join(dir, 'r.html'), 'utf8');
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('<svg');
    expect(html).toContain(r.band);
  });
});
