// `refract fetch`: a corpus downloaded from a local server (never the network), unpacked, checked, cached, resumed.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { zipSync } from 'fflate';
import { fetchCorpus } from '../../src/refract/corpus-fetch.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const enc = (s: string) => new TextEncoder().encode(s);
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const TEST = enc('= Valkyria Chronicles III =\n'.repeat(400));
const TRAIN = enc(' = Robert Boulter = \n'.repeat(900));
const ZIP = zipSync({ 'wikitext-2-raw': { 'wiki.test.raw': TEST, 'wiki.train.raw': TRAIN } });
const PLAIN = enc('The Fulton County Grand Jury said Friday. '.repeat(500));
const fast = { connectTimeoutMs: 2000, idleTimeoutMs: 2000, backoffMs: 10 };
const tsx = join(root, 'node_modules/.bin/tsx');
const refract = (...args: string[]) => promisify(execFile)(tsx, ['src/cli/refract.ts', ...args], { cwd: root })
  .then((r) => ({ code: 0, ...r }), (e: { code: number; stdout: string; stderr: string }) => e);

/** Serves ZIP at /wikitext-2-raw-v1.zip and PLAIN at /corpus.txt; /cut.txt closes its first answer halfway. */
type Request = { url: string; headers: IncomingHttpHeaders };
async function server(): Promise<{ base: string; requests: Request[]; close(): Promise<void> }> {
  const requests: Request[] = [];
  let cuts = 0;
  const s = createServer((req, res) => {
    requests.push({ url: req.url!, headers: req.headers });
    const served: Record<string, Uint8Array> = {
      '/wikitext-2-raw-v1.zip': ZIP, '/corpus.txt': PLAIN, '/cut.txt': PLAIN,
    };
    const body = served[req.url!];
    if (body === undefined) { res.writeHead(404).end(); return; }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const from = range ? Number(range[1]) : 0;
    const headers = { 'accept-ranges': 'bytes', 'content-length': String(body.length - from) };
    if (range) res.writeHead(206, { ...headers, 'content-range': `bytes ${from}-${body.length - 1}/${body.length}` });
    else res.writeHead(200, headers);
    if (req.url === '/cut.txt' && cuts++ === 0) {
      res.write(body.subarray(0, 5000), () => res.destroy());
      return;
    }
    res.end(body.subarray(from));
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, requests,
    close: () => { s.closeAllConnections(); return new Promise((r) => s.close(() => r())); },
  };
}

// The CLI case starts two tsx processes: 2-10 s each on two shared cores.
describe('refract fetch', { timeout: 120_000 }, () => {
  it('unpacks a zip into the cache, checked by size and SHA-256; a second fetch downloads nothing', async () => {
    const srv = await server();
    const cacheDir = mkdtempSync(join(tmpdir(), 'refract-fetch-'));
    try {
      const url = `${srv.base}/wikitext-2-raw-v1.zip`;
      const r = await fetchCorpus(url, { cacheDir, size: ZIP.length, sha256: sha256(ZIP), net: fast });
      const [test, train] = ['wiki.test.raw', 'wiki.train.raw'].map((f) => join(cacheDir, 'wikitext-2-raw', f));
      expect(r).toEqual({ files: [test, train], size: ZIP.length, sha256: sha256(ZIP), downloaded: true });
      expect(readFileSync(test)).toEqual(Buffer.from(TEST));
      expect(readFileSync(train)).toEqual(Buffer.from(TRAIN));
      const again = await fetchCorpus(url, { cacheDir, sha256: sha256(ZIP).toUpperCase(), net: fast });
      expect(again).toEqual({ ...r, downloaded: false });
      expect(srv.requests).toHaveLength(1);
    } finally {
      await srv.close();
    }
  });

  it('a wrong size or hash keeps nothing, naming the URL and both values; a cut body resumes', async () => {
    const srv = await server();
    const cacheDir = mkdtempSync(join(tmpdir(), 'refract-fetch-'));
    try {
      const url = `${srv.base}/corpus.txt`;
      await expect(fetchCorpus(url, { cacheDir, sha256: '0'.repeat(64), net: fast })).rejects
        .toThrow(`[fetch] ${url}: SHA-256 ${sha256(PLAIN)}, ${'0'.repeat(64)} expected; nothing was kept`);
      await expect(fetchCorpus(url, { cacheDir, size: PLAIN.length + 1, net: fast })).rejects
        .toThrow(`[fetch] ${url}: ${PLAIN.length} bytes arrived, ${PLAIN.length + 1} expected; nothing was kept`);
      expect(readdirSync(cacheDir)).toEqual([]);
      const gone = `${srv.base}/gone.txt`;
      await expect(fetchCorpus(gone, { cacheDir, net: fast })).rejects.toThrow(`[fetch] ${gone}: HTTP 404`);
      const retries: string[] = [];
      const net = { ...fast, onRetry: (m: string) => retries.push(m) };
      const cut = await fetchCorpus(`${srv.base}/cut.txt`, { cacheDir, sha256: sha256(PLAIN), net });
      expect(readFileSync(cut.files[0])).toEqual(Buffer.from(PLAIN));
      expect(retries).toHaveLength(1);
      const ranges = srv.requests.filter((q) => q.url === '/cut.txt').map((q) => q.headers.range);
      expect(ranges).toEqual([undefined, 'bytes=5000-']);
    } finally {
      await srv.close();
    }
  });

  it('the CLI prints the cached files on stdout and the hash to pin on stderr', async () => {
    const srv = await server();
    const cacheDir = mkdtempSync(join(tmpdir(), 'refract-fetch-'));
    try {
      const url = `${srv.base}/corpus.txt`;
      const file = join(cacheDir, 'corpus.txt');
      const [ok, bad] = await Promise.all([
        refract('fetch', url, '--cache-dir', cacheDir, '--no-progress'), refract('fetch', url, '--sha256', 'abc')]);
      expect([ok.code, ok.stdout]).toEqual([0, `${file}\n`]);
      expect(ok.stderr.split('\n')).toEqual([`fetched ${url}: ${PLAIN.length} bytes, sha256 ${sha256(PLAIN)}`,
        `pin it with --size ${PLAIN.length} --sha256 ${sha256(PLAIN)}`, `use it: refract score --corpus ${file}`, '']);
      expect([bad.code, bad.stderr.split('\n')[0]]).toEqual([2, 'refract fetch: --sha256 "abc" is not 64 hex digits']);
    } finally {
      await srv.close();
    }
  });
});
