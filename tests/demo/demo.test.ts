// End-to-end test of the BUILT demo (vite build of demo/ into a temp folder, served by vite preview on 127.0.0.1)
// in headless Chromium: it opens on the embedded model, greedy generation equals what the Node CLI prints, the
// REFRACT panel gives a KLD, score, band and plot, and bad model folders give clear errors. Screenshot:
// artifacts/demo.png.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser, Page } from 'puppeteer-core';
import { build, preview, type PreviewServer } from 'vite';
import { launch, watchConsole } from '../helpers/browser.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const configFile = join(root, 'vite.config.ts');
const MODEL = join(root, 'models/hrm-text-brown-6m');
const PROMPT = 'The jury said';
const PASTED = 'The Fulton County Grand Jury said Friday an investigation of recent primary election produced no evidence that ' +
  'any irregularities took place. The jury further said in term-end presentments that the City Executive Committee, which ' +
  'had over-all charge of the election, deserves the praise and thanks of the City of Atlanta.';

/** What `hrm generate` prints for the same prompt and settings (stdout: the text, then one newline). */
function cliText(): Promise<string> {
  const tsx = join(root, 'node_modules/.bin/tsx');
  return promisify(execFile)(tsx, ['src/cli/hrm.ts', 'generate', PROMPT, '--condition', 'noisy', '--max-tokens', '8', '--seed', '0', '--temperature', '0'], { cwd: root, timeout: 150_000 })
    .then(({ stdout }) => stdout.replace(/\n$/, ''));
}

/** A model folder: the embedded model's files, with some replaced. */
function modelFolder(name: string, replace: Record<string, Uint8Array | string>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors']) {
    if (f in replace) writeFileSync(join(dir, f), replace[f]);
    else copyFileSync(join(MODEL, f), join(dir, f));
  }
  return dir;
}

let work: string;
let server: PreviewServer;
let browser: Browser;
let page: Page;
let log: string[];
let expected: Promise<string>;

const setValue = (sel: string, v: string) => page.$eval(sel, (el, val) => { (el as HTMLInputElement).value = val; }, v);
const banner = () => page.$eval('#banner', (el) => ({
  hidden: (el as HTMLElement).hidden, kind: (el as HTMLElement).dataset.kind, title: el.querySelector('#banner-title')?.textContent ?? '', detail: el.querySelector('#banner-detail')?.textContent ?? '',
}));

