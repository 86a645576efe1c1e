// Headless Chromium (Debian's, through puppeteer-core) against pages served by Vite on 127.0.0.1.
// Flags from the runtimes spec: --enable-unsafe-webgpu lets Chrome use the CPU adapter (SwiftShader).
import { mkdtempSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { createServer, type ViteDevServer, type InlineConfig } from 'vite';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome'].find(existsSync) ?? '/usr/bin/chromium';

export async function launch(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--enable-unsafe-webgpu', '--disable-dev-shm-usage', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
      `--user-data-dir=${mkdtempSync(join(tmpdir(), 'hrm-chrome-'))}`],
  });
}

/**
 * A Vite dev server on 127.0.0.1. Each server pre-bundles dependencies into a folder of its own: test files run two at
 * a time, and two servers that share node_modules/.vite replace each other's bundles while pages load them (a page
 * whose import then fails never reports).
 */
export async function serve(config: InlineConfig): Promise<{ server: ViteDevServer; url: string }> {
  const own = config.cacheDir === undefined;
  const cacheDir = config.cacheDir ?? mkdtempSync(join(tmpdir(), 'hrm-vite-'));
  const server = await createServer({ configFile: false, logLevel: 'error', ...config, cacheDir,
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, ...config.server } });
  if (own) server.httpServer?.once('close', () => rmSync(cacheDir, { recursive: true, force: true }));
  await server.listen();
  const addr = server.httpServer!.address();
  if (!addr || typeof addr === 'string') throw new Error('vite did not bind a TCP port');
  return { server, url: `http://127.0.0.1:${addr.port}` };
}

/**
 * The page's `window.__result` once it is set, polled by short calls (one long-waiting call would end at puppeteer's
 * 180 s protocol limit with a message that says nothing). Past `timeoutMs`, an error names the page's last
 * `window.__step` and its console errors.
 */
export async function pageResult<T>(page: Page, log: string[], timeoutMs: number): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { result, step } = (await page.evaluate('({ result: window.__result, step: window.__step })')) as
      { result?: T; step?: string };
    if (result !== undefined) return result;
    if (Date.now() > until) {
      throw new Error(`the page set no result in ${timeoutMs / 1000} s (last step: ${step ?? 'none'})` +
        (log.length ? `; its console:\n${log.join('\n')}` : ''));
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Serve `config` (vite), open `path` in headless Chromium and return the page's `window.__result` (pageResult)
 * with its console errors; the browser and the server are closed whatever happens.
 */
export async function pageRun<T>(config: InlineConfig, path: string,
  timeoutMs: number): Promise<{ result: T; log: string[] }> {
  const { server, url } = await serve(config);
  const browser = await launch().catch(async (e: unknown) => { await server.close(); throw e; });
  try {
    const page = await browser.newPage();
    const log = watchConsole(page);
    await page.goto(`${url}/${path}`);
    return { result: await pageResult<T>(page, log, timeoutMs), log };
  } finally {
    await browser.close();
    await server.close();
  }
}

/** Collect console errors and page errors, so a failing page explains itself. */
export function watchConsole(page: Page): string[] {
  const log: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn') log.push(`${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => log.push(`pageerror: ${e instanceof Error ? e.message : String(e)}`));
  return log;
}

/**
 * Click a button through the page (its click(): nothing happens while it is disabled, as for a mouse). For buttons
 * beside live text, such as a running job's progress: puppeteer's click hit-tests the button's place first, and a
 * line that reflows in between sends the click elsewhere.
 */
export async function press(page: Page, selector: string): Promise<void> {
  await page.$eval(selector, (el) => (el as HTMLElement).click());
}
