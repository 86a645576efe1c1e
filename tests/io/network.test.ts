// Downloads against a fault-injecting HTTP server on 127.0.0.1: 404, 5xx, a connection reset mid-body (also in a
// streamed download, and a stop during its retries), stalled headers and bodies, a slow but steady body, a refused
// connection. Short timeouts keep every case under a second or two; the server stops (and drops every connection
// it holds) after the suite.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { getBytes, streamDownload } from '../../src/io/http.ts';
import type { NetOptions } from '../../src/io/request.ts';
import { urlSource } from '../../src/io/sources.ts';
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { NetworkError } from '../../src/errors.ts';
import { urlFiles } from '../../src/hrm/files.ts';
import { loadConfig } from '../../src/hrm/load.ts';
import { FIXTURES } from '../../testkit/helpers/fixtures.ts';

const DATA = new Uint8Array(readFileSync(FIXTURES + 'hrm-tiny-a/model.safetensors'));
const CONFIG = readFileSync(FIXTURES + 'hrm-tiny-a/config.json');
// Generous deadlines where a case is not about them (the test machine may be busy), short ones where it is.
const FAST: NetOptions = { connectTimeoutMs: 5000, idleTimeoutMs: 5000, retries: 2, backoffMs: 10 };
const SHORT: NetOptions = { ...FAST, connectTimeoutMs: 250, idleTimeoutMs: 250 };

/** Byte equality with the first difference named (toEqual on megabytes is slow). */
function expectBytes(got: Uint8Array, want: Uint8Array): void {
  expect(got.byteLength).toBe(want.byteLength);
  const i = got.findIndex((b, k) => b !== want[k]);
  expect(i, 'first differing byte').toBe(-1);
}

/** Requests seen: path and Range header, in order. */
const seen: Array<{ path: string; range: string | undefined }> = [];
let sent = 0;
let tensorCut = false;

/** Write the headers for `data` whole (200) or the asked range (206, when `ranges`); returns the range sent. */
function begin(req: IncomingMessage, res: ServerResponse, size: number, ranges: boolean): [number, number] {
  const m = ranges ? /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '') : null;
  const start = m ? Number(m[1]) : 0, end = m?.[2] ? Number(m[2]) + 1 : size;
  res.writeHead(m ? 206 : 200, {
    'content-length': end - start, ...(ranges ? { 'accept-ranges': 'bytes' } : {}),
    ...(m ? { 'content-range': `bytes ${start}-${end - 1}/${size}` } : {}),
  });
  return [start, end];
}

/** `data` as asked; counts the bytes sent. */
function serve(req: IncomingMessage, res: ServerResponse, data: Uint8Array, ranges: boolean): void {
  const [start, end] = begin(req, res, data.byteLength, ranges);
  if (req.method === 'HEAD') { res.end(); return; }
  sent += end - start;
  res.end(data.subarray(start, end));
}

/** Headers, then the first `n` bytes of what `serve` would send; then `then` (reset, or nothing: a stall). */
function partial(req: IncomingMessage, res: ServerResponse, ranges: boolean, n: number, then: 'reset' | 'stall'): void {
  const [start] = begin(req, res, DATA.byteLength, ranges);
  sent += n;
  res.write(DATA.subarray(start, start + n),
    () => { if (then === 'reset') setTimeout(() => res.socket?.destroy(), 20); });
}

