// Checks and measures the UX tests run inside their one page session (ux.test.ts). Issue 42's: what the page shows
// once a refused field is fixed, a REFRACT result kept past a time warning, an ftp:// URL, selects shown whole, the
// memory table's KV row, elements in the viewport. Issue 33's measures: how long Stop in REFRACT takes to give
// Generate back, the phone layout's widths, a model download's progress line as it goes.
import { expect } from 'vitest';
import type { Page } from 'puppeteer-core';
import { cacheBytes, type HrmConfig } from '../../src/index.ts';
import { cacheSlots } from '../../src/advanced.ts';
import { fmtBytes } from '../../demo/memory.ts';
import { press } from '../../testkit/helpers/browser.ts';
import { pageOps } from './page-ops.ts';

const setValue = (page: Page, sel: string, v: string) => pageOps(() => page).setValue(sel, v);
const text = (page: Page, sel: string) => pageOps(() => page).text(sel);
const state = (page: Page, id: string) => pageOps(() => page).state(id);

/** The ids of selects whose chosen option is wider than the select shows it (clipped). */
function clippedSelects(page: Page): Promise<string[]> {
  return page.$$eval('select', (els) => els.filter((s) => {
    const span = document.createElement('span');
    span.style.font = getComputedStyle(s).font;
    span.style.whiteSpace = 'pre';
    span.textContent = (s as HTMLSelectElement).selectedOptions[0]?.textContent ?? '';
    document.body.append(span);
    const w = span.getBoundingClientRect().width;
    span.remove();
    const pad = parseFloat(getComputedStyle(s).paddingLeft) + parseFloat(getComputedStyle(s).paddingRight);
    return w + pad + 18 > s.clientWidth; // 18 px: the select's arrow
  }).map((s) => s.id));
}

/** Whether every element `sel` matches lies within the viewport's height. */
export function inViewport(page: Page, sel: string): Promise<boolean> {
  return page.$$eval(sel, (els) => els.every((el) => {
    const r = el.getBoundingClientRect();
    return r.top >= 0 && r.bottom <= window.innerHeight;
  }));
}

/**
 * Generate's messages (issue 42): each goes, with its banner, once its field is fixed, and stays while it is still
 * wrong; a number field holding no number says so. Starts with Temperature's message on show ("-1"); leaves the
 * fields as it found them, Temperature at 0.
 */
export async function messagesGoWhenFixed(page: Page): Promise<void> {
  const gone = async () => [
    await page.$eval('#generate-error', (el) => (el as HTMLElement).hidden), await page.$eval('#banner',
      (el) => (el as HTMLElement).hidden),
  ];
  const refused = async (message: string) => {
    await page.click('#generate');
    await page.waitForFunction(() => !(document.getElementById('generate-error') as HTMLElement).hidden,
      { timeout: 10_000 });
    expect(await page.$eval('#generate-error', (el) => el.textContent)).toBe(`Check the settings: ${message}`);
    expect(await gone()).toEqual([false, false]);
  };
  expect(await gone()).toEqual([false, false]);
  await setValue(page, '#temperature', '0');
  expect(await gone()).toEqual([true, true]);
  await page.click('#temperature', { clickCount: 3 });
  await page.keyboard.type('e');
  await refused('Temperature must be a number from 0 to 100; it is not a number');
  await setValue(page, '#temperature', '0');
  await setValue(page, '#top-p', '0.001');
  await refused('Top-p must be a number from 0.01 to 1; it is "0.001"');
  await setValue(page, '#top-p', '1');
  await setValue(page, '#max-tokens', '-3');
  await refused('Max tokens must be a whole number from 1 up; it is "-3"');
  await setValue(page, '#max-tokens', '-2');
  expect(await gone()).toEqual([false, false]); // still wrong: still said
  await setValue(page, '#max-tokens', '64');
  expect(await gone()).toEqual([true, true]);
  const conds = await page.$$eval('input[name=cond]', (els) => els.map((el) => (el as HTMLInputElement).checked));
  await page.$$eval('input[name=cond]', (els) => { for (const el of els) (el as HTMLInputElement).checked = false; });
  await refused('tick at least one Condition (synth, cot, direct or noisy)');
  await page.click('input[name=cond][value=noisy]');
  expect(await gone()).toEqual([true, true]);
  await page.$$eval('input[name=cond]',
    (els, on) => { els.forEach((el, i) => { (el as HTMLInputElement).checked = on[i]; }); }, conds);
}

/** At 2560 and at 1366 px every select shows its choice whole ("full precision (f16)" was clipped at 2560 px). */
export async function selectsWhole(page: Page): Promise<void> {
  for (const [width, height] of [[2560, 1440], [1366, 768]]) {
    await page.setViewport({ width, height });
    expect(await clippedSelects(page), `${width} px`).toEqual([]);
  }
}

/**
 * A REFRACT run past the time warning leaves the result on show until the user agrees to it; lowering the sizes
 * again takes the warning away. Starts with a result on show at 1 chunk of 32 tokens, and ends there.
 */
export async function warningLeavesResult(page: Page): Promise<void> {
  const kldScore = await text(page, '#kld-score');
  await setValue(page, '#kld-chunks', '400');
  await setValue(page, '#kld-ctx', '512');
  await page.click('#refract-run');
  await page.waitForFunction(() => ['warned', 'error',
    'running'].includes(document.getElementById('refract-result')?.dataset.state ?? ''), { timeout: 30_000 });
  if ((await state(page, 'refract-result')) === 'running') await press(page, '#refract-stop');
  expect(await state(page, 'refract-result')).toBe('warned');
  expect(await text(page, '#kld-score')).toBe(kldScore);
  await setValue(page, '#kld-chunks', '1');
  await setValue(page, '#kld-ctx', '32');
  expect(await text(page, '#refract-status')).toBe('');
  expect(await text(page, '#kld-score')).toBe(kldScore);
}

