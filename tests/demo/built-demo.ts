// The built demo in headless Chromium, as the demo tests open it: vite build of demo/ into `outDir`, vite preview
// on 127.0.0.1 (with extra server plugins), one page at a laptop's size (its confirm dialogs answered), waited on until
// its first model is up;
// greedy generation there and from the CLI with the same settings.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser, Page, WebWorker } from 'puppeteer-core';
import { build, preview, type Plugin, type PreviewServer } from 'vite';
import { launch, watchConsole } from '../../testkit/helpers/browser.ts';
import { EMBEDDED } from '../../testkit/helpers/fixtures.ts';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const MODEL = EMBEDDED;
export const tsx = join(root, 'node_modules/.bin/tsx');

/** `dialogs`: the messages of the page's confirm() calls, answered with `answer.accept` (default yes). */
export interface BuiltDemo {
  server: PreviewServer; browser: Browser; page: Page; log: string[]; dialogs: string[]; answer: { accept: boolean };
}

/** `beforeLoad`: what to do to the page before it loads the demo (scripts for every new document, say). */
export async function openBuiltDemo(outDir: string, plugins: Plugin[] = [],
  beforeLoad?: (page: Page) => Promise<void>): Promise<BuiltDemo> {
  const configFile = join(root, 'vite.config.ts');
  await build({ configFile, logLevel: 'error', build: { outDir, emptyOutDir: true } });
  const server = await preview({ configFile, logLevel: 'error', plugins, build: { outDir },
    preview: { host: '127.0.0.1', port: 0, strictPort: false, open: false } });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a URL');
  const browser = await launch();
  const page = await browser.newPage();
  await page.setViewport({ width: 1366, height: 860 });
  const log = watchConsole(page);
  const dialogs: string[] = [];
  const answer = { accept: true };
  page.on('dialog', (d) => { dialogs.push(d.message()); void (answer.accept ? d.accept() : d.dismiss()); });
  await beforeLoad?.(page);
  await page.goto(url);
  await page.waitForFunction(() => ['ready',
    'error'].includes(document.getElementById('model-status')?.dataset.state ?? ''), { timeout: 90_000 });
  return { server, browser, page, log, dialogs, answer };
}

/** Close what openBuiltDemo opened (whichever parts it got to) and remove `work`, the folder it was built in. */
export async function closeBuiltDemo(d: { browser?: Browser; server?: PreviewServer }, work?: string): Promise<void> {
  await d.browser?.close();
  await d.server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
}

/** What `hrm generate` prints for `prompt`, greedy, condition noisy (stdout: the text, then one newline). */
export function cliGenerate(prompt: string, maxTokens: number, extra: string[] = []): Promise<string> {
  const args = ['src/cli/hrm.ts', 'generate', prompt, '--condition', 'noisy', '--max-tokens', String(maxTokens),
    '--seed', '0', '--temperature', '0', ...extra];
  return promisify(execFile)(tsx, args,
    { cwd: root, timeout: 150_000 }).then(({ stdout }) => stdout.replace(/\n$/, ''));
}

/** Generate in the page with the CLI's settings above; the output's text once it is done (or failed). */
export async function pageGenerate(page: Page, prompt: string, maxTokens: number): Promise<string> {
  const setValue = (sel: string, v: string) => page.$eval(sel,
    (el, val) => { (el as HTMLInputElement).value = val; }, v);
  await setValue('#prompt', prompt);
  await page.$$eval('input[name=cond]',
    (els) => { for (const el of els) (el as HTMLInputElement).checked = (el as HTMLInputElement).value === 'noisy'; });
  await setValue('#max-tokens', String(maxTokens));
  await setValue('#seed', '0');
  await setValue('#temperature', '0');
  await page.click('#generate');
  await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('output')?.dataset.state ?? ''),
    { timeout: 90_000 });
  return page.$eval('#output', (el) => el.textContent ?? '');
}

/**
 * Poll `sel`'s text until it matches; a timeout says what it read instead (a transient status, unlike
 * waitForFunction's bare timeout).
 */
export async function waitText(page: Page, sel: string, re: RegExp, timeout: number): Promise<void> {
  for (const end = Date.now() + timeout; ;) {
    const t = await page.$eval(sel, (el) => el.textContent ?? '');
    if (re.test(t)) return;
    if (Date.now() > end) throw new Error(`${sel} did not match ${re} within ${timeout} ms; it reads "${t}"`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Wait until `sel`'s text matches, checked inside the page on every DOM change, so that a text shown for a moment
 * (a retry's line, replaced by progress a second later) is seen however slowly the test's own polls come back on a
 * loaded machine; a timeout says what it reads then.
 */
export async function seenText(page: Page, sel: string, re: RegExp, timeout: number): Promise<void> {
  const seen = (s: string, source: string, flags: string) =>
    new RegExp(source, flags).test(document.querySelector(s)?.textContent ?? '');
  await page.waitForFunction(seen, { timeout, polling: 'mutation' }, sel, re.source, re.flags).catch(async () => {
    const t = await page.$eval(sel, (el) => el.textContent ?? '');
    throw new Error(`${sel} never matched ${re} within ${timeout} ms; it reads "${t}"`);
  });
}

/** The demo's model worker (demo/model.worker.ts), where the tests reach the model and its device. */
export async function modelWorker(page: Page): Promise<WebWorker> {
  for (let i = 0; i < 100; i++) {
    const w = page.workers().find((x) => /model\.worker/.test(x.url()));
    if (w) return w;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the demo has no model worker (workers: ${page.workers().map((w) => w.url()).join(', ') || 'none'})`);
}
