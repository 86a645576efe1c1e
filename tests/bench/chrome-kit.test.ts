// The pieces of the H200 Chrome kit that run without a browser (bench/chrome-README.md): the static server that
// stands in for Vite there (ranges, HEAD, 404s, no way out of its folders) and the random checkpoint the demo loads
// (it must pass the loader's checks and decode every id its model can pick).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { serveStatic } from '../../bench/chrome/serve.ts';
import { writeRandomCheckpoint } from '../../bench/chrome/ckpt.ts';
import { parseConfig } from '../../src/hrm/config.ts';
import { HrmTokenizer } from '../../src/hrm/tokenizer.ts';
import { expectedTensors } from '../../src/hrm/layout.ts';
import { validateCheckpoint } from '../../src/hrm/weights.ts';
import { Checkpoint, SafetensorsFile } from '../../src/io/safetensors.ts';
import { fileSource } from '../../src/io/sources.ts';

const BROWN = fileURLToPath(new URL('../fixtures/hrm-text-brown-6m/', import.meta.url));
let work: string;
beforeAll(() => { work = mkdtempSync(join(tmpdir(), 'hrm-chrome-kit-')); });
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('chrome-serve', () => {
  let server: Server;
  let url: string;
  const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 255);
  beforeAll(async () => {
    mkdirSync(join(work, 'site/a'), { recursive: true });
    mkdirSync(join(work, 'data'), { recursive: true });
    writeFileSync(join(work, 'site/a/index.html'), '<p>a</p>');
    writeFileSync(join(work, 'data/w.safetensors'), bytes);
    writeFileSync(join(work, 'secret.txt'), 'no');
    ({ server, url } = await serveStatic({ '': join(work, 'site'), 'x/data': join(work, 'data') }));
  });
  afterAll(() => server.close());

  it('serves files by the longest mount, byte ranges, HEAD, and 404 for what is absent or outside', async () => {
    const page = await fetch(`${url}/a/`);
    expect([page.status, page.headers.get('content-type'), await page.text()])
      .toEqual([200, 'text/html; charset=utf-8', '<p>a</p>']);
    const part = await fetch(`${url}/x/data/w.safetensors`, { headers: { range: 'bytes=10-19' } });
    expect([part.status, part.headers.get('content-range')]).toEqual([206, 'bytes 10-19/1000']);
    expect([...new Uint8Array(await part.arrayBuffer())]).toEqual([...bytes.subarray(10, 20)]);
    const tail = await fetch(`${url}/x/data/w.safetensors`, { headers: { range: 'bytes=-5' } });
    expect([...new Uint8Array(await tail.arrayBuffer())]).toEqual([...bytes.subarray(995)]);
    const head = await fetch(`${url}/x/data/w.safetensors`, { method: 'HEAD' });
    expect([head.status, head.headers.get('content-length')]).toEqual([200, '1000']);
    expect((await fetch(`${url}/x/data/w.safetensors`, { headers: { range: 'bytes=2000-' } })).status).toBe(416);
    expect((await fetch(`${url}/a/missing.js`)).status).toBe(404);
    expect((await fetch(`${url}/%2e%2e/secret.txt`)).status).toBe(404);
    expect((await fetch(`${url}/x/data/..%2f..%2fsecret.txt`)).status).toBe(404);
  });
});

describe('chrome-ckpt', () => {
  it('writes a checkpoint the loader accepts, values in range, with a tokenizer covering the vocabulary', async () => {
    // The embedded model's shape with a vocabulary twice its tokenizer's: the padding the 1B shape needs, small.
    const raw = JSON.parse(readFileSync(join(BROWN, 'config.json'), 'utf8')) as Record<string, unknown>;
    const c = parseConfig({ ...raw, vocab_size: 4096 }, 'config.json');
    const dir = join(work, 'ckpt');
    const size = writeRandomCheckpoint(dir, BROWN, c, 3);
    const file = await SafetensorsFile.open(fileSource(join(dir, 'model.safetensors')));
    expect(size).toBe(readFileSync(join(dir, 'model.safetensors')).byteLength);
    const config = parseConfig(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')), 'config.json');
    expect(config).toEqual(c);
    const ck = await Checkpoint.fromFiles([file]);
    expect(validateCheckpoint(ck, c, dir).size).toBe(0);
    expect(ck.names.sort()).toEqual([...expectedTensors(c).keys()].sort());
    const bounds: Array<[string, number]> = [['model.embed_tokens.weight', 0.02],
      ['model.L_module.layers.2.mlp.down_proj.weight', 1 / Math.sqrt(768)]];
    for (const [name, bound] of bounds) {
      const v = await file.array(name) as Float32Array;
      let max = 0, mean = 0;
      for (const x of v) { max = Math.max(max, Math.abs(x)); mean += x / v.length; }
      expect(max).toBeLessThanOrEqual(bound);
      expect(max).toBeGreaterThan(bound * 0.99);
      expect(Math.abs(mean)).toBeLessThan(bound * 0.02);
    }
    const tok = HrmTokenizer.fromJson(readFileSync(join(dir, 'tokenizer.json'), 'utf8'),
      JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')), config);
    expect(tok.decode([4095, 2048])).toBe('<r4095><r2048>');
    expect(tok.decode(tok.encode('The jury said'))).toContain('jury said');
  });
});