describe('demo (built, headless Chromium)', () => {
  beforeAll(async () => {
    // The CLI runs on Dawn in Node meanwhile (it takes ~20 s of CPU here).
    expected = cliText();
    expected.catch(() => {});
    work = mkdtempSync(join(tmpdir(), 'hrm-demo-'));
    const outDir = join(work, 'dist');
    await build({ configFile, logLevel: 'error', build: { outDir, emptyOutDir: true } });
    server = await preview({ configFile, logLevel: 'error', build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: false, open: false } });
    const url = server.resolvedUrls?.local[0];
    if (!url) throw new Error('vite preview did not report a URL');
    browser = await launch();
    page = await browser.newPage();
    await page.setViewport({ width: 1366, height: 860 });
    log = watchConsole(page);
    await page.goto(url);
    await page.waitForFunction(() => ['ready', 'error'].includes(document.getElementById('model-status')?.dataset.state ?? ''), { timeout: 90_000 });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('opens on the embedded model and shows the adapter and memory needs', async () => {
    const status = await page.$eval('#model-status', (el) => ({ state: (el as HTMLElement).dataset.state, text: el.textContent }));
    expect(status, `${JSON.stringify(await banner())}\n${log.join('\n')}`).toEqual({ state: 'ready', text: 'Ready: hrm-text-brown-6m (embedded)' });
    expect(await page.$eval('#adapter', (el) => el.textContent)).toMatch(/shader-f16/);
    expect(await page.$eval('#memory', (el) => el.textContent)).toMatch(/weights\s*12\.5 MiB/);
    expect(await page.$eval('#mem-verdict', (el) => (el as HTMLElement).dataset.verdict)).toBe('ok');
    // Every control has an accessible name.
    const unnamed = await page.$$eval('input, select, textarea, button', (els) => els.filter((el) => {
      const c = el as HTMLInputElement;
      return !(c.labels?.length || c.getAttribute('aria-label') || (el.tagName === 'BUTTON' && el.textContent?.trim()));
    }).map((el) => el.id || el.outerHTML.slice(0, 60)));
    expect(unnamed).toEqual([]);
  });

  it('generates greedily what the Node CLI prints', async () => {
    await setValue('#prompt', PROMPT);
    await page.$$eval('input[name=cond]', (els) => { for (const el of els) (el as HTMLInputElement).checked = (el as HTMLInputElement).value === 'noisy'; });
    await setValue('#max-tokens', '8');
    await setValue('#seed', '0');
    await setValue('#temperature', '0');
    await page.click('#generate');
    await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('output')?.dataset.state ?? ''), { timeout: 90_000 });
    const text = await page.$eval('#output', (el) => el.textContent);
    const want = await expected;
    expect(want.length).toBeGreaterThan(0);
    expect(text, `${JSON.stringify(await banner())}\n${log.join('\n')}`).toBe(want);
    expect(await page.$eval('#gen-stats', (el) => el.textContent)).toMatch(/prompt \d+ tok, [\d.]+ tok\/s · decode 7 tok, [\d.]+ tok\/s · max tokens/);
  }, 150_000);

  it('runs REFRACT KLD@D on pasted text: mean KLD, score, band and a plot', async () => {
    await page.click('input[name=corpus][value=pasted]');
    await setValue('#pasted', PASTED);
    await setValue('#kld-ctx', '32');
    await setValue('#kld-chunks', '1');
    await page.select('#cand-k', 'q8_0');
    await page.select('#cand-v', 'q8_0');
    await page.click('#refract-run');
    await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('refract-result')?.dataset.state ?? ''), { timeout: 90_000 });
    const r = await page.$eval('#refract-result', (el) => ({ state: (el as HTMLElement).dataset.state, kld: Number((el as HTMLElement).dataset.meanKld), text: el.textContent ?? '' }));
    expect(r.state, `${JSON.stringify(await banner())}\n${log.join('\n')}`).toBe('done');
    expect(r.kld).toBeGreaterThan(0); // q8 K/V differ from full precision, a little
    expect(r.kld).toBeLessThan(0.1);
    expect(await page.$eval('#kld-value', (el) => el.textContent)).toMatch(/^\d\.\d{3}e[-+]\d+ nats$/);
    expect(Number(await page.$eval('#kld-score', (el) => el.textContent))).toBeCloseTo(100 * Math.exp(-r.kld), 2);
    expect(await page.$eval('#kld-band', (el) => el.textContent)).toMatch(/^(EXCELLENT|PASS|DEGRADED|FAIL)$/);
    expect(r.text).toMatch(/pasted text: 1 chunk × 32 tokens/);
    expect(await page.$$eval('#kl-plot svg path', (els) => els.length)).toBeGreaterThan(0);
    mkdirSync(join(root, 'artifacts'), { recursive: true });
    await page.screenshot({ path: join(root, 'artifacts/demo.png'), fullPage: true });
  }, 120_000);

  it('stops a generation with the Stop button', async () => {
    await setValue('#max-tokens', '200');
    await page.click('#generate');
    await page.waitForFunction(() => (document.getElementById('output')?.textContent ?? '').length > 0, { timeout: 60_000 });
    await page.click('#gen-stop');
    await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('output')?.dataset.state ?? ''), { timeout: 60_000 });
    expect(await page.$eval('#output', (el) => (el as HTMLElement).dataset.stopReason)).toBe('aborted');
    expect(await page.$eval('#gen-stats', (el) => el.textContent)).toMatch(/aborted$/);
  }, 90_000);

  it('loads a model from a URL into the download cache; after a reload it comes from the cache', async () => {
    const base = new URL('models/hrm-text-brown-6m/', page.url()).href;
    const fetched: string[] = [];
    const onRequest = (r: { url(): string; method(): string }) => { if (r.url().endsWith('/model.safetensors')) fetched.push(r.method()); };
    page.on('request', onRequest);
    try {
      for (const round of [0, 1]) {
        fetched.length = 0;
        await setValue('#model-url', base);
        await page.click('#load-url');
        await page.waitForFunction((b) => document.getElementById('model-status')?.textContent === `Ready: ${b}`, { timeout: 60_000 }, base.replace(/\/$/, ''));
        expect(await page.$eval('#dl-text', (el) => el.textContent)).toBe('12.5 MiB / 12.5 MiB');
        expect(await page.$eval('#up-text', (el) => el.textContent)).toBe('12.5 MiB / 12.5 MiB');
        if (round === 0) {
          expect(fetched).toContain('GET'); // the whole file, once, into Cache Storage
          await page.waitForFunction(() => /^[1-9]\d* files? cached, 12\.\d MiB/.test(document.getElementById('cache-usage')?.textContent ?? ''), { timeout: 10_000 });
          await page.reload();
          await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'ready', { timeout: 60_000 });
        } else {
          expect(fetched).toEqual([]); // HEAD, ranges and the download all answered from the cache
        }
      }
    } finally {
      page.off('request', onRequest);
    }
    await page.click('#clear-cache');
    await page.waitForFunction(() => document.getElementById('cache-usage')?.textContent?.startsWith('0 files cached'), { timeout: 10_000 });
    await page.reload();
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'ready', { timeout: 60_000 });
  }, 120_000);

  it('a folder whose model.safetensors is truncated gives a clear error and keeps the current model', async () => {
    const st = readFileSync(join(MODEL, 'model.safetensors'));
    const dir = modelFolder('truncated-model', { 'model.safetensors': st.subarray(0, 1 << 20) });
    const input = await page.$('input#folder-input');
    // Chrome enumerates a directory given to a webkitdirectory input, as its picker does.
    await input!.uploadFile(dir);
    await page.waitForFunction(() => !(document.getElementById('banner') as HTMLElement).hidden, { timeout: 30_000 });
    const b = await banner();
    expect(b.kind, JSON.stringify(b)).toBe('bad-files');
    expect(b.title).toBe('These files are not a usable HRM-Text model');
    expect(b.detail).toMatch(/model\.safetensors/);
    expect(b.detail).toMatch(/truncated/);
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'ready', { timeout: 10_000 });
    expect(await page.$eval('#model-status', (el) => el.textContent)).toBe('Could not load truncated-model; still using hrm-text-brown-6m (embedded).');
    expect(await page.$eval('#generate', (el) => (el as HTMLButtonElement).disabled)).toBe(false);
  }, 60_000);

  it('a config.json that is not JSON gives a clear error', async () => {
    const dir = modelFolder('bad-config', { 'config.json': '{ "model_type": "hrm_text", oops' });
    await page.click('#banner-close');
    const input = await page.$('input#folder-input');
    await input!.uploadFile(dir);
    await page.waitForFunction(() => !(document.getElementById('banner') as HTMLElement).hidden, { timeout: 30_000 });
    const b = await banner();
    expect(b.kind, JSON.stringify(b)).toBe('bad-files');
    expect(b.detail).toMatch(/config\.json: not valid JSON/);
  }, 60_000);

  it('a model that cannot fit is refused before any weight is read', async () => {
    const config = { ...JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8')), max_position_embeddings: 1 << 22 };
    const dir = modelFolder('huge-context', { 'config.json': JSON.stringify(config) });
    await page.click('#banner-close');
    const input = await page.$('input#folder-input');
    await input!.uploadFile(dir);
    await page.waitForFunction(() => !(document.getElementById('banner') as HTMLElement).hidden, { timeout: 30_000 });
    const b = await banner();
    expect(b.kind, JSON.stringify(b)).toBe('too-large');
    expect(b.detail).toMatch(/KV-cache tensor at context 4194304 is 4\.00 GiB, above this adapter's largest storage binding/);
    expect(await page.$eval('#up-text', (el) => el.textContent)).toBe('–');
    expect(await page.$eval('#model-status', (el) => el.textContent)).toBe('Could not load huge-context; still using hrm-text-brown-6m (embedded).');
  }, 60_000);

  it('a lost GPU device says so and offers a reload', async () => {
    await page.click('#banner-close');
    await page.evaluate('window.__demo.gpu.device.destroy()');
    await page.waitForFunction(() => document.getElementById('banner')?.dataset.kind === 'device-lost', { timeout: 10_000 });
    expect(await page.$eval('#banner-reload', (el) => (el as HTMLElement).hidden)).toBe(false);
    expect(await page.$eval('#generate', (el) => (el as HTMLButtonElement).disabled)).toBe(true);
  });

  it('a browser without WebGPU gets a clear message', async () => {
    const p = await browser.newPage();
    try {
      await p.evaluateOnNewDocument(() => { delete (Navigator.prototype as { gpu?: unknown }).gpu; });
      await p.goto(page.url());
      await p.waitForFunction(() => document.getElementById('banner')?.dataset.kind === 'no-webgpu', { timeout: 20_000 });
      expect(await p.$eval('#banner-title', (el) => el.textContent)).toBe('WebGPU is not available');
      expect(await p.$eval('#model-status', (el) => (el as HTMLElement).dataset.state)).toBe('error');
    } finally {
      await p.close();
    }
  });
});
