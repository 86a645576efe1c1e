// End-to-end test of the BUILT demo (vite build of demo/ into a temp folder, served by vite preview on 127.0.0.1)
// in headless Chromium: it opens on the embedded model, greedy generation equals what the Node CLI prints, Stop
// ends it at once, the REFRACT panel gives a KLD, score, band and plot and its downloaded JSON report equals the
// CLI's, errors show next to their controls, and axe-core finds nothing in either theme (loading models from URLs
// and folders: loading.test.ts). Screenshots: artifacts/demo*.png.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import type { PreviewServer } from 'vite';
import { cliGenerate, MODEL, modelWorker, openBuiltDemo, closeBuiltDemo, pageGenerate, root } from './built-demo.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadConfig, loadTokenizer } from '../../src/hrm/load.ts';
import { formatPrompt } from '../../src/hrm/prompt.ts';
import { pageOps } from './page-ops.ts';
import { cliReport, scoring, relDiff, TRAJ_PROMPTS, TRAJ_TOKENS, PASTED } from './report-fields.ts';
import { EMBEDDED_MODEL } from '../../src/hrm/files.ts';

const PROMPT = 'The jury said';

let work: string;
let server: PreviewServer;
let browser: Browser;
let page: Page;
let log: string[];
let expected: Promise<string>;
let expectedReport: Promise<Record<string, unknown>>;

const { setValue, banner, timedStop } = pageOps(() => page);

