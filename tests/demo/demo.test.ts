// End-to-end test of the BUILT demo (vite build of demo/ into a temp folder, served by vite preview on 127.0.0.1)
// in headless Chromium: it opens on the embedded model, greedy generation equals what the Node CLI prints, Stop
// ends it at once, the REFRACT panel gives a KLD, score, band and plot and its downloaded JSON report equals the
// CLI's, a cut download is not cached, errors show next to their controls, bad model folders give clear errors,
// and axe-core finds nothing in either theme. Screenshots: artifacts/demo*.png.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'puppeteer-core';
import type { Plugin, PreviewServer } from 'vite';
import { sendFile } from '../../scripts/send-file.ts';
import { cliGenerate, MODEL, modelWorker, openBuiltDemo, pageGenerate, root, tsx } from './built-demo.ts';
import { PROMPTS_V01 } from '../../src/refract/prompts.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadConfig, loadTokenizer } from '../../src/hrm/load.ts';
import { formatPrompt } from '../../src/hrm/prompt.ts';

const PROMPT = 'The jury said';
const PASTED = 'The Fulton County Grand Jury said Friday an investigation of recent primary election produced no evidence that ' +
  'any irregularities took place. The jury further said in term-end presentments that the City Executive Committee, which ' +
  'had over-all charge of the election, deserves the praise and thanks of the City of Atlanta.';

/** REFRACT settings the panel and the CLI both run: 2 prompts x 4 tokens, 1 chunk of 32 pasted tokens, q8/q8. */
const TRAJ_PROMPTS = 2;
const TRAJ_TOKENS = 4;

/** `refract score`'s JSON report for those settings (the demo's conditions are "noisy" by then). */
async function cliReport(dir: string): Promise<Record<string, unknown>> {
  const prompts = join(dir, 'prompts.jsonl');
  writeFileSync(prompts, PROMPTS_V01.slice(0, TRAJ_PROMPTS).map((p) => JSON.stringify(p)).join('\n') + '\n');
  writeFileSync(join(dir, 'pasted.txt'), PASTED);
  const out = join(dir, 'cli-report.json');
  await promisify(execFile)(tsx, ['src/cli/refract.ts', 'score', '--candidate', 'ctk=q8_0,ctv=q8_0', '--prompts', prompts, '--corpus', join(dir, 'pasted.txt'),
    '--chunks', '1', '-c', '32', '--n-predict', String(TRAJ_TOKENS), '--condition', 'noisy', '--json-out', out, '--no-progress'], { cwd: root, timeout: 240_000 });
  return JSON.parse(readFileSync(out, 'utf8'));
}

/**
 * The scoring fields of a report (not its timestamp, environment, model name, corpus path or repro command), and
 * apart, the KLD statistics: the CLI runs on another WebGPU implementation (Dawn in Node) than the page
 * (Chrome's SwiftShader), whose f32 logits differ in the last bits, and a KL of 1e-5 nats moves by a few per cent
 * with them (the MLX checks allow 10 % per position for the same reason). llama.cpp's statistics too: KL
 * percentiles and uncertainties, perplexities, and delta p (next-token probability differences of ~1e-3, each
 * moved by ~1e-4 with the logits); their counts and same-top-1 stay exact.
 */
function scoring(r: Record<string, any>): { exact: unknown; kld: Record<string, number>; perPosition: number[]; stats: Record<string, number> } {
  const { mean_kld, ppl, rms_dp_pct, score, per_position_kld, corpus, mean_kld_unc, kld_percentiles, delta_p, ppl_ref, ppl_ref_unc, ppl_cand, ppl_cand_unc, ppl_ratio, ppl_ratio_unc, ...k } = r.axes.kld;
  const { kld_score, ...detail } = r.composite_detail;
  return {
    exact: { reference: r.reference, candidate: r.candidate, band: r.band, composite_detail: detail, gtm: r.axes.gtm, kld: { ...k, corpus: { size_bytes: corpus.size_bytes, sha256_head: corpus.sha256_head } } },
    kld: { mean_kld, ppl, rms_dp_pct, score, kld_score, composite: r.composite, ppl_ref, ppl_cand, ppl_ratio, mean_kld_unc, ppl_ref_unc, ppl_cand_unc, ppl_ratio_unc, dp_rms: delta_p.rms, dp_rms_unc: delta_p.rms_unc },
    perPosition: per_position_kld,
    stats: {
      ...Object.fromEntries(Object.entries(kld_percentiles as Record<string, number>).map(([q, v]) => [`kl ${q}`, v])),
      ...Object.fromEntries(Object.entries(delta_p.percentiles as Record<string, number>).map(([q, v]) => [`dp ${q}`, v])),
      'dp mean': delta_p.mean, 'dp mean_unc': delta_p.mean_unc,
    },
  };
}

