// REFRACT on the WebGPU HRM backend: the embedded model and the MLX fixture.
import { describe, expect, it } from 'vitest';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { HrmBackend } from '../../src/refract/hrm-backend.ts';
import { buildRniahPrompt, DEFAULT_NEEDLE, DEFAULT_QUESTION, ResilientBackend, runRefract, runRniah, PROMPTS_V01,
  parseReport, type RefractReport } from '../../src/refract/index.ts';
import { Gpu } from '../../src/kernels/gpu.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { getGpu } from '../helpers/gpu.ts';
import { fixture, FIXTURES } from '../../testkit/helpers/fixtures.ts';
import { fixtureDir, model } from '../../testkit/helpers/model.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const CORPUS = ('The Fulton County Grand Jury said Friday an investigation of recent primary election produced no '
  + 'evidence that any irregularities took place. ').repeat(12);
const small = { prompts: PROMPTS_V01.slice(0, 2), nPredict: 4, ctx: 64, chunks: 2, seed: 7,
  corpus: { text: CORPUS, label: 'test corpus' } };

function stripVolatile(r: RefractReport): unknown {
  return JSON.parse(JSON.stringify(r,
    (k, v) => (k === 'timestamp' || k.endsWith('_seconds') || k === 'elapsed_s' ? undefined : v)));
}

