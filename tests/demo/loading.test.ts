// The built demo loading models in headless Chromium: a short or stalled download and a web page for the weights
// are not cached; an HTTP 500 is retried and a cut download resumed with a Range request (issue 42); a URL's model
// goes into the download cache and a reload reopens it from there; truncated weights, a config.json that is not
// JSON, a folder without a model and a model too large for the adapter each give a clear error next to the model
// controls and keep the current model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import type { PreviewServer } from 'vite';
import { MODEL, openBuiltDemo, closeBuiltDemo, seenText } from './built-demo.ts';
import { press } from '../../testkit/helpers/browser.ts';
import { flaky, flakyServer, modelFolder } from './flaky-server.ts';
import { pageOps } from './page-ops.ts';
import { EMBEDDED_MODEL } from '../../src/hrm/files.ts';

let work: string;
let server: PreviewServer;
let browser: Browser;
let page: Page;

const setValue = (sel: string, v: string) => page.$eval(sel, (el, val) => { (el as HTMLInputElement).value = val; }, v);
/** The load error shown next to the model controls. */
const loadError = () => page.$eval('#load-error', (el) => el.textContent ?? '');
const { banner } = pageOps(() => page);

/** Wait until #model-status is in `state`; a timeout says what it shows instead. */
async function waitState(state: string, timeout: number): Promise<void> {
  try {
    await page.waitForFunction((s) => document.getElementById('model-status')?.dataset.state === s, { timeout }, state);
  } catch (e) {
    const now = await page.$eval('#model-status', (el) => `${(el as HTMLElement).dataset.state}: ${el.textContent}`);
    throw new Error(`#model-status not ${state} after ${timeout} ms; it shows ${now}`, { cause: e });
  }
}

/**
 * Give `dir` to the folder picker (Chrome enumerates a directory given to a webkitdirectory input, as its picker
 * does) and wait for the banner the failed load raises; returns it.
 */
async function uploadFolder(dir: string): Promise<Awaited<ReturnType<typeof banner>>> {
  await (await page.$('input#folder-input'))!.uploadFile(dir);
  await page.waitForFunction(() => !(document.getElementById('banner') as HTMLElement).hidden, { timeout: 30_000 });
  return banner();
}