const ROUTES: Record<string, (req: IncomingMessage, res: ServerResponse, n: number) => void> = {
  '/missing': (_q, r) => { r.writeHead(404, 'Not Found'); r.end('no such file'); },
  '/always-500': (_q, r) => { r.writeHead(500, 'Internal Server Error'); r.end(); },
  '/flaky': (q, r, n) => (n <= 2 ? (r.writeHead(503, 'Service Unavailable'), r.end()) : serve(q, r, DATA, true)),
  '/reset': (q, r, n) => (n === 1 ? partial(q, r, true, 300_000, 'reset') : serve(q, r, DATA, true)),
  '/reset-norange': (q, r, n) => (n === 1 ? partial(q, r, false, 300_000, 'reset') : serve(q, r, DATA, false)),
  '/stream-reset': (q, r, n) => (n === 1 ? partial(q, r, true, 300_000, 'reset') : serve(q, r, DATA, true)),
  '/stream-norange': (q, r, n) => (n === 1 ? partial(q, r, false, 300_000, 'reset') : serve(q, r, DATA, false)),
  '/stall-headers': () => {},
  '/stall-body-once': (q, r, n) => (n === 1 ? partial(q, r, true, 1000, 'stall') : serve(q, r, DATA, true)),
  '/stall-body': (q, r) => partial(q, r, true, 1000, 'stall'),
  '/slow': (_q, r) => {
    r.writeHead(200, { 'content-length': 20 * 1000 });
    let i = 0;
    const tick = () => { r.write(DATA.subarray(i * 1000, (i + 1) * 1000)); if (++i < 20) setTimeout(tick,
      50); else r.end(); };
    tick();
  },
  '/nohead': (q,
    r) => (q.method === 'HEAD' ? (r.writeHead(405, 'Method Not Allowed'), r.end()) : serve(q, r, DATA, true)),
  '/model/config.json': (q, r) => serve(q, r, CONFIG, false),
  // The first read of more than 10 kB (a tensor, not the header) is cut after 100 bytes.
  '/model/model.safetensors': (q, r) => {
    const m = /^bytes=(\d+)-(\d+)$/.exec(q.headers.range ?? '');
    if (m && Number(m[2]) - Number(m[1]) > 10_000 && !tensorCut) { tensorCut = true; partial(q, r, true, 100,
      'reset'); } else serve(q, r, DATA, true);
  },
};

let server: Server;
let base = '';
const counts = new Map<string, number>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '/';
    const n = (counts.get(path) ?? 0) + 1;
    counts.set(path, n);
    seen.push({ path, range: req.headers.range });
    const route = ROUTES[path];
    if (route) route(req, res, n); else { res.writeHead(404, 'Not Found'); res.end(); }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const requests = (path: string) => seen.filter((s) => s.path === path);
const failure = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a failure'); },
  (e: unknown) => e as NetworkError);

