// A model with the 1B's vocabulary of 65 536 tokens loads from a URL in the built demo (issue 29): its tokenizer is
// built in the model's worker, whose stack in Chrome holds fewer spread arguments than the page's (a vocabulary
// check that spread the vocabulary failed there with "Maximum call stack size exceeded"). The embedded model's
// shape with that vocabulary (78 MB of random weights, bench/chrome/ckpt.ts) shows it where the 1B (2.4 GB) is too
// big for SwiftShader.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Plugin } from 'vite';
import { sendFile } from '../../scripts/send-file.ts';
import { writeRandomCheckpoint } from '../../bench/chrome/ckpt.ts';
import { parseConfig } from '../../src/hrm/config.ts';
import { MODEL, openBuiltDemo, type BuiltDemo } from './built-demo.ts';

const VOCAB = 65_536;
let work: string;
let demo: BuiltDemo | undefined;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'hrm-wide-vocab-'));
  const config = JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8'));
  writeRandomCheckpoint(join(work, 'model'), MODEL, parseConfig({ ...config, vocab_size: VOCAB }, 'config.json'));
  // /wide/<file>: the checkpoint's folder.
  const wide: Plugin = {
    name: 'wide-vocab-checkpoint',
    configurePreviewServer(srv) {
      srv.middlewares.use((req, res, next) => {
        const m = /^\/wide\/([\w.]+)$/.exec((req.url ?? '').split('?')[0]);
        if (m) sendFile(req, res, join(work, 'model', m[1]));
        else next();
      });
    },
  };
  demo = await openBuiltDemo(join(work, 'dist'), [wide]);
}, 150_000);

afterAll(async () => {
  await demo?.browser.close();
  await demo?.server.close();
  rmSync(work, { recursive: true, force: true });
});

describe('demo, a vocabulary of 65 536 tokens (built, headless Chromium)', () => {
  it('loads from a URL in the model\'s worker: ready, the vocabulary shown, no error', async () => {
    const page = demo!.page;
    const base = new URL('wide', page.url()).href;
    await page.$eval('#model-url', (el, v) => { (el as HTMLInputElement).value = v; }, base);
    await page.click('#load-url');
    // Done when the status names this URL and is no longer 'loading' ("Ready: ...", or "Could not load ...").
    await page.waitForFunction((b) => {
      const el = document.getElementById('model-status')!;
      return el.dataset.state !== 'loading' && (el.textContent ?? '').includes(b);
    }, { timeout: 20_000 }, base);
    const status = await page.$eval('#model-status', (el) => `${(el as HTMLElement).dataset.state}: ${el.textContent}`);
    const why = await page.$eval('#load-error', (el) => el.textContent?.trim());
    expect(status, why).toBe(`ready: Ready: ${base}`);
    expect(await page.$eval('#model-info', (el) => el.textContent)).toContain(`vocabulary${VOCAB}context`);
    expect(await page.$eval('#banner', (el) => (el as HTMLElement).hidden)).toBe(true);
  }, 60_000);
});
