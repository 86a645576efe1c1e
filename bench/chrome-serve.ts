// A static file server on 127.0.0.1 for bench/chrome-run.ts (no Vite where it runs): URL prefixes mapped to folders,
// GET and HEAD, single byte ranges (the demo's model loader and urlSource read tensors by range), 404 otherwise
// (the demo's loader treats 404 as an absent file), never a path outside its folder.
import { createReadStream, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png', '.wasm': 'application/wasm',
  '.safetensors': 'application/octet-stream', '.md': 'text/plain; charset=utf-8',
};

/** `prefix` (no leading or trailing slash, '' for the root) -> folder on disk; longest prefix wins. */
export type Mounts = Record<string, string>;

function resolveFile(mounts: Mounts, url: string): string | null {
  const path = decodeURIComponent(url.split('?')[0]).replace(/^\/+/, '');
  const prefix = Object.keys(mounts).sort((a, b) => b.length - a.length)
    .find((p) => p === '' || path === p || path.startsWith(p + '/'));
  if (prefix === undefined) return null;
  const rest = normalize(path.slice(prefix.length).replace(/^\/+/, '') || 'index.html');
  if (rest.startsWith('..')) return null;
  const file = join(mounts[prefix], rest);
  try {
    const st = statSync(file);
    if (st.isDirectory()) return statSync(join(file, 'index.html')).isFile() ? join(file, 'index.html') : null;
    return st.isFile() && file.startsWith(mounts[prefix].replace(/[/\\]+$/, '') + sep) ? file : null;
  } catch {
    return null;
  }
}

function send(req: IncomingMessage, res: ServerResponse, file: string): void {
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

/** Serve `mounts` on 127.0.0.1 at a free port. */
export async function serveStatic(mounts: Mounts): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const file = req.method === 'GET' || req.method === 'HEAD' ? resolveFile(mounts, req.url ?? '/') : null;
    if (file) send(req, res, file);
    else res.writeHead(req.method === 'GET' || req.method === 'HEAD' ? 404 : 405).end();
  });
  await new Promise<void>((ok, fail) => { server.once('error', fail); server.listen(0, '127.0.0.1', ok); });
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('[chrome-run] the static server did not bind a TCP port');
  return { server, url: `http://127.0.0.1:${addr.port}` };
}
