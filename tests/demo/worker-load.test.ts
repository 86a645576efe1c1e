// URL loads in the built demo's model worker (issue 29). A model with the 1B's vocabulary of 65 536 tokens loads:
// its tokenizer is built in the worker, whose stack in Chrome holds fewer spread arguments than the page's (a
// vocabulary check that spread the vocabulary failed there with "Maximum call stack size exceeded"); the embedded
// model's shape with that vocabulary (78 MB of random weights, bench/chrome/ckpt.ts) shows it where the 1B (2.4 GB)
// is too big for SwiftShader. A tokenizer smaller than the vocabulary is warned of in the page. A load that
// fails in the worker takes out of the download cache what the worker cached too (tokenizer.json), not only the
// page's downloads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Plugin } from 'vite';
import { sendFile } from '../../scripts/send-file.ts';
import { writeRandomCheckpoint } from '../../bench/chrome/ckpt.ts';
import { parseConfig } from '../../src/hrm/config.ts';
import { MODEL, openBuiltDemo, type BuiltDemo } from './built-demo.ts';

const VOCAB = 65_536;
/** The embedded model's vocabulary (its tokenizer's ids) and 64 more. */
const NARROW = JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8')).vocab_size + 64;
let work: string;
let demo: BuiltDemo | undefined;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'hrm-wide-vocab-'));
  const config = JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8'));
  writeRandomCheckpoint(join(work, 'model'), MODEL, parseConfig({ ...config, vocab_size: VOCAB }, 'config.json'));
  // 64 ids more than the embedded tokenizer has, served with that tokenizer (not the padded one written here).
  writeRandomCheckpoint(join(work, 'narrow'), MODEL, parseConfig({ ...config, vocab_size: NARROW }, 'config.json'));
  // A config.json whose vocab_size is below the tokenizer's ids: the load fails in the worker, at the tokenizer.
  mkdirSync(join(work, 'mismatch'));
  writeFileSync(join(work, 'mismatch', 'config.json'), JSON.stringify({ ...config, vocab_size: 1024 }));
  // /wide/<file>: the checkpoint's folder; /mismatch/<file>: the embedded model with that config.json; /narrow/<file>:
  // the narrow checkpoint with the embedded model's tokenizer.
  const servers: Plugin = {
    name: 'worker-load-models',
    configurePreviewServer(srv) {
      srv.middlewares.use((req, res, next) => {
        const m = /^\/(wide|mismatch|narrow)\/([\w.]+)$/.exec((req.url ?? '').split('?')[0]);
        if (!m) next();
        else if (m[1] === 'wide') sendFile(req, res, join(work, 'model', m[2]));
        else if (m[1] === 'narrow') sendFile(req, res,
          join(m[2] === 'tokenizer.json' ? MODEL : join(work, 'narrow'), m[2]));
        else sendFile(req, res, m[2] === 'config.json' ? join(work, 'mismatch', m[2]) : join(MODEL, m[2]));
      });
    },
  };
  demo = await openBuiltDemo(join(work, 'dist'), [servers]);
}, 150_000);

afterAll(async () => {
  await demo?.browser.close();
  await demo?.server.close();
  rmSync(work, { recursive: true, force: true });
});

/** Load the model folder `name` from the demo's server; the status once done ("state: text"). */
async function loadUrl(name: string): Promise<{ base: string; status: string }> {
  const page = demo!.page;
  const base = new URL(name, page.url()).href;
  await page.$eval('#model-url', (el, v) => { (el as HTMLInputElement).value = v; }, base);
  await page.click('#load-url');
  // Done when the status names this URL and is no longer 'loading' ("Ready: ...", or "Could not load ...").
  await page.waitForFunction((b) => {
    const el = document.getElementById('model-status')!;
    return el.dataset.state !== 'loading' && (el.textContent ?? '').includes(b);
  }, { timeout: 20_000 }, base);
  const status = await page.$eval('#model-status', (el) => `${(el as HTMLElement).dataset.state}: ${el.textContent}`);
  return { base, status };
}

describe('demo, URL loads in the model\'s worker (built, headless Chromium)', () => {
  it('a vocabulary of 65 536 tokens loads: ready, the vocabulary shown, no error', async () => {
    const page = demo!.page;
    const { base, status } = await loadUrl('wide');
    const why = await page.$eval('#load-error', (el) => el.textContent?.trim());
    expect(status, why).toBe(`ready: Ready: ${base}`);
    expect(await page.$eval('#model-info', (el) => el.textContent)).toContain(`vocabulary${VOCAB}context`);
    expect(await page.$eval('#banner', (el) => (el as HTMLElement).hidden)).toBe(true);
    expect(await page.$eval('#model-warning', (el) => el.textContent)).toBe('');
  }, 60_000);

  it('a tokenizer smaller than the vocabulary is warned of in the model panel (issue 42)', async () => {
    const { base, status } = await loadUrl('narrow');
    expect(status).toBe(`ready: Ready: ${base}`);
    expect(await demo!.page.$eval('#model-warning',
      (el) => el.textContent)).toBe(`Warning: ${base}/tokenizer.json has ` +
      `${NARROW - 64} ids, fewer than the model's vocab_size ${NARROW} (config.json); ` +
      `generating fails at the first id from ` +
      `${NARROW - 64} up (logits are unaffected).`);
  }, 60_000);

  it('a load that fails in the worker takes what the worker cached out of the download cache too', async () => {
    const page = demo!.page;
    const { base, status } = await loadUrl('mismatch');
    expect(status).toMatch(new RegExp('^kept: Could not load .*/mismatch; still using .*\\. ' +
      'The files it downloaded, (.+), are not kept: a retry downloads them again\\.$'));
    const taken = /downloaded, (.+), are not kept/.exec(status)![1].split(', ').sort();
    expect(taken).toEqual(['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    expect(await page.$eval('#load-error', (el) => el.textContent)).toMatch(/outside the model's vocab_size 1024/);
    const keys = () => caches.open('hrm-webgpu-files-v1').then((c) => c.keys()).then((rs) => rs.map((r) => r.url));
    const cached = await page.evaluate(keys);
    expect(cached.filter((u) => u.startsWith(`${base}/`))).toEqual([]);
  }, 60_000);
});
