// Headless-Chromium runner: serves bench/runners/index.html with Vite on 127.0.0.1, opens it in Debian's chromium
// through puppeteer-core (flags as in testkit/helpers/browser.ts, plus --enable-webgpu-developer-features, which turns
// off Chrome's 100 us timestamp quantization), relays the page's log and writes the same files as the Node runner.
// usage: npx tsx bench/runners/browser.ts [the options of bench/runners/run.ts]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { CHROMIUM, serve } from '../../testkit/helpers/browser.ts';
import { collectPage, pageQuery } from './page-run.ts';
import { parseBenchFlags } from '../harness/flags.ts';
import { usage } from '../harness/settings.ts';
import { commit } from './commit.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

async function main(argv: string[]): Promise<number> {
  const { settings: s, help } = parseBenchFlags(argv);
  if (help) { console.log(usage()); return 0; }
  const { server, url } = await serve({ root, optimizeDeps: { include: ['vega', 'vega-lite'] } });
  const profile = mkdtempSync(join(tmpdir(), 'hrm-bench-chrome-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true, protocolTimeout: 0,
    args: ['--no-sandbox', '--enable-unsafe-webgpu', '--enable-webgpu-developer-features', '--disable-dev-shm-usage',
      '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
      '--disable-quic', '--disable-renderer-backgrounding', '--disable-background-timer-throttling',
      `--user-data-dir=${profile}`],
  });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => console.log(m.type() === 'log' ? m.text() : `[page ${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => console.error(`[page error] ${e instanceof Error ? e.message : String(e)}`));
    const c = commit(root);
    const q = pageQuery(argv, {
      ...(c ? { commit: c } : {}),
      timestamps: 'timestamp-query (Chrome with --enable-webgpu-developer-features: unquantized)',
    });
    await page.goto(`${url}/bench/runners/index.html?${q}`);
    const r = await collectPage(page, s.out, Date.now() + (s.budget + 600) * 1000);
    if (r.error) { console.error(`[bench] ${r.error}`); return 1; }
    console.log('\n' + r.md);
    console.log(`wrote ${r.files!.join(', ')}`);
    return 0;
  } finally {
    await browser.close();
    await server.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code), (e) => { console.error(e); process.exit(1); });