/** Relative closeness of every entry of two records of numbers. */
function relDiff(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(a).map((key) => [key, Math.abs(a[key] - b[key]) / Math.max(Math.abs(b[key]), 1e-30)]));
}

/**
 * Model files at /flaky/ on the preview server, served whole ('ok'), or model.safetensors cut short: 'short' ends
 * the response early without a Content-Length (it looks complete), 'cut' drops the connection mid-body, 'stall'
 * sends the first MiB and then nothing (until the page gives up).
 */
let flakyMode: 'ok' | 'short' | 'cut' | 'stall' = 'ok';
const flakyGets: string[] = [];
const flaky: Plugin = {
  name: 'flaky-model-server',
  configurePreviewServer(srv) {
    srv.middlewares.use((req, res, next) => {
      const m = /^\/flaky\/([\w.]+)$/.exec((req.url ?? '').split('?')[0]);
      const file = m && join(MODEL, m[1]);
      if (!file || !existsSync(file)) { if (m) { res.statusCode = 404; res.end(); return; } next(); return; }
      if (req.method === 'GET' && !req.headers.range) flakyGets.push(m[1]);
      if (m[1] !== 'model.safetensors' || flakyMode === 'ok' || req.method !== 'GET' || req.headers.range) { sendFile(req, res, file); return; }
      const bytes = readFileSync(file);
      res.setHeader('Content-Type', 'application/octet-stream');
      if (flakyMode !== 'short') res.setHeader('Content-Length', String(bytes.length));
      res.write(bytes.subarray(0, 1 << 20), () => { if (flakyMode === 'cut') res.destroy(); else if (flakyMode === 'short') res.end(); });
    });
  },
};

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
let expectedReport: Promise<Record<string, unknown>>;

const setValue = (sel: string, v: string) => page.$eval(sel, (el, val) => { (el as HTMLInputElement).value = val; }, v);
/**
 * Click a Stop button, timed inside the page: the status text right after the click, and the milliseconds until
 * `running`'s data-state leaves 'running'.
 */
const timedStop = (stop: string, status: string, running: string) => page.evaluate((ids) => new Promise<{ ms: number; right: string }>((res) => {
  const el = document.getElementById(ids.running)!;
  const t0 = performance.now();
  document.getElementById(ids.stop)!.click();
  const right = document.getElementById(ids.status)!.textContent ?? '';
  const poll = () => (el.dataset.state === 'running' ? setTimeout(poll, 5) : res({ ms: performance.now() - t0, right }));
  poll();
}), { stop, status, running });

/** The load error shown next to the model controls. */
const loadError = () => page.$eval('#load-error', (el) => el.textContent ?? '');
const banner = () => page.$eval('#banner', (el) => ({
  hidden: (el as HTMLElement).hidden, kind: (el as HTMLElement).dataset.kind, title: el.querySelector('#banner-title')?.textContent ?? '', detail: el.querySelector('#banner-detail')?.textContent ?? '',
}));

