// transformers.js in the repository's headless Chrome on the GPU machine (issue 44): serves the packed page
// (site/page.html + page.js: transformers.js 4.3.1, onnxruntime-web's WebGPU build), the exported models and the
// prompt's ids on 127.0.0.1, launches the Chrome of bench/chrome-README.md's kit (CHROMIUM_PATH, from its env.sh) with
// a flag set of bench/chrome/flags.ts (default vulkan-angle, the first that gave the NVIDIA adapter there), and runs
// the greedy check per dtype. Bundled with puppeteer-core by bench/peers/transformers-js/pack.sh (tjs-runner.mjs.xz):
//   node tjs-runner.mjs --site DIR --models DIR --name NAME --ids FILE [--dtypes fp16,q4f16] [--n 128]
//        [--set vulkan-angle] [--out DIR] [--timeout-s 400]
// Writes OUT/tjs-greedy-DTYPE.json (one JSON line each, as the page returns it; {"error"} when a dtype fails) and
// prints them; Chrome's stderr and the page's console go to OUT/tjs-chrome.log.
import { writeFileSync } from 'node:fs';
import { dirname, basename } from 'node:path';
import { parseArgs } from 'node:util';
import { FLAG_SETS, launchWith } from '../../chrome/flags.ts';
import { serveStatic } from '../../chrome/serve.ts';

const { values: v } = parseArgs({ options: {
  site: { type: 'string' }, models: { type: 'string' }, name: { type: 'string' }, ids: { type: 'string' },
  dtypes: { type: 'string', default: 'fp16,q4f16' }, n: { type: 'string', default: '128' },
  set: { type: 'string', default: 'vulkan-angle' }, out: { type: 'string', default: '.' },
  'timeout-s': { type: 'string', default: '400' },
} });
if (!v.site || !v.models || !v.name ||
  !v.ids) throw new Error('tjs-runner: --site, --models, --name and --ids are required');
const chromium = process.env.CHROMIUM_PATH;
if (!chromium) {
  throw new Error('tjs-runner: no CHROMIUM_PATH (source the Chrome kit\'s env.sh: bench/chrome-unpack.sh)');
}
const set = FLAG_SETS.find((s) => s.name === v.set);
if (!set) throw new Error(`tjs-runner: no flag set ${v.set} (${FLAG_SETS.map((s) => s.name).join(', ')})`);
const { server, url } = await serveStatic({ '': v.site, models: v.models, ids: dirname(v.ids) });
const log: string[] = [];
const { browser, close } = await launchWith(chromium, set.args, log);
const deadline = Date.now() + Number(v['timeout-s']) * 1000;
try {
  for (const dtype of v.dtypes.split(',')) {
    const page = await browser.newPage();
    page.on('console', (m) => log.push(`[page ${dtype}] ${m.type()}: ${m.text()}\n`));
    page.on('pageerror', (e) => log.push(`[page ${dtype}] error: ${(e as Error).message}\n`));
    let line: string;
    try {
      await page.goto(`${url}/page.html`);
      await page.waitForFunction('window.pageReady === true', { timeout: 60_000 });
      const left = deadline - Date.now();
      const r = await Promise.race([
        page.evaluate((o) => (window as unknown as { runGreedy: (x: unknown) => Promise<unknown> }).runGreedy(o),
          { model: v.name, dtype, ids: `/ids/${basename(v.ids)}`, n: Number(v.n) }),
        new Promise((_, fail) => setTimeout(() => fail(new Error(`no result in ${Math.round(left / 1000)} s`)),
          Math.max(left, 1000))),
      ]);
      line = JSON.stringify({ ...(r as object), flags: set.name });
    } catch (e) {
      line = JSON.stringify({ engine: 'transformers.js', dtype, error: (e as Error).message.split('\n')[0],
        flags: set.name });
    }
    console.log(line.length > 600 ? line.slice(0, 600) + '...' : line);
    writeFileSync(`${v.out}/tjs-greedy-${dtype}.json`, line + '\n');
    await page.close().catch(() => {});
    if (Date.now() > deadline) break;
  }
} finally {
  writeFileSync(`${v.out}/tjs-chrome.log`, log.join(''));
  await close();
  server.close();
}
