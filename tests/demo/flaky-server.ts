// What the demo's tests serve and load: the embedded model's files at /flaky/ on the preview server, whole or cut
// short in three ways, and model folders with some of its files replaced (loading.test.ts); a web page where the
// weights should be and a slow download (ux.test.ts).
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Plugin } from 'vite';
import { sendFile } from '../../scripts/send-file.ts';
import { MODEL } from './built-demo.ts';

/**
 * Model files of `folder` (the embedded model's unless changed) at /flaky/ on the preview server, served whole
 * ('ok'), or model.safetensors' GET without a Range answered badly: 'short' ends the response early without a
 * Content-Length (it looks complete), 'cut' drops the connection halfway through the body (Range requests, a
 * resumption, are served), 'stall' sends the first MiB and then nothing (until the page gives up), 'error' answers
 * one HTTP 500 (then 'ok'), 'html' answers with a web page (200, text/html; HEAD still finds the file). `gets`: the
 * files asked for whole; `ranges`: the Range headers of model.safetensors' GETs.
 */
export const flakyServer = {
  mode: 'ok' as 'ok' | 'short' | 'cut' | 'stall' | 'error' | 'html', gets: [] as string[], ranges: [] as string[],
  folder: MODEL,
};
export const flaky: Plugin = {
  name: 'flaky-model-server',
  configurePreviewServer(srv) {
    srv.middlewares.use((req, res, next) => {
      const m = /^\/flaky\/([\w.]+)$/.exec((req.url ?? '').split('?')[0]);
      const file = m && join(flakyServer.folder, m[1]);
      if (!file || !existsSync(file)) { if (m) { res.statusCode = 404; res.end(); return; } next(); return; }
      if (req.method === 'GET' && !req.headers.range) flakyServer.gets.push(m[1]);
      if (m[1] === 'model.safetensors' && req.method === 'GET' &&
        req.headers.range) flakyServer.ranges.push(req.headers.range);
      if (m[1] !== 'model.safetensors' || flakyServer.mode === 'ok' || req.method !== 'GET' ||
        req.headers.range) { sendFile(req, res, file); return; }
      if (flakyServer.mode === 'error') { flakyServer.mode = 'ok'; res.statusCode = 500; res.end(); return; }
      if (flakyServer.mode === 'html') { res.setHeader('Content-Type',
        'text/html'); res.end('<!doctype html><title>Home</title>'); return; }
      const bytes = readFileSync(file);
      res.setHeader('Content-Type', 'application/octet-stream');
      if (flakyServer.mode !== 'short') res.setHeader('Content-Length', String(bytes.length));
      const sent = flakyServer.mode === 'cut' ? bytes.length >> 1 : 1 << 20;
      res.write(bytes.subarray(0, sent),
        () => { if (flakyServer.mode === 'cut') res.destroy(); else if (flakyServer.mode === 'short') res.end(); });
    });
  },
};

/** A model folder in `work`: the embedded model's files, with some replaced, and those replaced by null left out. */
export function modelFolder(work: string, name: string, replace: Record<string, Uint8Array | string | null>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors']) {
    const content = replace[f];
    if (content === undefined) copyFileSync(join(MODEL, f), join(dir, f));
    else if (content !== null) writeFileSync(join(dir, f), content);
  }
  return dir;
}

/**
 * /webpage/: a server that answers every path but config.json with its home page (200, text/html); /slow/: the
 * embedded model with model.safetensors sent a MiB every 150 ms (so the page can measure a download speed).
 */
export const uxServers: Plugin = {
  name: 'ux-test-servers',
  configurePreviewServer(srv) {
    srv.middlewares.use((req, res, next) => {
      const m = /^\/(webpage|slow)\/([\w.]+)$/.exec((req.url ?? '').split('?')[0]);
      if (!m) { next(); return; }
      const file = join(MODEL, m[2]);
      if (m[1] === 'webpage' && m[2] !== 'config.json') {
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        res.end('<!doctype html><title>Home</title><h1>Welcome</h1>');
      } else if (m[1] === 'slow' && m[2] === 'model.safetensors' && req.method === 'GET' && !req.headers.range) {
        const bytes = readFileSync(file);
        res.setHeader('Content-Type', 'application/octet-stream');
        res.setHeader('Content-Length', String(bytes.length));
        let at = 0;
        const more = () => { const end = Math.min(at + (1 << 20),
          bytes.length); res.write(bytes.subarray(at,
          end)); at = end; if (at < bytes.length) setTimeout(more, 150); else res.end(); };
        more();
      } else sendFile(req, res, file);
    });
  },
};
