// Headless Chromium (Debian's, through puppeteer-core) against pages served by Vite on 127.0.0.1.
// Flags from the runtimes spec: --enable-unsafe-webgpu lets Chrome use the CPU adapter (SwiftShader).
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { createServer, type ViteDevServer, type InlineConfig } from 'vite';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find(existsSync) ?? '/usr/bin/chromium';

export async function launch(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--enable-unsafe-webgpu', '--disable-dev-shm-usage', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
      `--user-data-dir=${mkdtempSync(join(tmpdir(), 'hrm-chrome-'))}`],
  });
}

export async function serve(config: InlineConfig): Promise<{ server: ViteDevServer; url: string }> {
  const server = await createServer({ configFile: false, logLevel: 'error', ...config, server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, ...config.server } });
  await server.listen();
  const addr = server.httpServer!.address();
  if (!addr || typeof addr === 'string') throw new Error('vite did not bind a TCP port');
  return { server, url: `http://127.0.0.1:${addr.port}` };
}

/** Collect console errors and page errors, so a failing page explains itself. */
export function watchConsole(page: Page): string[] {
  const log: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn') log.push(`${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => log.push(`pageerror: ${e instanceof Error ? e.message : String(e)}`));
  return log;
}