/** A URL that is not http(s) is named as the URL field's error, and the field has the focus. */
export async function otherSchemeNamed(page: Page): Promise<void> {
  await setValue(page, '#model-url', 'ftp://example.com/model');
  await page.click('#load-url');
  await page.waitForFunction(() => !(document.getElementById('load-error') as HTMLElement).hidden, { timeout: 10_000 });
  expect(await text(page, '#load-error')).toBe('Check the settings: the Model folder URL must start with https:// '
    + 'or http://; it is "ftp://example.com/model"');
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('model-url');
}

/** The memory table's KV row is the library's figure (cacheBytes), and says a full-precision side is kept in bf16. */
export async function kvRowIsTheLibrarys(page: Page, config: HrmConfig): Promise<void> {
  const ctx = config.max_position_embeddings;
  await page.select('#dtype', 'bf16');
  const row = await page.$eval('#memory tbody tr:nth-child(2)',
    (tr) => [tr.querySelector('th')?.textContent, tr.querySelector('td')?.textContent]);
  expect(row).toEqual([`KV cache (${ctx} tokens, K f16, V f16, full precision in bf16, ${cacheSlots(config)} slots)`,
    fmtBytes(cacheBytes(config, ctx, 'bf16'))]);
  await page.select('#dtype', 'f32');
}

/** The demo's own objects, which the page exposes for its tests (window.__demo). */
type DemoHandle = { engine: { idle(): Promise<void>; timePass(positions: number): Promise<number> } };

/** What Stop in REFRACT does while a KLD run is under way: its times (ms) and what the page shows at once. */
export interface StopTimes { enabled: number; right: string; genOff: boolean; queue: number; partMs: number }

/**
 * Press Stop in a running REFRACT run: when Generate is enabled again, then how long the worker's queue takes to
 * go idle; the status line and Generate's state right after the press; and the time of one KLD part (8 positions)
 * on this machine, which the stop waits for.
 */
export async function stopTimes(page: Page): Promise<StopTimes> {
  const t = await page.evaluate(() => new Promise<Omit<StopTimes, 'partMs'>>((res) => {
    const gen = document.getElementById('generate') as HTMLButtonElement;
    const t0 = performance.now();
    document.getElementById('refract-stop')!.click();
    const right = document.getElementById('refract-status')!.textContent ?? '';
    const genOff = gen.disabled;
    const poll = async (): Promise<void> => {
      if (gen.disabled) { setTimeout(poll, 5); return; }
      const enabled = performance.now() - t0;
      // Nothing of the stopped run is left on the GPU (the worker's: its queue, after the calls before).
      const q0 = performance.now();
      await (window as unknown as { __demo: DemoHandle }).__demo.engine.idle();
      res({ enabled, right, genOff, queue: performance.now() - q0 });
    };
    void poll();
  }));
  const partMs = await page.evaluate(async () => { // the second pass: the first compiles this shape's graph
    const e = (window as unknown as { __demo: DemoHandle }).__demo.engine;
    return e.timePass(8).then(() => e.timePass(8));
  });
  return { ...t, partMs };
}

/** The page's widths at the viewport's size: what sticks out, the panels', the adapter values', a long label's. */
export function phoneLayout(page: Page) {
  return page.evaluate(() => {
    const W = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('body *')].filter((el) => {
      const r = el.getBoundingClientRect();
      // The skip link waits off-screen until focused; sr-only text is clipped.
      return r.width > 0 && (r.right > W + 0.5 || r.left < -0.5) && !el.closest('.sr-only, .skip');
    }).map((el) => `${el.tagName.toLowerCase()}#${el.id} ${Math.round(el.getBoundingClientRect().right)}`);
    const height = (sel: string) => document.querySelector(sel)!.closest('label')!.getBoundingClientRect().height;
    return {
      scroll: document.documentElement.scrollWidth, W, wide,
      align: getComputedStyle(document.querySelector('main')!).alignItems,
      panels: [...document.querySelectorAll('.panel')].map((p) => Math.round(p.getBoundingClientRect().width)),
      // The axes' labels wrap (the PLAD one is long), measured against a one-line label's height.
      pladLines: height('#plad') / height('input[name=corpus]'),
      values: Math.min(...[...document.querySelectorAll('#adapter dd')].map((dd) => dd.clientWidth)),
    };
  });
}

/**
 * Load the model at `base` `times` times from the URL field, reading the download line every 200 ms while it
 * loads: the lines seen, and whether the URL field, the bar and the line were in view at each read.
 */
export async function watchLoads(page: Page, base: string,
  times: number): Promise<{ lines: string[]; views: boolean[] }> {
  const lines: string[] = [];
  const views: boolean[] = [];
  for (let i = 0; i < times; i++) {
    await setValue(page, '#model-url', base);
    await page.click('#load-url');
    // A load after the first reads from the download cache and may be done before a poll sees it loading.
    await page.waitForFunction((b) => {
      const el = document.getElementById('model-status');
      return el?.dataset.state === 'loading' || el?.textContent === `Ready: ${b}`;
    }, { timeout: 10_000 }, base);
    while ((await state(page, 'model-status')) === 'loading') {
      lines.push(await text(page, '#dl-text'));
      views.push(await inViewport(page, '#model-url, #dl-progress, #dl-text'));
      await new Promise((r) => setTimeout(r, 200));
    }
    // After the download the upload to the GPU may still run: wait for the load's end, not its first stage.
    await page.waitForFunction((b) => document.getElementById('model-status')?.textContent === `Ready: ${b}`,
      { timeout: 60_000 }, base);
  }
  return { lines, views };
}