// Generation on a CPU driver takes ~0.3-1 s a token for the tiny model: runs stay small and get 10 minutes (the
// longest takes ~3.5 on SwiftShader beside another file).
describe('REFRACT on HRM-Text (WebGPU)', { timeout: 600_000 }, () => {
  it('the reference against itself scores 100 on every axis and composite 100', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const backend = new HrmBackend(lm, { condition: 'noisy' });
    const r = await runRefract({ backend, model: lm.name, candidate: 'ctk=f16,ctv=f16', ...small,
      axes: { plad: { perturbations: ['punct'] } } });
    expect(r.axes.gtm!.score).toBe(100);
    expect(r.axes.kld!.score).toBe(100);
    expect(r.axes.kld!.mean_kld).toBe(0);
    // llama.cpp's statistics of a self run: KL 0 at every percentile, same top-1 everywhere, PPL ratio exactly 1.
    const k = r.axes.kld;
    expect(Object.values(k.kld_percentiles!).every((v) => v === 0)).toBe(true);
    expect([k.same_top1, k.same_top1_ci95![1], k.ppl_ratio, k.ppl_ratio_unc, k.delta_p!.rms,
      k.n_positions]).toEqual([1, 1, 1, 0, 0, 2 * 64]);
    expect(k.ppl_ref).toBe(k.ppl_cand);
    expect(r.axes.plad!.score).toBe(100);
    expect(r.composite).toBe(100);
    expect(r.band).toBe('EXCELLENT');
  });

  it('q4/q4 drifts more than q8/q8, both above zero, and a seed gives identical reports', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const backend = new HrmBackend(lm, { condition: 'noisy' });
    const q8 = await backend.runKld({ model: lm.name, corpus: CORPUS, refKv: 'ctk=f16,ctv=f16',
      candKv: 'ctk=q8_0,ctv=q8_0', chunks: 2, ctx: 64 });
    const q4 = await backend.runKld({ model: lm.name, corpus: CORPUS, refKv: 'ctk=f16,ctv=f16',
      candKv: 'ctk=q4_0,ctv=q4_0', chunks: 2, ctx: 64 });
    expect(q8.meanKld).toBeGreaterThan(0);
    expect(q4.meanKld).toBeGreaterThan(q8.meanKld);
    expect(q8.chunks).toBe(2);
    const tiny = { ...small, prompts: PROMPTS_V01.slice(0, 1), chunks: 1 };
    const a = await runRefract({ backend, model: lm.name, candidate: 'ctk=q8_0,ctv=q4_0', ...tiny });
    const b = await runRefract({ backend, model: lm.name, candidate: 'ctk=q8_0,ctv=q4_0', ...tiny });
    expect(stripVolatile(a)).toEqual(stripVolatile(b));
    expect(a.axes.kld!.mean_kld).toBeGreaterThan(0);
  });

  it('a device destroyed mid-KLD is recreated, the model reloaded, and the pass continues from the next chunk with '
    + 'the same numbers', async () => {
    const shared = new HrmBackend(await model(await getGpu(), 'brown', 'f32'), { condition: 'noisy' });
    const kv = { model: 'brown', corpus: CORPUS, refKv: 'ctk=f16,ctv=f16', candKv: 'ctk=q4_0,ctv=q4_0',
      chunks: 2, ctx: 64 };
    const want = await shared.runKld(kv);
    const gpus: Gpu[] = [];
    const make = async () => {
      const gpu = await Gpu.create();
      gpus.push(gpu);
      return new HrmBackend(await loadModel(dirFiles(fixtureDir('brown')), { gpu, dtype: 'f32' }),
        { condition: 'noisy' });
    };
    const log: string[] = [];
    const rb = new ResilientBackend(await make(), make, { log: (l) => log.push(l) });
    const chunks: number[] = [];
    const got = await rb.runKld({ ...kv,
      onChunk: (d) => { chunks.push(d); if (d === 1 && gpus.length === 1) gpus[0].device.destroy(); } });
    expect(chunks).toEqual([1, 2]);
    expect(gpus).toHaveLength(2);
    const recovered = /^GPU device lost during KLD@D .*continuing from the last finished unit \(recovery 1\)$/;
    expect(log).toEqual([expect.stringMatching(recovered)]);
    expect(got.meanKld).toBeCloseTo(want.meanKld, 12);
    expect(got.stats!.kld_percentiles).toEqual(want.stats!.kld_percentiles);
    gpus[1].destroy();
  });

  it('R-NIAH with short explicit lengths runs real cells on the embedded model, and the needle reaches the model',
    async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const backend = new HrmBackend(lm, { condition: 'noisy' });
    const haystack = CORPUS;
    // The ids a cell feeds the model hold the haystack, the needle and the question, in one HRM envelope.
    const { system, user } = buildRniahPrompt(haystack.slice(0, 300), DEFAULT_NEEDLE, DEFAULT_QUESTION, 0.5);
    const ids = backend.promptIds({ prompt: user, system });
    expect(await backend.promptTokens({ prompt: user, system })).toBe(ids.length); // what R-NIAH fits to the context
    const text = lm.tokenizer!.decode(ids);
    expect(text.startsWith('<|im_start|><|quad_start|>')).toBe(true);
    expect(text.endsWith(`${DEFAULT_QUESTION}<|im_end|>`)).toBe(true);
    expect(text).toContain(DEFAULT_NEEDLE);
    const needleIds = lm.tokenizer!.encode(' APRICOT-7-BLUE');
    expect(ids.some((_, i) => needleIds.every((t, j) => ids[i + j] === t)),
      'the keyword tokens are in the prompt ids').toBe(true);
    const r = await runRniah(backend,
      { model: lm.name, reference: 'ctk=f16,ctv=f16', candidate: 'ctk=q4_0,ctv=q4_0', haystack, lengths: [192],
      positions: [0.9], nPredict: 6 });
    expect(r.skipped_cells).toEqual([]);
    expect(r.cells).toHaveLength(1);
    expect(r.cells[0].length).toBe(192);
    // A reference that never retrieves leaves nothing to degrade: n/a (null), else the mean degradation's score.
    expect(r.score).toBe(r.cells[0].base_hits === 0 ? null : 100 * (1 - r.cells[0].degradation));
  });

  it("KLD@D on the fixture ids of hrm-tiny-b equals MLX's mean KL within 10 %", async () => {
    const lm = await model(await getGpu(), 'hrm-tiny-b', 'f32');
    const backend = new HrmBackend(lm);
    const ids = [...await (await fixture('hrm-tiny-b/reference.safetensors')).array('kld_ids')];
    const want = JSON.parse(readFileSync(FIXTURES + 'hrm-tiny-b/reference.json', 'utf8')) as Record<string, number>;
    for (const bits of [8, 4]) {
      const acc = await backend.kldOnIds([ids], 'ctk=f16,ctv=f16', `ctk=q${bits}_0,ctv=q${bits}_0`);
      const mean = acc.result().meanKld;
      const mlx = want[`f32.kv${bits}.mean_kl`];
      expect(Math.abs(mean - mlx), `kv${bits}: ours ${mean}, MLX ${mlx}`).toBeLessThanOrEqual(0.1 * mlx);
    }
  });

  it('`refract score --skip-gtm` of the reference against itself writes the KLD statistics with the self values',
    async () => {
    const dir = mkdtempSync(join(tmpdir(), 'refract-'));
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'corpus.txt'), CORPUS);
    await promisify(execFile)(join(root, 'node_modules/.bin/tsx'),
      ['src/cli/refract.ts', 'score', '--skip-gtm', '--candidate', 'ctk=f16,ctv=f16', '--corpus',
      join(dir, 'corpus.txt'),
      '--chunks', '1', '-c', '64', '--no-progress', '--json-out', join(dir,
        's.json')], { cwd: root, timeout: 300_000 });
    const r = parseReport(readFileSync(join(dir, 's.json'), 'utf8'));
    expect([r.axes.gtm.skipped, r.axes.kld.mean_kld, r.axes.kld.same_top1, r.axes.kld.ppl_ratio,
      r.axes.kld.kld_percentiles!['99.9']]).toEqual([true, 0, 1, 1, 0]);
    expect(r.composite).toBe(100);
  });

  it('`refract score` writes JSON and HTML reports that parse and carry the required fields', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'refract-'));
    const corpus = join(dir, 'corpus.txt');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(corpus, CORPUS);
    const prompts = join(dir, 'prompts.jsonl');
    writeFileSync(prompts, PROMPTS_V01.slice(0, 2).map((p) => JSON.stringify(p)).join('\n') + '\n');
    const tsx = join(root, 'node_modules/.bin/tsx');
    const { stdout, stderr } = await promisify(execFile)(tsx,
      ['src/cli/refract.ts', 'score', '--candidate', 'ctk=q8_0,ctv=q4_0', '--prompts', prompts,
      '--corpus', corpus, '--chunks', '1', '-c', '64', '--n-predict', '4', '--condition', 'noisy',
      '--json-out', join(dir, 'r.json'), '--html-out', join(dir, 'r.html')],
    { cwd: root, timeout: 300_000 });
    expect(stdout).toMatch(/REFRACT/);
    expect(stderr).toMatch(/kld: 1\/1/);
    const r = parseReport(readFileSync(join(dir, 'r.json'), 'utf8'));
    for (const k of ['framework_version', 'environment', 'repro_command', 'timestamp', 'score_direction',
      'score_range', 'model', 'reference', 'candidate', 'composite', 'band', 'summary', 'diagnosis', 'composite_detail',
      'axes', 'extras']) {
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