describe('downloads over a faulty network', () => {
  it('a 404 fails at once naming the URL; a missing config.json is reported as missing', async () => {
    const e = await failure(getBytes(`${base}/missing`, null, FAST));
    expect(e).toBeInstanceOf(NetworkError);
    expect(e.message).toBe(`[fetch] ${base}/missing: HTTP 404 Not Found`);
    expect([e.status, requests('/missing').length]).toEqual([404, 1]);
    await expect(loadConfig(urlFiles(`${base}/nothing`, FAST))).rejects.toThrow(`${base}/nothing: no config.json`);
  });

  it('retries 5xx with backoff, saying so, and gives up naming the URL and the attempts', async () => {
    const told: string[] = [];
    const { bytes } = await getBytes(`${base}/flaky`, null, { ...FAST, onRetry: (m) => told.push(m) });
    expectBytes(bytes, DATA);
    expect(told).toEqual([
      `${base}/flaky: HTTP 503 Service Unavailable; retrying in 0.01 s (attempt 2 of 3)`,
      `${base}/flaky: HTTP 503 Service Unavailable; retrying in 0.02 s (attempt 3 of 3)`,
    ]);
    const e = await failure(getBytes(`${base}/always-500`, null, FAST));
    expect(e.message).toBe(`[fetch] ${base}/always-500: HTTP 500 Internal Server Error (gave up after 3 attempts)`);
    expect(requests('/always-500').length).toBe(3);
  });

  it('resumes a body reset mid-way with a Range request from the last byte received', async () => {
    sent = 0;
    const { bytes } = await getBytes(`${base}/reset`, null, FAST);
    expectBytes(bytes, DATA);
    const [first, second] = requests('/reset');
    expect(first.range).toBeUndefined();
    const from = Number(/^bytes=(\d+)-$/.exec(second.range ?? '')?.[1]);
    expect(from).toBeGreaterThan(0);
    expect(from).toBeLessThanOrEqual(300_000);
    expect(sent).toBe(300_000 + DATA.byteLength - from); // nothing fetched twice but what was in flight
  });

  it('restarts a reset body from the start where the server does not take ranges', async () => {
    const { bytes } = await getBytes(`${base}/reset-norange`, null, FAST);
    expectBytes(bytes, DATA);
    expect(requests('/reset-norange').map((r) => r.range)).toEqual([undefined, undefined]);
  });

  it('streams a whole file across a reset: resumed with a Range request, or the bytes sent again skipped', async () => {
    for (const path of ['/stream-reset', '/stream-norange']) {
      const { response, body } = await streamDownload(`${base}${path}`, FAST);
      expect(response.status).toBe(200);
      expectBytes(new Uint8Array(await new Response(body).arrayBuffer()), DATA);
      const ranges = requests(path).map((r) => r.range);
      expect(ranges[0]).toBeUndefined();
      expect(ranges[1]).toMatch(/^bytes=[1-9]\d*-$/);
    }
    const missing = await streamDownload(`${base}/missing`, FAST);
    expect([missing.response.status, missing.body]).toEqual([404, null]);
    // A stop ends the retries too, with the signal's reason.
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('stopped')), 50);
    await expect(streamDownload(`${base}/always-500`,
      { ...FAST, backoffMs: 10_000, signal: ctl.signal })).rejects.toThrow('stopped');
  });

  it('ends stalled headers and stalled bodies within their timeouts, naming the URL', async () => {
    const t0 = performance.now();
    const e = await failure(getBytes(`${base}/stall-headers`, null, SHORT)); // 2 retries, but a header stall gets one
    expect(e.message).toBe(`[fetch] ${base}/stall-headers: no response within 0.25 s (connect timeout) `
      + '(gave up after 2 attempts)');
    const body = await failure(getBytes(`${base}/stall-body`, null, { ...SHORT, retries: 0 }));
    expect(body.message)
      .toBe(`[fetch] ${base}/stall-body: stalled: no data for 0.25 s after 1000 bytes (idle timeout)`);
    expect(performance.now() - t0).toBeLessThan(3000);
    const { bytes } = await getBytes(`${base}/stall-body-once`, null, { ...FAST, idleTimeoutMs: 250 });
    expectBytes(bytes, DATA);
    expect(requests('/stall-body-once')[1].range).toBe('bytes=1000-');
  });

  it('takes a slow but steady body whose whole download outlasts the idle timeout', async () => {
    const t0 = performance.now();
    const { bytes } = await getBytes(`${base}/slow`, null, { ...FAST, idleTimeoutMs: 600 });
    expect(performance.now() - t0).toBeGreaterThan(900);
    expectBytes(bytes, DATA.subarray(0, 20_000));
  });

  it('a refused connection is retried, then named', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/model.safetensors`;
    await new Promise((r) => closed.close(r));
    const e = await failure(getBytes(url, null, { ...FAST, retries: 1 }));
    expect(e.message).toBe(`[fetch] ${url}: connection refused (ECONNREFUSED) (gave up after 2 attempts)`);
  });

  it('a safetensors file over HTTP survives a reset inside a tensor read', async () => {
    const files = urlFiles(`${base}/model`, FAST);
    expect(JSON.parse((await files.text('config.json'))!)).toEqual(JSON.parse(CONFIG.toString()));
    const f = await SafetensorsFile.open((await files.bytes('model.safetensors'))!);
    const name = 'model.L_module.layers.1.mlp.gate_up_proj.weight';
    const e = f.entry(name);
    expectBytes(await f.bytes(name), DATA.subarray(e.start, e.end));
    const ranges = requests('/model/model.safetensors').map((r) => r.range);
    const from = e.start + 100;
    // cut after 100 bytes, resumed
    expect(ranges.slice(-2)).toEqual([`bytes=${e.start}-${e.end - 1}`, `bytes=${from}-${e.end - 1}`]);
    const src = urlSource(`${base}/model/model.safetensors`, FAST);
    expect(await src.size()).toBe(DATA.byteLength);
    sent = 0;
    // from a one-byte range, not a download
    expect(await urlSource(`${base}/nohead`, FAST).size()).toBe(DATA.byteLength);
    expect(sent).toBe(1);
  });
});