describe('demo loading models (built, headless Chromium)', () => {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'hrm-demo-load-'));
    ({ server, browser, page } = await openBuiltDemo(join(work, 'dist'), [flaky]));
  }, 180_000);

  afterAll(() => closeBuiltDemo({ browser, server }, work));

  it('a short download or a web page is not cached; a 500 is retried and a cut download resumed, shown as it goes',
    async () => {
    const base = new URL('flaky', page.url()).href;
    const cached = () =>
      page.evaluate(async () => (await (await caches.open('hrm-webgpu-files-v1')).keys()).map((r) => r.url));
    const dropped = String.raw`The files? it downloaded, .*config\.json.*, (is|are) not kept: `
      + String.raw`a retry downloads (it|them) again\.$`;
    // A server's web page for the weights (HEAD finds the file, GET sends HTML) is named as such, not as a 404.
    const web = /flaky\/model\.safetensors: the server sent a web page \(HTML\) where the model's weights should be/;
    for (const [mode, why] of [['short', /flaky\/model\.safetensors: arrived incomplete/], ['html', web]] as const) {
      flakyServer.mode = mode;
      await setValue('#model-url', base);
      await page.click('#load-url');
      await page.waitForFunction(() => !(document.getElementById('load-error') as HTMLElement).hidden,
        { timeout: 60_000 });
      expect(await loadError()).toMatch(why);
      expect(await loadError()).not.toMatch(/CORS|\(404\)|HTTP 404/); // (the server's port may hold 404)
      expect((await loadError()).split(base).length, 'the URL named once').toBe(2);
      await waitState('kept', 10_000);
      expect(await page.$eval('#model-status', (el) => el.textContent)).toMatch(
        new RegExp(String.raw`^Could not load .*flaky; still using ${EMBEDDED_MODEL} \(embedded\)\. ${dropped}`));
      expect(await cached()).toEqual([]);
    }
    // Cancel download: stops a stalled download, keeps nothing, and says so (not as an error).
    flakyServer.mode = 'stall';
    await setValue('#model-url', base);
    await page.click('#load-url');
    await page.waitForFunction(() => (document.getElementById('dl-progress') as HTMLProgressElement).value > 0,
      { timeout: 30_000 });
    await press(page, '#load-cancel');
    await waitState('kept', 10_000);
    expect(await page.$eval('#model-status', (el) => el.textContent)).toMatch(
      new RegExp(String.raw`^Cancelled loading .*flaky; still using ${EMBEDDED_MODEL} \(embedded\)\. ${dropped}`));
    expect(await page.$eval('#load-error', (el) => (el as HTMLElement).hidden)).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('load-url');
    expect(await cached()).toEqual([]);
    // One HTTP 500 is retried after a second, the retry shown in the progress line; the load succeeds.
    flakyServer.mode = 'error';
    flakyServer.gets.length = 0;
    await page.reload();
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'ready',
      { timeout: 60_000 });
    await setValue('#model-url', base);
    await page.click('#load-url');
    const retry500 = new RegExp('^0 B / 18\\.9 MiB · model\\.safetensors: HTTP 500 Internal Server Error; ' +
      'retrying in 1 s \\(attempt 2 of 5\\)$');
    await seenText(page, '#dl-text', retry500, 30_000);
    await page.waitForFunction((b) => document.getElementById('model-status')?.textContent === `Ready: ${b}`,
      { timeout: 60_000 }, base);
    // downloaded, not served from a bad cache entry
    expect(flakyServer.gets.filter((f) => f === 'model.safetensors')).toHaveLength(2);
    expect((await cached()).some((u) => u.endsWith('/flaky/model.safetensors'))).toBe(true);
    // A connection cut halfway is resumed with a Range request from the last byte received, not started over.
    await page.click('#clear-cache');
    await page.waitForFunction(() => document.getElementById('cache-usage')?.textContent?.startsWith('0 files cached'),
      { timeout: 10_000 });
    flakyServer.mode = 'cut';
    flakyServer.ranges.length = 0;
    await page.click('#load-url');
    await seenText(page, '#dl-text',
      new RegExp('MiB / 18\\.9 MiB · model\\.safetensors: connection (lost|closed) after \\d+ .*; ' +
        'retrying in 1 s \\(attempt 2 of 5\\)$'), 30_000);
    await page.waitForFunction((b) => document.getElementById('model-status')?.textContent === `Ready: ${b}`,
      { timeout: 60_000 }, base);
    expect(flakyServer.ranges).toHaveLength(1);
    const from = Number(/^bytes=(\d+)-$/.exec(flakyServer.ranges[0])?.[1]);
    expect(from).toBeGreaterThan(0);
    expect(from).toBeLessThanOrEqual(statSync(join(MODEL, 'model.safetensors')).size / 2);
    expect(await page.$eval('#dl-text', (el) => el.textContent)).toBe('18.9 MiB / 18.9 MiB');
    flakyServer.mode = 'ok';
    await page.click('#clear-cache');
    await page.click('#load-embedded');
    await page.waitForFunction((want) => document.getElementById('model-status')?.textContent === want,
      { timeout: 60_000 }, `Ready: ${EMBEDDED_MODEL} (embedded)`);
  }, 180_000);

  it('loads a model from a URL into the download cache; a reload reopens it from the cache', async () => {
    const base = new URL(`models/${EMBEDDED_MODEL}/`, page.url()).href;
    const fetched: string[] = [];
    const onRequest = (r: { url(): string; method(): string }) => {
      if (r.url().endsWith('/model.safetensors')) fetched.push(r.method());
    };
    page.on('request', onRequest);
    const ready = `Ready: ${base.replace(/\/$/, '')}`;
    try {
      await setValue('#model-url', base);
      await page.click('#load-url');
      await page.waitForFunction((t) => document.getElementById('model-status')?.textContent === t,
        { timeout: 60_000 }, ready);
      expect(await page.$eval('#dl-text', (el) => el.textContent)).toBe('18.9 MiB / 18.9 MiB');
      expect(await page.$eval('#up-text', (el) => el.textContent)).toBe('18.9 MiB / 18.9 MiB');
      expect(fetched).toContain('GET'); // the whole file, once, into Cache Storage
      await page.waitForFunction(() => /^[1-9]\d* files? cached, (18\.9|19\.0) MiB/
        .test(document.getElementById('cache-usage')?.textContent ?? ''), { timeout: 30_000 });
      fetched.length = 0;
      // The page remembers the model and opens it again, every read answered from the cache.
      await page.reload();
      await page.waitForFunction((t) => document.getElementById('model-status')?.textContent === t,
        { timeout: 60_000 }, ready);
      expect(await page.$eval('#model-url', (el) => (el as HTMLInputElement).value)).toBe(base.replace(/\/$/, ''));
      expect(await page.$eval('#dl-text', (el) => el.textContent)).toBe('18.9 MiB / 18.9 MiB');
      expect(fetched).toEqual([]);
    } finally {
      page.off('request', onRequest);
    }
    await page.click('#clear-cache');
    await page.waitForFunction(() => document.getElementById('cache-usage')?.textContent?.startsWith('0 files cached'),
      { timeout: 10_000 });
    // No longer cached: a reload does not download it by itself, it opens the embedded model with the URL filled in.
    await page.reload();
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'ready',
      { timeout: 60_000 });
    expect(await page.$eval('#model-status', (el) => el.textContent)).toBe(`Ready: ${EMBEDDED_MODEL} (embedded)`);
    expect(await page.$eval('#model-url', (el) => (el as HTMLInputElement).value)).toBe(base.replace(/\/$/, ''));
    await page.waitForFunction(() => document.getElementById('cache-usage')?.textContent?.startsWith('0 files cached'),
      { timeout: 10_000 });
  }, 120_000);

  it('a URL whose files changed after Clear cache loads the new files, in the page and in the model\'s worker',
    async () => {
    const base = new URL('flaky', page.url()).href;
    const context = () => page.$eval('#model-info', (el) => el.textContent ?? '');
    flakyServer.mode = 'ok';
    await setValue('#model-url', base);
    await page.click('#load-url');
    await page.waitForFunction((b) => document.getElementById('model-status')?.textContent === `Ready: ${b}`,
      { timeout: 60_000 }, base);
    expect(await context()).toMatch(/4096 tokens/);
    await page.click('#clear-cache');
    await page.waitForFunction(() => document.getElementById('cache-usage')?.textContent?.startsWith('0 files cached'),
      { timeout: 10_000 });
    const config = { ...JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8')), max_position_embeddings: 1024 };
    flakyServer.folder = modelFolder(work, 'longer-context', { 'config.json': JSON.stringify(config) });
    try {
      await page.click('#load-url');
      // The status still reads Ready from the first load until this one starts.
      await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state !== 'ready',
        { timeout: 10_000, polling: 'mutation' });
      await page.waitForFunction((b) => document.getElementById('model-status')?.textContent === `Ready: ${b}`,
        { timeout: 60_000 }, base);
      // the worker read the new config.json, not one it kept from before
      expect(await context()).toMatch(/1024 tokens/);
    } finally {
      flakyServer.folder = MODEL;
    }
    await page.click('#clear-cache');
    await page.click('#load-embedded');
    await page.waitForFunction((want) => document.getElementById('model-status')?.textContent === want,
      { timeout: 60_000 }, `Ready: ${EMBEDDED_MODEL} (embedded)`);
  }, 120_000);

  it('a folder whose model.safetensors is truncated gives a clear error and keeps the current model', async () => {
    const st = readFileSync(join(MODEL, 'model.safetensors'));
    const dir = modelFolder(work, 'truncated-model', { 'model.safetensors': st.subarray(0, 1 << 20) });
    const b = await uploadFolder(dir);
    expect(b.kind, JSON.stringify(b)).toBe('bad-files');
    expect(b.title).toBe('These files are not a usable HRM-Text model (see Model)');
    expect(b.detail).toBe(''); // the banner only summarises: the message is next to the controls
    expect(await page.$eval('#banner-goto', (el) => (el as HTMLAnchorElement).hash)).toBe('#load-error');
    expect(await loadError()).toMatch(/model\.safetensors.*truncated/);
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'kept',
      { timeout: 10_000 });
    expect(await page.$eval('#model-status',
      (el) => el.textContent)).toBe(`Could not load truncated-model; still using ${EMBEDDED_MODEL} (embedded).`);
    expect(await page.$eval('#load-error',
      (el) => el.textContent)).toMatch(/^These files are not a usable HRM-Text model: .*model\.safetensors/);
    expect(await page.$eval('#generate', (el) => (el as HTMLButtonElement).disabled)).toBe(false);
  }, 60_000);

  it('a config.json that is not JSON gives a clear error', async () => {
    const dir = modelFolder(work, 'bad-config', { 'config.json': '{ "model_type": "hrm_text", oops' });
    await page.click('#banner-close');
    const b = await uploadFolder(dir);
    expect(b.kind, JSON.stringify(b)).toBe('bad-files');
    expect(await loadError())
      .toMatch(/^These files are not a usable HRM-Text model: bad-config\/config\.json: not valid JSON/);
  }, 60_000);

  it('a folder without a model names what it got', async () => {
    const dir = join(work, 'notes');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'notes.txt'), 'not a model');
    await page.keyboard.press('Escape');
    await uploadFolder(dir);
    expect(await loadError()).toMatch(/config\.json: not among the files given \(notes\.txt\)/);
    expect(await page.$eval('#model-status',
      (el) => el.textContent)).toBe(`Could not load notes; still using ${EMBEDDED_MODEL} (embedded).`);
  }, 30_000);

  it('a model that cannot fit is refused before any weight is read', async () => {
    const config = { ...JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8')),
      max_position_embeddings: 1 << 22 };
    const dir = modelFolder(work, 'huge-context', { 'config.json': JSON.stringify(config) });
    await page.click('#banner-close');
    const b = await uploadFolder(dir);
    expect(b.kind, JSON.stringify(b)).toBe('too-large');
    expect(await loadError())
      .toMatch(/KV-cache tensor at context 4194304 is 5\.00 GiB, above this adapter's largest storage binding/);
    expect(await page.$eval('#up-text', (el) => el.textContent)).toBe('–');
    expect(await page.$eval('#model-status',
      (el) => el.textContent)).toBe(`Could not load huge-context; still using ${EMBEDDED_MODEL} (embedded).`);
  }, 60_000);
});