describe('demo (built, headless Chromium)', () => {
  beforeAll(async () => {
    // The CLI runs on Dawn in Node meanwhile (it takes ~20 s of CPU here).
    expected = cliGenerate(PROMPT, 8);
    expected.catch(() => {});
    work = mkdtempSync(join(tmpdir(), 'hrm-demo-'));
    expectedReport = cliReport(work);
    expectedReport.catch(() => {});
    ({ server, browser, page, log } = await openBuiltDemo(join(work, 'dist')));
  }, 180_000);

  afterAll(() => closeBuiltDemo({ browser, server }, work));

  it('opens on the embedded model and shows the adapter and memory needs', async () => {
    const status = await page.$eval('#model-status',
      (el) => ({ state: (el as HTMLElement).dataset.state, text: el.textContent }));
    expect(status,
      `${JSON.stringify(await banner())}\n${log.join('\n')}`).toEqual({ state: 'ready',
      text: `Ready: ${EMBEDDED_MODEL} (embedded)` });
    expect(await page.$eval('#adapter', (el) => el.textContent)).toMatch(/shader-f16/);
    expect(await page.$eval('#memory', (el) => el.textContent)).toMatch(/weights, as stored \(dense\)\s*18\.9 MiB/);
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
    const docs = await page.evaluate(async () => (await fetch((document.getElementById('docs-link') as
      HTMLAnchorElement).href)).text());
    expect(docs).toMatch(/^<!doctype html>.*<h1>hrm-webgpu<\/h1>/s);
    expect(await page.$eval('#adapter', (el) => el.textContent)).toMatch(/subgroup matrices.*kernel path/s);
  });

  it('generates greedily what the Node CLI prints', async () => {
    const text = await pageGenerate(page, PROMPT, 8);
    const want = await expected;
    expect(want.length).toBeGreaterThan(0);
    expect(text, `${JSON.stringify(await banner())}\n${log.join('\n')}`).toBe(want);
    expect(await page.$eval('#gen-stats',
      (el) => el.textContent)).toMatch(/prompt \d+ tok, [\d.]+ tok\/s · decode 7 tok, [\d.]+ tok\/s · max tokens/);

    // Copy output puts exactly the output on the clipboard, and says so beside the stats line, which keeps its numbers.
    await browser.defaultBrowserContext().overridePermissions(new URL(page.url()).origin,
      ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
    const stats = await page.$eval('#gen-stats', (el) => el.textContent);
    await page.click('#copy-output');
    await page.waitForFunction(() => document.getElementById('copy-note')?.textContent === 'Output copied.',
      { timeout: 5_000 });
    expect(await page.$eval('#gen-stats', (el) => el.textContent)).toBe(stats);
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(want);

    // The prompt's tokens: the ids and pieces the Node tokenizer gives for the same formatted prompt.
    const files = dirFiles(MODEL);
    const { tokenizer, chatTemplate } = await loadTokenizer(files, await loadConfig(files));
    const ids = tokenizer!.encode(formatPrompt(PROMPT, 'noisy', { chatTemplate }));
    await page.click('#tokens-box summary');
    await page.click('#show-tokens');
    // The model's worker tokenizes: the list is there once its summary is.
    await page.waitForFunction(() => document.getElementById('tokens-summary')?.textContent !== '',
      { timeout: 10_000 });
    const shown = await page.$$eval('#tokens li',
      (els) => els.map((li) => [Number(li.querySelector('.id')?.textContent), li.childNodes[1]?.textContent ?? '']));
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
    // ~25 s on two idle cores; CI's two cores, shared with another test file and the CLI's own run of the same
    // report, have taken over 120 s, so the wait is bounded by the test's time, and says where the run was.
    await page.waitForFunction(() => ['done',
      'error'].includes(document.getElementById('refract-result')?.dataset.state ?? ''), { timeout: 540_000 })
      .catch(async (e: Error) => {
        throw new Error(`${e.message}; REFRACT status: ${await page.$eval('#refract-status', (el) => el.textContent)}`);
      });
    const r = await page.$eval('#refract-result',
      (el) => ({ state: (el as HTMLElement).dataset.state, kld: Number((el as HTMLElement).dataset.meanKld),
      text: el.textContent ?? '' }));
    expect(r.state, `${JSON.stringify(await banner())}\n${log.join('\n')}`).toBe('done');
    expect(r.kld).toBeGreaterThan(0); // q8 K/V differ from full precision, a little
    expect(r.kld).toBeLessThan(0.1);
    expect(await page.$eval('#kld-value', (el) => el.textContent)).toMatch(/^\d\.\d{3}e[-+]\d+ nats$/);
    expect(Number(await page.$eval('#kld-score', (el) => el.textContent))).toBeCloseTo(100 * Math.exp(-r.kld), 2);
    expect(await page.$eval('#kld-band', (el) => el.textContent)).toMatch(/^(EXCELLENT|PASS|DEGRADED|FAIL)$/);
    expect(await page.$eval('#composite-band', (el) => el.textContent)).toMatch(/^(EXCELLENT|PASS|DEGRADED|FAIL)$/);
    expect(r.text).toMatch(/KLD band.*composite score.*composite band/s);
    expect(r.text).toMatch(/pasted text: 1 chunk × 32 tokens/);
    expect(await page.$eval('#gtm-score',
      (el) => el.textContent)).toMatch(/\(2 prompts × 4 tokens; \d+ % identical\)$/);
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
    for (const s of ['mean_kld_unc', 'ppl_ref_unc', 'ppl_cand_unc', 'ppl_ratio_unc', 'dp_rms',
      'dp_rms_unc']) expect(rel[s], s).toBeLessThan(0.1);
    expect(Object.keys(a.stats)).toEqual(Object.keys(b.stats));
    for (const [q, v] of Object.entries(b.stats)) {
      // KL values as per position; delta p within 0.05 percentage points of probability.
      expect(Math.abs(a.stats[q] - v), q).toBeLessThanOrEqual(0.1 * Math.abs(v) + (q.startsWith('kl') ? 2e-6 : 5e-4));
    }
    for (const s of ['score', 'kld_score', 'composite']) expect(rel[s], s).toBeLessThan(1e-6);
    expect(a.perPosition.length).toBe(b.perPosition.length);
    a.perPosition.forEach((x, i) => expect(Math.abs(x - b.perPosition[i]),
      `position ${i}`).toBeLessThanOrEqual(0.1 * Math.abs(b.perPosition[i]) + 2e-6));
    const html = await saved('.html');
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('<svg');
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=["']?https?:/i); // self-contained
  }, 600_000);

  it('Stop ends a REFRACT run after the part on the GPU: "Stopped.", and the previous result and plot are cleared',
    async () => {
    await page.click('#refract-run');
    await page.waitForFunction(() => document.getElementById('refract-result')?.dataset.state === 'running',
      { timeout: 10_000 });
    const t = await timedStop('refract-stop', 'refract-status', 'refract-result');
    expect(t.right).toBe('Stopping: finishing the part on the GPU…');
    await page.waitForFunction(() => document.getElementById('refract-result')?.dataset.state === 'stopped',
      { timeout: 10_000 });
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
    await page.waitForFunction(() => !(document.getElementById('refract-error') as HTMLElement).hidden,
      { timeout: 10_000 });
    const e = await page.$eval('#refract-error', (el) => {
      const r = el.getBoundingClientRect();
      return { text: el.textContent ?? '', inView: r.top >= 0 && r.bottom <= innerHeight && r.height > 0,
        live: el.getAttribute('aria-live') };
    });
    expect(e.text).toBe('Check the settings: Context (ctx) must be a whole number from 2 to 4096 ' +
      '(the model\'s context is 4096 tokens); it is "100000"');
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
    await page.waitForFunction(() => (document.getElementById('output')?.textContent ?? '').length > 0,
      { timeout: 60_000 });
    const t = await timedStop('gen-stop', 'gen-stats', 'output');
    console.log(`demo: Stop took ${t.ms.toFixed(0)} ms`);
    expect(t.right).toBe('Stopping…');
    expect(t.ms).toBeLessThan(1500);
    expect(await page.$eval('#output', (el) => (el as HTMLElement).dataset.stopReason)).toBe('aborted');
    expect(await page.$eval('#gen-stats', (el) => el.textContent)).toMatch(/stopped$/);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('generate');
  }, 90_000);

  it('axe-core finds no accessibility violations in the light and dark themes (screenshots of both, and a phone)',
    async () => {
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
    mkdirSync(join(root, 'artifacts'), { recursive: true });
    for (const theme of ['light', 'dark'] as const) {
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: theme }]);
      const violations = await page.evaluate(async () => {
        type Violation = { id: string; nodes: Array<{ target: unknown[] }> };
        type Axe = { run(c: Document): Promise<{ violations: Violation[] }> };
        const r = await (window as unknown as { axe: Axe }).axe.run(document);
        return r.violations.map((v) => `${v.id}: ${v.nodes.map((n) => JSON.stringify(n.target)).join(' ')}`);
      });
      expect(violations, theme).toEqual([]);
      await page.screenshot({ path: join(root, `artifacts/demo-${theme}.png`), fullPage: true });
    }
    await page.setViewport({ width: 390, height: 844 });
    await page.screenshot({ path: join(root, 'artifacts/demo-phone.png') });
    // On a phone the model's status comes first.
    expect(await page.$eval('#model-status',
      (el) => el.getBoundingClientRect().top <
        document.getElementById('gen-panel')!.getBoundingClientRect().top)).toBe(true);
    await page.setViewport({ width: 1366, height: 860 });
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
  }, 60_000);

  it('a lost GPU device says so and offers a reload', async () => {
    await page.keyboard.press('Escape');
    // The device lives in the model's worker: destroyed there, as a driver reset would take it.
    await (await modelWorker(page)).evaluate('globalThis.__demoWorker.loaded.model.gpu.device.destroy()');
    await page.waitForFunction(() => document.getElementById('banner')?.dataset.kind === 'device-lost',
      { timeout: 10_000 });
    expect(await page.$eval('#banner-reload', (el) => (el as HTMLElement).hidden)).toBe(false);
    expect(await page.$eval('#generate', (el) => (el as HTMLButtonElement).disabled)).toBe(true);
  });

  it('a browser without WebGPU gets a clear message', async () => {
    const p = await browser.newPage();
    try {
      await p.evaluateOnNewDocument(() => { delete (Navigator.prototype as { gpu?: unknown }).gpu; });
      await p.goto(page.url());
      await p.waitForFunction(() => document.getElementById('banner')?.dataset.kind === 'no-webgpu',
        { timeout: 20_000 });
      expect(await p.$eval('#banner-title', (el) => el.textContent)).toBe('WebGPU is not available');
      expect(await p.$eval('#model-status', (el) => (el as HTMLElement).dataset.state)).toBe('error');
    } finally {
      await p.close();
    }
  });
});
