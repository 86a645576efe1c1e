// One static-file answer for the Node servers that feed the pages (Vite's dev middleware for the demo, the demo
// tests' servers, bench/chrome-serve.ts on the H200): GET and HEAD with single byte ranges, as urlFiles/urlSource
// read tensors by range.
import { createReadStream, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png', '.wasm': 'application/wasm',
  '.safetensors': 'application/octet-stream', '.md': 'text/plain; charset=utf-8',
};

/** Send `file` (which exists) with its type, HEAD and single-range support; 416 for a range outside it. */
export function sendFile(req: IncomingMessage, res: ServerResponse, file: string): void {
  const size = statSync(file).size;
  res.setHeader('Content-Type', TYPES[extname(file)] ?? 'text/plain; charset=utf-8');
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Cache-Control', 'no-cache');
  let start = 0;
  let end = size - 1;
  const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
  if (range && (range[1] || range[2])) {
    start = range[1] ? Number(range[1]) : Math.max(0, size - Number(range[2]));
    end = range[1] && range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
    if (start > end || start >= size) {
      res.writeHead(416, { 'Content-Range': `bytes */${size}` }).end();
      return;
    }
    res.statusCode = 206;
    res.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
  }
  res.setHeader('Content-Length', String(end - start + 1));
  if (req.method === 'HEAD' || size === 0) { res.end(); return; }
  createReadStream(file, { start, end }).pipe(res);
}
