// The demo with quantized weights (built, headless Chromium): before a load the memory check sizes every weights
// choice from config.json (what `checkpointBytes` gives for 8 and 4 bits, group 64), the embedded model loaded
// with 8-bit quantize-on-load holds that many bytes and runs qlinear, and greedy generation equals what
// `hrm generate --quantize 8` prints for the same prompt and tokens. An MLX-quantized checkpoint (`hrm convert
// --quantize 4`) loads as stored: the memory check reads its config.json `quantization`, the text is the CLI's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkpointBytes, loadConfig, type HrmConfig } from '../../src/index.ts';
import { dirFiles } from '../../src/advanced.ts';
import { fmtBytes } from '../../demo/memory.ts';
import { cliGenerate, MODEL, modelWorker, openBuiltDemo, pageGenerate, root, tsx,
  type BuiltDemo } from './built-demo.ts';
import { EMBEDDED_MODEL } from '../../src/hrm/files.ts';

const PROMPT = 'The jury said';
const TOKENS = 8;
const Q8 = { bits: 8, groupSize: 64 };

let work: string;
let demo: BuiltDemo;
let config: HrmConfig;
let expected: Promise<string>;
let q4Dir: string;
let expectedQ4: Promise<string>;

/** The rows of a label/value table. */
const rows = (id: string) => demo.page.$$eval(`#${id} tr`,
  (trs) => trs.map((tr) => [tr.querySelector('th')?.textContent ?? '', tr.querySelector('td')?.textContent ?? '']));

/** The loaded model's weight bytes on the GPU and the first projection's quantization, read in the model's worker. */
const held = async () => (await modelWorker(demo.page)).evaluate(() => {
  type Held = { bytes: number; L: Array<{ gqkv: { quant?: { bits: number; groupSize: number } } }> };
  type Worker = { __demoWorker: { loaded: { model: { weights: Held } } } };
  const w = (globalThis as unknown as Worker).__demoWorker.loaded.model.weights;
  const q = w.L[0].gqkv.quant;
  return { bytes: w.bytes, quant: q && { bits: q.bits, groupSize: q.groupSize } };
});

/** Wait until the model panel says a load is over and describes a model whose weights row matches `weights`. */
const loadedWith = (weights: string) => demo.page.waitForFunction((w) =>
  document.getElementById('model-status')?.dataset.state !== 'loading' &&
  (document.getElementById('model-info')?.textContent ?? '').includes(w), { timeout: 60_000 }, weights);

describe('demo with quantized weights (built, headless Chromium)', () => {
  beforeAll(async () => {
    // The CLI runs on Dawn in Node meanwhile.
    expected = cliGenerate(PROMPT, TOKENS, ['--quantize', '8']);
    expected.catch(() => {});
    config = await loadConfig(dirFiles(MODEL));
    work = mkdtempSync(join(tmpdir(), 'hrm-demo-q-'));
    q4Dir = join(work, 'brown-q4');
    expectedQ4 = promisify(execFile)(tsx, ['src/cli/hrm.ts', 'convert', '--out', q4Dir, '--quantize', '4'],
      { cwd: root, timeout: 150_000 })
      .then(() => cliGenerate(PROMPT, TOKENS, ['--model', q4Dir]));
    expectedQ4.catch(() => {});
    demo = await openBuiltDemo(join(work, 'dist'));
  }, 180_000);

  afterAll(async () => {
    await demo?.browser.close();
    await demo?.server.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the memory check sizes each weights choice before a load', async () => {
    const { page, log } = demo;
    expect(await page.$eval('#model-status', (el) => el.textContent),
      log.join('\n')).toBe(`Ready: ${EMBEDDED_MODEL} (embedded)`);
    const q8 = fmtBytes(checkpointBytes(config, Q8)), q4 = fmtBytes(checkpointBytes(config,
      { bits: 4, groupSize: 64 }));
    expect([q8, q4]).toEqual(['10.0 MiB', '5.3 MiB']); // 8.5 and 4.5 bits a weight of 9.9 M (bf16 scales and biases)
    const choices = await rows('mem-choices');
    expect(choices.map(([k]) => k)).toEqual(['as stored (dense)', '8-bit (group 64, quantized on load)',
      '4-bit (group 64, quantized on load)']);
    expect(choices.map(([, v]) => v.split(' weights')[0])).toEqual(['18.9 MiB', q8, q4]);
    for (const [, v] of choices) expect(v).toMatch(/in all: fits$/);
    await page.select('#quantize', 'q8');
    expect((await rows('memory'))[0]).toEqual(['weights, 8-bit (group 64, quantized on load)', `${q8} (est.)`]);
  });

  it('loads the embedded model quantized to 8 bits on load and generates what `hrm generate --quantize 8` prints',
    async () => {
    const { page, log } = demo;
    await page.click('#load-embedded');
    await loadedWith('8-bit (group 64, quantized on load)');
    expect(await page.$eval('#model-status', (el) => el.textContent),
      log.join('\n')).toBe(`Ready: ${EMBEDDED_MODEL} (embedded)`);
    const h = await held();
    expect(h.quant).toEqual(Q8);
    // The estimate differs only by model.z_L_init (kept on the CPU).
    expect(checkpointBytes(config, Q8) - h.bytes).toBe(config.hidden_size * 4);
    expect((await rows('memory'))[0]).toEqual(['weights, 8-bit (group 64, quantized on load)', fmtBytes(h.bytes)]);
    expect(await page.$eval('#gpu-path',
      (el) => el.textContent)).toMatch(new RegExp('^qlinear \\(8-bit weights, group 64.*' +
      'sdpa over the full-precision cache.*matrix-vector reduction (on subgroups|in workgroup memory).*' +
      'prefill matmuls: (rows \\(CPU driver\\)|tiled f32|subgroup-matrix)'));
    const text = await pageGenerate(page, PROMPT, TOKENS);
    const want = await expected;
    expect(want.length).toBeGreaterThan(0);
    expect(text, log.join('\n')).toBe(want);
  }, 150_000);

  it('loads an MLX-quantized checkpoint as stored: the memory check reads its quantization', async () => {
    const { page, log } = demo;
    const want = await expectedQ4;
    await (await page.$('input#folder-input'))!.uploadFile(q4Dir);
    await loadedWith('as stored (4-bit, group 64)');
    expect(await page.$eval('#model-status', (el) => el.textContent),
      `${await page.$eval('#load-error', (el) => el.textContent)}\n${log.join('\n')}`).toBe('Ready: brown-q4');
    const h = await held();
    expect(h.quant).toEqual({ bits: 4, groupSize: 64 });
    // One choice: a stored-quantized checkpoint loads as stored whatever the select says (8-bit, from the test above).
    const choices = await rows('mem-choices');
    expect(choices.map(([k, v]) => [k, v.split(' weights')[0]])).toEqual([['as stored (4-bit, group 64)',
      fmtBytes(h.bytes)]]);
    expect((await rows('memory'))[0]).toEqual(['weights, as stored (4-bit, group 64)', fmtBytes(h.bytes)]);
    expect(await page.$eval('#gpu-path', (el) => el.textContent)).toMatch(/^qlinear \(4-bit weights, group 64/);
    expect(await pageGenerate(page, PROMPT, TOKENS), log.join('\n')).toBe(want);
    expect(want).not.toBe(await expected); // 4 bits change this text (8 bits, above, give the dense model's)
  }, 150_000);
});