describe('demo (built, headless Chromium)', () => {
  beforeAll(async () => {
    // The CLI runs on Dawn in Node meanwhile (it takes ~20 s of CPU here).
    expected = cliGenerate(PROMPT, 8);
    expected.catch(() => {});
    work = mkdtempSync(join(tmpdir(), 'hrm-demo-'));
    expectedReport = cliReport(work);
    expectedReport.catch(() => {});
    ({ server, browser, page, log } = await openBuiltDemo(join(work, 'dist'), [flaky]));
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
    expect(await page.$eval('#memory', (el) => el.textContent)).toMatch(/weights, as stored \(dense\)\s*12\.5 MiB/);
    expect(await page.$eval('#mem-verdict', (el) => (el as HTMLElement).dataset.verdict)).toBe('ok');
    // Every control has an accessible name.
    const unnamed = await page.$$eval('input, select, textarea, button', (els) => els.filter((el) => {
      const c = el as HTMLInputElement;
      return !(c.labels?.length || c.getAttribute('aria-label') || (el.tagName === 'BUTTON' && el.textContent?.trim()));
    }).map((el) => el.id || el.outerHTML.slice(0, 60)));
    expect(unnamed).toEqual([]);
    // Opening a model probes no missing file (each 404 is a console error).
    expect(log.filter((l) => /404|Failed to load/.test(l))).toEqual([]);
    // The documentation link works from the built page.
    expect(await page.evaluate(async () => (await fetch((document.getElementById('docs-link') as HTMLAnchorElement).href)).text())).toMatch(/^<!doctype html>.*<h1>hrm-webgpu<\/h1>/s);
    expect(await page.$eval('#adapter', (el) => el.textContent)).toMatch(/subgroup matrices.*kernel path/s);
  });

  it('generates greedily what the Node CLI prints', async () => {
    const text = await pageGenerate(page, PROMPT, 8);
    const want = await expected;
    expect(want.length).toBeGreaterThan(0);
    expect(text, `${JSON.stringify(await banner())}\n${log.join('\n')}`).toBe(want);
    expect(await page.$eval('#gen-stats', (el) => el.textContent)).toMatch(/prompt \d+ tok, [\d.]+ tok\/s · decode 7 tok, [\d.]+ tok\/s · max tokens/);

    // Copy output puts exactly the output on the clipboard.
    await browser.defaultBrowserContext().overridePermissions(new URL(page.url()).origin, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
    await page.click('#copy-output');
    await page.waitForFunction(() => document.getElementById('gen-stats')?.textContent === 'Output copied.', { timeout: 5_000 });
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(want);

    // The prompt's tokens: the ids and pieces the Node tokenizer gives for the same formatted prompt.
    const files = dirFiles(MODEL);
    const { tokenizer, chatTemplate } = await loadTokenizer(files, await loadConfig(files));
    const ids = tokenizer!.encode(formatPrompt(PROMPT, 'noisy', { chatTemplate }));
    await page.click('#tokens-box summary');
    await page.click('#show-tokens');
    // The model's worker tokenizes: the list is there once its summary is.
    await page.waitForFunction(() => document.getElementById('tokens-summary')?.textContent !== '', { timeout: 10_000 });
    const shown = await page.$$eval('#tokens li', (els) => els.map((li) => [Number(li.querySelector('.id')?.textContent), li.childNodes[1]?.textContent ?? '']));
    expect(shown).toEqual(ids.map((id) => [id, tokenizer!.decode([id])]));
    expect(await page.$eval('#tokens-summary', (el) => el.textContent)).toBe(`${ids.length} tokens.`);
  }, 150_000);

  it('runs REFRACT on pasted text: KLD, score, bands, plot; the downloaded JSON report equals the CLI\'s', async () => {
    await page.click('input[name=corpus][value=pasted]');
    await setValue('#pasted', PASTED);
    await setValue('#kld-ctx', '32');
    await setValue('#kld-chunks', '1');
    await setValue('#traj-prompts', String(TRAJ_PROMPTS));
    await setValue('#traj-tokens', String(TRAJ_TOKENS));
    await page.select('#cand-k', 'q8_0');
    await page.select('#cand-v', 'q8_0');
    await page.click('#refract-run');
    await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('refract-result')?.dataset.state ?? ''), { timeout: 120_000 });
    const r = await page.$eval('#refract-result', (el) => ({ state: (el as HTMLElement).dataset.state, kld: Number((el as HTMLElement).dataset.meanKld), text: el.textContent ?? '' }));
    expect(r.state, `${JSON.stringify(await banner())}\n${log.join('\n')}`).toBe('done');
    expect(r.kld).toBeGreaterThan(0); // q8 K/V differ from full precision, a little
    expect(r.kld).toBeLessThan(0.1);
    expect(await page.$eval('#kld-value', (el) => el.textContent)).toMatch(/^\d\.\d{3}e[-+]\d+ nats$/);
    expect(Number(await page.$eval('#kld-score', (el) => el.textContent))).toBeCloseTo(100 * Math.exp(-r.kld), 2);
    expect(await page.$eval('#kld-band', (el) => el.textContent)).toMatch(/^(EXCELLENT|PASS|DEGRADED|FAIL)$/);
    expect(await page.$eval('#composite-band', (el) => el.textContent)).toMatch(/^(EXCELLENT|PASS|DEGRADED|FAIL)$/);
    expect(r.text).toMatch(/KLD band.*composite score.*composite band/s);
    expect(r.text).toMatch(/pasted text: 1 chunk × 32 tokens/);
    expect(await page.$$eval('#kl-plot svg path', (els) => els.length)).toBeGreaterThan(0);
    mkdirSync(join(root, 'artifacts'), { recursive: true });
    await page.screenshot({ path: join(root, 'artifacts/demo.png'), fullPage: true });

    // The report files, downloaded as a user would.
    const dl = join(work, 'downloads');
    mkdirSync(dl, { recursive: true });
    const cdp = await page.createCDPSession();
    await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: dl });
    await page.click('#dl-json');
    await page.click('#dl-html');
    const saved = async (ext: string) => {
      for (let i = 0; i < 200; i++) {
        const f = readdirSync(dl).find((n) => n.endsWith(ext));
        if (f) return readFileSync(join(dl, f), 'utf8');
        await new Promise((res) => setTimeout(res, 100));
      }
      throw new Error(`no ${ext} download in ${dl}`);
    };
    const ours = JSON.parse(await saved('.json'));
    expect(ours.schema).toBe('refract.report.v0.3.1');
    expect(ours.environment.runtime).toBe('browser');
    const theirs = await expectedReport;
    const [a, b] = [scoring(ours), scoring(theirs)];
    expect(a.exact).toEqual(b.exact); // trajectories token for token, bands, chunks, same-top-1, the corpus
    const rel = relDiff(a.kld, b.kld);
    expect(rel.mean_kld).toBeLessThan(0.05);
    expect(rel.rms_dp_pct).toBeLessThan(0.1);
    expect(rel.ppl).toBeLessThan(1e-3);
    for (const s of ['ppl_ref', 'ppl_cand', 'ppl_ratio']) expect(rel[s], s).toBeLessThan(1e-3);
    for (const s of ['mean_kld_unc', 'ppl_ref_unc', 'ppl_cand_unc', 'ppl_ratio_unc', 'dp_rms', 'dp_rms_unc']) expect(rel[s], s).toBeLessThan(0.1);
    expect(Object.keys(a.stats)).toEqual(Object.keys(b.stats));
    for (const [q, v] of Object.entries(b.stats)) {
      // KL values as per position; delta p within 0.05 percentage points of probability.
      expect(Math.abs(a.stats[q] - v), q).toBeLessThanOrEqual(0.1 * Math.abs(v) + (q.startsWith('kl') ? 2e-6 : 5e-4));
    }
    for (const s of ['score', 'kld_score', 'composite']) expect(rel[s], s).toBeLessThan(1e-6);
    expect(a.perPosition.length).toBe(b.perPosition.length);
    a.perPosition.forEach((x, i) => expect(Math.abs(x - b.perPosition[i]), `position ${i}`).toBeLessThanOrEqual(0.1 * Math.abs(b.perPosition[i]) + 2e-6));
    const html = await saved('.html');
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('<svg');
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=["']?https?:/i); // self-contained
  }, 300_000);

  it('Stop ends a REFRACT run after the part on the GPU: "Stopped.", and the previous result and plot are cleared', async () => {
    await page.click('#refract-run');
    await page.waitForFunction(() => document.getElementById('refract-result')?.dataset.state === 'running', { timeout: 10_000 });
    const t = await timedStop('refract-stop', 'refract-status', 'refract-result');
    expect(t.right).toBe('Stopping: finishing the part on the GPU…');
    await page.waitForFunction(() => document.getElementById('refract-result')?.dataset.state === 'stopped', { timeout: 10_000 });
    expect(await page.$eval('#refract-result', (el) => el.textContent)).toBe('');
    expect(await page.$eval('#refract-status', (el) => el.textContent)).toBe('Stopped.');
    expect(await page.$$eval('#kl-plot svg', (els) => els.length)).toBe(0);
    expect(await page.$eval('#dl-json', (el) => (el as HTMLButtonElement).disabled)).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('refract-run');
  }, 30_000);

  it('an error raised in the REFRACT panel shows next to its controls, in the viewport', async () => {
    // Passes the field's own check (min 2) but not the model's context.
    await setValue('#kld-ctx', '100000');
    await page.$eval('#traj', (el) => { (el as HTMLInputElement).checked = false; });
    await page.$eval('#refract-run', (el) => el.scrollIntoView({ block: 'center' }));
    await page.click('#refract-run');
    await page.waitForFunction(() => !(document.getElementById('refract-error') as HTMLElement).hidden, { timeout: 10_000 });
    const e = await page.$eval('#refract-error', (el) => {
      const r = el.getBoundingClientRect();
      return { text: el.textContent ?? '', inView: r.top >= 0 && r.bottom <= innerHeight && r.height > 0, live: el.getAttribute('aria-live') };
    });
    expect(e.text).toBe('Check the settings: Context (ctx) must be a whole number from 2 to 512 (the model\'s context is 512 tokens); it is "100000"');
    expect(e.text).not.toMatch(/\[\w+\]/); // no internal tags
    expect(e.inView).toBe(true);
    expect(e.live).toBe('assertive');
    expect((await banner()).title).toBe('Check the settings (see REFRACT)');
    expect(await page.$eval('#refract-status', (el) => el.textContent)).toMatch(/^Failed/);
    await page.keyboard.press('Escape');
    expect((await banner()).hidden).toBe(true);
    await setValue('#kld-ctx', '32');
    await page.$eval('#traj', (el) => { (el as HTMLInputElement).checked = true; });
  }, 30_000);

  it('Stop ends a generation at once and says so', async () => {
    await setValue('#max-tokens', '200');
    await page.click('#generate');
    await page.waitForFunction(() => (document.getElementById('output')?.textContent ?? '').length > 0, { timeout: 60_000 });
    const t = await timedStop('gen-stop', 'gen-stats', 'output');
    console.log(`demo: Stop took ${t.ms.toFixed(0)} ms`);
    expect(t.right).toBe('Stopping…');
    expect(t.ms).toBeLessThan(1500);
    expect(await page.$eval('#output', (el) => (el as HTMLElement).dataset.stopReason)).toBe('aborted');
    expect(await page.$eval('#gen-stats', (el) => el.textContent)).toMatch(/stopped$/);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('generate');
  }, 90_000);

  it('a cut download is not cached; a retry after the server is fixed (and a reload) succeeds', async () => {
    const base = new URL('flaky', page.url()).href;
    const cached = () => page.evaluate(async () => (await (await caches.open('hrm-webgpu-files-v1')).keys()).map((r) => r.url));
    for (const [mode, why] of [['short', /model\.safetensors.*arrived incomplete/], ['cut', /model\.safetensors.*connection was cut/]] as const) {
      flakyMode = mode;
      await setValue('#model-url', base);
      await page.click('#load-url');
      await page.waitForFunction(() => !(document.getElementById('load-error') as HTMLElement).hidden, { timeout: 60_000 });
      expect(await page.$eval('#load-error', (el) => el.textContent)).toMatch(why);
      expect(await page.$eval('#load-error', (el) => el.textContent)).not.toMatch(/CORS/);
      await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'kept', { timeout: 10_000 });
      expect(await page.$eval('#model-status', (el) => el.textContent)).toMatch(/^Could not load .*flaky \(took .*config\.json.* out of the download cache\); still using hrm-text-brown-6m \(embedded\)\.$/);
      expect(await cached()).toEqual([]);
    }
    // Cancel download: stops a stalled download, keeps nothing, and says so (not as an error).
    flakyMode = 'stall';
    await setValue('#model-url', base);
    await page.click('#load-url');
    await page.waitForFunction(() => (document.getElementById('dl-progress') as HTMLProgressElement).value > 0, { timeout: 30_000 });
    await page.click('#load-cancel');
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'kept', { timeout: 5_000 });
    expect(await page.$eval('#model-status', (el) => el.textContent)).toMatch(/^Cancelled loading .*flaky \(took .* out of the download cache\); still using hrm-text-brown-6m \(embedded\)\.$/);
    expect(await page.$eval('#load-error', (el) => (el as HTMLElement).hidden)).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('load-url');
    expect(await cached()).toEqual([]);
    flakyMode = 'ok';
    await page.reload();
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'ready', { timeout: 60_000 });
    flakyGets.length = 0;
    await setValue('#model-url', base);
    await page.click('#load-url');
    await page.waitForFunction((b) => document.getElementById('model-status')?.textContent === `Ready: ${b}`, { timeout: 60_000 }, base);
    expect(flakyGets).toContain('model.safetensors'); // downloaded again, not served from a bad cache entry
    expect((await cached()).some((u) => u.endsWith('/flaky/model.safetensors'))).toBe(true);
    await page.click('#clear-cache');
    await page.click('#load-embedded');
    await page.waitForFunction(() => document.getElementById('model-status')?.textContent === 'Ready: hrm-text-brown-6m (embedded)', { timeout: 60_000 });
  }, 180_000);

  it('loads a model from a URL into the download cache; a reload reopens it from the cache', async () => {
    const base = new URL('models/hrm-text-brown-6m/', page.url()).href;
    const fetched: string[] = [];
    const onRequest = (r: { url(): string; method(): string }) => { if (r.url().endsWith('/model.safetensors')) fetched.push(r.method()); };
    page.on('request', onRequest);
    const ready = `Ready: ${base.replace(/\/$/, '')}`;
    try {
      await setValue('#model-url', base);
      await page.click('#load-url');
      await page.waitForFunction((t) => document.getElementById('model-status')?.textContent === t, { timeout: 60_000 }, ready);
      expect(await page.$eval('#dl-text', (el) => el.textContent)).toBe('12.5 MiB / 12.5 MiB');
      expect(await page.$eval('#up-text', (el) => el.textContent)).toBe('12.5 MiB / 12.5 MiB');
      expect(fetched).toContain('GET'); // the whole file, once, into Cache Storage
      await page.waitForFunction(() => /^[1-9]\d* files? cached, 12\.\d MiB/.test(document.getElementById('cache-usage')?.textContent ?? ''), { timeout: 10_000 });
      fetched.length = 0;
      // The page remembers the model and opens it again, every read answered from the cache.
      await page.reload();
      await page.waitForFunction((t) => document.getElementById('model-status')?.textContent === t, { timeout: 60_000 }, ready);
      expect(await page.$eval('#model-url', (el) => (el as HTMLInputElement).value)).toBe(base.replace(/\/$/, ''));
      expect(await page.$eval('#dl-text', (el) => el.textContent)).toBe('12.5 MiB / 12.5 MiB');
      expect(fetched).toEqual([]);
    } finally {
      page.off('request', onRequest);
    }
    await page.click('#clear-cache');
    await page.waitForFunction(() => document.getElementById('cache-usage')?.textContent?.startsWith('0 files cached'), { timeout: 10_000 });
    // No longer cached: a reload does not download it by itself, it opens the embedded model with the URL filled in.
    await page.reload();
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'ready', { timeout: 60_000 });
    expect(await page.$eval('#model-status', (el) => el.textContent)).toBe('Ready: hrm-text-brown-6m (embedded)');
    expect(await page.$eval('#model-url', (el) => (el as HTMLInputElement).value)).toBe(base.replace(/\/$/, ''));
    await page.waitForFunction(() => document.getElementById('cache-usage')?.textContent?.startsWith('0 files cached'), { timeout: 10_000 });
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
    expect(b.title).toBe('These files are not a usable HRM-Text model (see Model)');
    expect(b.detail).toBe(''); // the banner only summarises: the message is next to the controls
    expect(await page.$eval('#banner-goto', (el) => (el as HTMLAnchorElement).hash)).toBe('#load-error');
    expect(await loadError()).toMatch(/model\.safetensors.*truncated/);
    await page.waitForFunction(() => document.getElementById('model-status')?.dataset.state === 'kept', { timeout: 10_000 });
    expect(await page.$eval('#model-status', (el) => el.textContent)).toBe('Could not load truncated-model; still using hrm-text-brown-6m (embedded).');
    expect(await page.$eval('#load-error', (el) => el.textContent)).toMatch(/^These files are not a usable HRM-Text model: .*model\.safetensors/);
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
    expect(await loadError()).toMatch(/^These files are not a usable HRM-Text model: bad-config\/config\.json: not valid JSON/);
  }, 60_000);

  it('a folder without a model names what it got', async () => {
    const dir = join(work, 'notes');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'notes.txt'), 'not a model');
    await page.keyboard.press('Escape');
    await (await page.$('input#folder-input'))!.uploadFile(dir);
    await page.waitForFunction(() => !(document.getElementById('banner') as HTMLElement).hidden, { timeout: 30_000 });
    expect(await loadError()).toMatch(/config\.json: not among the files given \(notes\.txt\)/);
    expect(await page.$eval('#model-status', (el) => el.textContent)).toBe('Could not load notes; still using hrm-text-brown-6m (embedded).');
  }, 30_000);

  it('a model that cannot fit is refused before any weight is read', async () => {
    const config = { ...JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8')), max_position_embeddings: 1 << 22 };
    const dir = modelFolder('huge-context', { 'config.json': JSON.stringify(config) });
    await page.click('#banner-close');
    const input = await page.$('input#folder-input');
    await input!.uploadFile(dir);
    await page.waitForFunction(() => !(document.getElementById('banner') as HTMLElement).hidden, { timeout: 30_000 });
    const b = await banner();
    expect(b.kind, JSON.stringify(b)).toBe('too-large');
    expect(await loadError()).toMatch(/KV-cache tensor at context 4194304 is 4\.00 GiB, above this adapter's largest storage binding/);
    expect(await page.$eval('#up-text', (el) => el.textContent)).toBe('–');
    expect(await page.$eval('#model-status', (el) => el.textContent)).toBe('Could not load huge-context; still using hrm-text-brown-6m (embedded).');
  }, 60_000);

  it('axe-core finds no accessibility violations in the light and dark themes (screenshots of both, and a phone)', async () => {
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
    for (const theme of ['light', 'dark'] as const) {
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: theme }]);
      const violations = await page.evaluate(async () => {
        const r = await (window as unknown as { axe: { run(c: Document): Promise<{ violations: Array<{ id: string; nodes: Array<{ target: unknown[] }> }> }> } }).axe.run(document);
        return r.violations.map((v) => `${v.id}: ${v.nodes.map((n) => JSON.stringify(n.target)).join(' ')}`);
      });
      expect(violations, theme).toEqual([]);
      await page.screenshot({ path: join(root, `artifacts/demo-${theme}.png`), fullPage: true });
    }
    await page.setViewport({ width: 390, height: 844 });
    await page.screenshot({ path: join(root, 'artifacts/demo-phone.png') });
    // On a phone the model's status comes first.
    expect(await page.$eval('#model-status', (el) => el.getBoundingClientRect().top < document.getElementById('gen-panel')!.getBoundingClientRect().top)).toBe(true);
    await page.setViewport({ width: 1366, height: 860 });
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
  }, 60_000);

  it('a lost GPU device says so and offers a reload', async () => {
    await page.keyboard.press('Escape');
    // The device lives in the model's worker: destroyed there, as a driver reset would take it.
    await (await modelWorker(page)).evaluate('globalThis.__demoWorker.loaded.model.gpu.device.destroy()');
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
