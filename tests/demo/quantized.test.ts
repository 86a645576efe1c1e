// The demo with quantized weights (built, headless Chromium): before a load the memory check sizes every weights
// choice from config.json (what `checkpointBytes` gives for 8 and 4 bits, group 64), the embedded model loaded
// with 8-bit quantize-on-load holds that many bytes and runs qlinear, and greedy generation equals what
// `hrm generate --quantize 8` prints for the same prompt and tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkpointBytes, dirFiles, loadConfig, type HrmConfig } from '../../src/index.ts';
import { fmtBytes } from '../../demo/memory.ts';
import { cliGenerate, MODEL, openBuiltDemo, pageGenerate, type BuiltDemo } from './built-demo.ts';

const PROMPT = 'The jury said';
const TOKENS = 8;
const Q8 = { bits: 8, groupSize: 64 };

let work: string;
let demo: BuiltDemo;
let config: HrmConfig;
let expected: Promise<string>;

/** The rows of a label/value table. */
const rows = (id: string) => demo.page.$$eval(`#${id} tr`, (trs) => trs.map((tr) => [tr.querySelector('th')?.textContent ?? '', tr.querySelector('td')?.textContent ?? '']));

describe('demo with quantized weights (built, headless Chromium)', () => {
  beforeAll(async () => {
    // The CLI runs on Dawn in Node meanwhile.
    expected = cliGenerate(PROMPT, TOKENS, ['--quantize', '8']);
    expected.catch(() => {});
    config = await loadConfig(dirFiles(MODEL));
    work = mkdtempSync(join(tmpdir(), 'hrm-demo-q-'));
    demo = await openBuiltDemo(join(work, 'dist'));
  }, 180_000);

  afterAll(async () => {
    await demo?.browser.close();
    await demo?.server.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the memory check sizes each weights choice before a load', async () => {
    const { page, log } = demo;
    expect(await page.$eval('#model-status', (el) => el.textContent), log.join('\n')).toBe('Ready: hrm-text-brown-6m (embedded)');
    const q8 = fmtBytes(checkpointBytes(config, Q8)), q4 = fmtBytes(checkpointBytes(config, { bits: 4, groupSize: 64 }));
    expect([q8, q4]).toEqual(['6.6 MiB', '3.5 MiB']); // 8.5 and 4.5 bits a weight of 6.5 M (bf16 scales and biases)
    const choices = await rows('mem-choices');
    expect(choices.map(([k]) => k)).toEqual(['as stored (dense)', '8-bit (group 64, quantized on load)', '4-bit (group 64, quantized on load)']);
    expect(choices.map(([, v]) => v.split(' weights')[0])).toEqual(['12.5 MiB', q8, q4]);
    for (const [, v] of choices) expect(v).toMatch(/in all: fits$/);
    await page.select('#quantize', 'q8');
    expect((await rows('memory'))[0]).toEqual(['weights, 8-bit (group 64, quantized on load)', `${q8} (est.)`]);
  });

  it('loads the embedded model quantized to 8 bits on load and generates what `hrm generate --quantize 8` prints', async () => {
    const { page, log } = demo;
    await page.click('#load-embedded');
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state !== 'loading' && /quantized on load/.test(document.getElementById('model-info')?.textContent ?? ''), { timeout: 60_000 });
    expect(await page.$eval('#model-status', (el) => el.textContent), log.join('\n')).toBe('Ready: hrm-text-brown-6m (embedded)');
    const held = await page.evaluate(() => {
      const w = (window as unknown as { __demo: { lm: { model: { weights: { bytes: number; L: Array<{ gqkv: { quant?: { bits: number; groupSize: number } } }> } } } } }).__demo.lm.model.weights;
      return { bytes: w.bytes, quant: w.L[0].gqkv.quant && { bits: w.L[0].gqkv.quant.bits, groupSize: w.L[0].gqkv.quant.groupSize } };
    });
    expect(held.quant).toEqual(Q8);
    // The estimate differs only by model.z_L_init (kept on the CPU).
    expect(checkpointBytes(config, Q8) - held.bytes).toBe(config.hidden_size * 4);
    expect((await rows('memory'))[0]).toEqual(['weights, 8-bit (group 64, quantized on load)', fmtBytes(held.bytes)]);
    expect(await page.$eval('#gpu-path', (el) => el.textContent)).toMatch(/^qlinear \(8-bit weights, group 64.*sdpa over the full-precision cache.*subgroup-matrix matmul off by default/);
    const text = await pageGenerate(page, PROMPT, TOKENS);
    const want = await expected;
    expect(want.length).toBeGreaterThan(0);
    expect(text, log.join('\n')).toBe(want);
  }, 150_000);
});
