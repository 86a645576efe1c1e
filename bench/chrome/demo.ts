// The demo in Chrome, driven through its visible controls by bench/chrome/run.ts: the embedded model generates,
// then a checkpoint of the 1B shape (random weights, bench/chrome/ckpt.ts) loads from a URL and generates, then a
// small REFRACT score runs on the model loaded last; a full-page screenshot after each (the adapter panel names the
// GPU and the kernel path). It waits on the data-state attributes the demo sets (#model-status, #output,
// #refract-result).
import type { Page } from 'puppeteer-core';

export interface DemoStep {
  step: string; ms: number; state: string; status: string; text: string; png?: string; error?: string;
}
export interface DemoOptions {
  url: string; ckptUrl: string | null; tokens: number; shot: (name: string) => string; until: number;
}
type Outcome = Omit<DemoStep, 'step' | 'ms'>;

const text = (page: Page, sel: string) =>
  page.$eval(sel, (el) => (el as HTMLElement).innerText.trim()).catch(() => '');
const setValue = (page: Page, sel: string, v: string) =>
  page.$eval(sel, (el, val) => { (el as HTMLInputElement).value = val; }, v);
const enabled = (page: Page, id: string) =>
  page.waitForFunction((i) => !(document.getElementById(i) as HTMLButtonElement).disabled, { timeout: 30_000 }, id);

/** Wait until `sel`'s data-state is one of `done` and, with `differs`, its text is no longer `differs`. */
async function settle(page: Page, sel: string, done: string[], timeoutMs: number, differs?: string): Promise<string> {
  await page.waitForFunction((s, d, old) => {
    const el = document.querySelector<HTMLElement>(s);
    return !!el && d.includes(el.dataset.state ?? '') && (old === null || el.innerText.trim() !== old);
  }, { timeout: timeoutMs, polling: 250 }, sel, done, differs ?? null);
  return page.$eval(sel, (el) => (el as HTMLElement).dataset.state ?? '');
}

/** The adapter panel and the model's details as text (what the screenshot shows). */
export async function panels(page: Page): Promise<{ adapter: string; model: string }> {
  return { adapter: await text(page, '#adapter'), model: await text(page, '#model-info') };
}

/** Greedy generation of `tokens` tokens from the loaded model. */
async function generate(page: Page, tokens: number, timeoutMs: number) {
  await setValue(page, '#max-tokens', String(tokens));
  await setValue(page, '#temperature', '0');
  await enabled(page, 'generate');
  await page.click('#generate');
  const started = () => ['running', 'error'].includes(document.getElementById('output')?.dataset.state ?? '');
  await page.waitForFunction(started, { timeout: 30_000 }).catch(() => {});
  const state = await settle(page, '#output', ['done', 'error'], timeoutMs);
  return { state, output: await text(page, '#output'), stats: await text(page, '#gen-stats') };
}

/** Run a step, timing it and keeping its failure (the later steps still run where they can). */
async function step(steps: DemoStep[], name: string, body: () => Promise<Outcome>): Promise<boolean> {
  const t0 = Date.now();
  let s: DemoStep;
  try {
    s = { step: name, ms: 0, ...await body() };
  } catch (e) {
    s = { step: name, ms: 0, state: 'failed', status: '', text: '', error: e instanceof Error ? e.message : String(e) };
  }
  s.ms = Date.now() - t0;
  steps.push(s);
  return s.state !== 'failed';
}

export async function runDemo(page: Page, o: DemoOptions): Promise<DemoStep[]> {
  const steps: DemoStep[] = [];
  const left = (cap: number) => Math.min(cap, Math.max(5_000, o.until - Date.now()));
  const shoot = async (name: string) => {
    const path = o.shot(name);
    await page.screenshot({ path, fullPage: true });
    return path;
  };
  const opened = await step(steps, 'open the demo (embedded model)', async () => {
    await page.goto(`${o.url}/demo/index.html`);
    const state = await settle(page, '#model-status', ['ready', 'error'], left(120_000));
    return { state, status: await text(page, '#model-status'), text: (await panels(page)).adapter };
  });
  if (!opened) return steps;
  await step(steps, 'generate (embedded model)', async () => {
    const g = await generate(page, o.tokens, left(120_000));
    return { state: g.state, status: g.stats, text: g.output, png: await shoot('demo-embedded.png') };
  });
  if (o.ckptUrl) {
    const loaded = await step(steps, 'load the random checkpoint from 127.0.0.1', async () => {
      const before = await text(page, '#model-status');
      await setValue(page, '#model-url', o.ckptUrl!);
      await page.$eval('#skip-check', (el) => { (el as HTMLInputElement).checked = true; });
      await page.click('#load-url');
      const state = await settle(page, '#model-status', ['ready', 'error', 'kept'], left(300_000), before);
      const details = `${(await panels(page)).model}\n${await text(page, '#load-error')}`;
      return { state, status: await text(page, '#model-status'), text: details };
    });
    if (!loaded || steps[steps.length - 1].state !== 'ready') return steps;
    await step(steps, 'generate (random checkpoint)', async () => {
      const g = await generate(page, o.tokens, left(120_000));
      const shown = `${g.output}\n\n${(await panels(page)).adapter}`;
      return { state: g.state, status: g.stats, text: shown, png: await shoot('demo-1b.png') };
    });
  }
  await step(steps, 'REFRACT (1 chunk of 64 tokens, 1 prompt x 4 tokens)', async () => {
    await setValue(page, '#kld-chunks', '1');
    await setValue(page, '#kld-ctx', '64');
    await setValue(page, '#traj-prompts', '1');
    await setValue(page, '#traj-tokens', '4');
    await enabled(page, 'refract-run');
    await page.click('#refract-run');
    const state = await settle(page, '#refract-result', ['done', 'error', 'stopped'], left(240_000));
    const result = `${await text(page, '#refract-result')}\n${await text(page, '#refract-error')}`;
    return { state, status: await text(page, '#refract-status'), text: result, png: await shoot('demo-refract.png') };
  });
  return steps;
}
