// The demo's page stays responsive while the model generates (issue 29): the model, its tokenizer and REFRACT run in
// a dedicated worker (demo/model.worker.ts). Built demo in headless Chromium on SwiftShader.
//  - The page's main thread never asks navigator.gpu for an adapter (a wrapper installed before the page loads
//    counts the calls; the worker has a navigator.gpu of its own), so no model can run there.
//  - Its tasks from Generate to the last token, recorded by the Long Tasks API (PerformanceObserver 'longtask',
//    every main-thread task over 50 ms; shown first to record a task of the page's own), stay short. With the model
//    on the main thread (the demo before issue 29) there were tasks of 133 and 147 ms while generating 16 tokens
//    (2026-12-04: the prompt's pass and a decode step). With it in the worker there are none on a quiet machine,
//    but one of 70 ms was seen in a CI run whose other test files shared the 2 cores: a task stretched by
//    preemption. So the bound is at most one task over 50 ms and none over 100; the adapter count is what fails
//    for certain when the model runs on the main thread.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openBuiltDemo, type BuiltDemo } from './built-demo.ts';

/** A long task as the page recorded it: when it started (page clock, ms) and how long it ran. */
interface LongTask { start: number; ms: number }
type Probe = { __longTasks: LongTask[]; __adapterCalls: number };

let work: string;
let demo: BuiltDemo;

/**
 * Generate greedily in the page; the output's text once it is done. Waited on by polling every 250 ms: puppeteer's
 * default polls on every animation frame, which keeps the page rendering frames (work of the test, not the demo).
 */
async function generate(prompt: string, maxTokens: number): Promise<string> {
  const { page } = demo;
  await page.$eval('#prompt', (el, v) => { (el as HTMLTextAreaElement).value = v; }, prompt);
  await page.$eval('#max-tokens', (el, v) => { (el as HTMLInputElement).value = v; }, String(maxTokens));
  await page.$eval('#temperature', (el) => { (el as HTMLInputElement).value = '0'; });
  await page.click('#generate');
  await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('output')?.dataset.state ?? ''),
    { timeout: 100_000, polling: 250 });
  return page.$eval('#output', (el) => el.textContent ?? '');
}

/** The long tasks recorded from `from` on, once the observer has had the time to report the last one. */
async function longTasksSince(from: number): Promise<LongTask[]> {
  // Entries arrive in an observer callback queued after their task: two frames and a pause let the last one in.
  await demo.page.evaluate(() => new Promise((r) => {
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 200)));
  }));
  return demo.page.evaluate((t) => (window as unknown as Probe).__longTasks.filter((e) => e.start >= t), from);
}

describe('the demo\'s main thread while the model generates (built, headless Chromium)', () => {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'hrm-demo-main-'));
    demo = await openBuiltDemo(join(work, 'dist'), [], (page) => page.evaluateOnNewDocument(() => {
      const w = window as unknown as Probe;
      w.__adapterCalls = 0;
      const gpu = navigator.gpu;
      if (!gpu) return;
      const request = gpu.requestAdapter.bind(gpu);
      gpu.requestAdapter = (o?: GPURequestAdapterOptions) => { w.__adapterCalls++; return request(o); };
    }).then(() => undefined));
  }, 120_000);

  afterAll(async () => {
    await demo?.browser.close();
    await demo?.server.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('asks for no GPU adapter, and runs at most one task over 50 ms (none over 100) from Generate to the last token',
    async () => {
    const { page, log } = demo;
    expect(await page.$eval('#model-status', (el) => (el as HTMLElement).dataset.state), log.join('\n')).toBe('ready');
    // Loading asked for no adapter on this thread; the count is live (one call of the test's own counts).
    const calls = () => page.evaluate(() => (window as unknown as Probe).__adapterCalls);
    expect(await calls()).toBe(0);
    await page.evaluate(() => navigator.gpu.requestAdapter().then(() => undefined));
    expect(await calls()).toBe(1);
    expect(await page.evaluate(() => PerformanceObserver.supportedEntryTypes.includes('longtask'))).toBe(true);
    await page.evaluate(() => {
      const w = window as unknown as Probe;
      w.__longTasks = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.__longTasks.push({ start: e.startTime, ms: e.duration });
      }).observe({ type: 'longtask' });
    });
    // The probe records a task of the page's own: a timer that runs 120 ms of busy script.
    const busyAt = await page.evaluate(() => new Promise<number>((r) => setTimeout(() => {
      const t0 = performance.now();
      while (performance.now() - t0 < 120) { /* busy */ }
      r(t0);
    })));
    const own = await longTasksSince(busyAt - 1);
    expect(own.some((e) => e.ms >= 110), JSON.stringify(own)).toBe(true);

    const from = await page.evaluate(() => performance.now());
    const text = await generate('The jury said', 16);
    const stats = await page.$eval('#gen-stats', (el) => el.textContent ?? '');
    const decoded = /decode (\d+) tok/.exec(stats);
    expect(decoded, `${stats}\n${log.join('\n')}`).not.toBeNull();
    expect(text.length).toBeGreaterThan(0);
    expect(Number(decoded![1])).toBeGreaterThanOrEqual(8);
    const long = await longTasksSince(from);
    const ms = long.map((e) => Math.round(e.ms));
    const at = long.map((e) => Math.round(e.start - from));
    console.log(`main thread: ${long.length} long task(s) while generating (${decoded![1]} decoded tokens): ` +
      `${JSON.stringify(ms)} ms, at ${JSON.stringify(at)} ms`);
    expect(await calls()).toBe(1);   // generating asked for none either
    expect(ms.length, JSON.stringify(ms)).toBeLessThanOrEqual(1);
    expect(ms.filter((x) => x > 100)).toEqual([]);
  }, 300_000);
});
