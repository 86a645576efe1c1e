// A static file server on 127.0.0.1 for bench/chrome/run.ts (no Vite where it runs): URL prefixes mapped to folders,
// GET and HEAD, single byte ranges (the demo's model loader and urlSource read tensors by range), 404 otherwise
// (the demo's loader treats 404 as an absent file), never a path outside its folder.
import { statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join, normalize, sep } from 'node:path';
import { sendFile } from '../../scripts/send-file.ts';


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

/** Serve `mounts` on 127.0.0.1 at a free port. */
export async function serveStatic(mounts: Mounts): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const file = req.method === 'GET' || req.method === 'HEAD' ? resolveFile(mounts, req.url ?? '/') : null;
    if (file) sendFile(req, res, file);
    else res.writeHead(req.method === 'GET' || req.method === 'HEAD' ? 404 : 405).end();
  });
  await new Promise<void>((ok, fail) => { server.once('error', fail); server.listen(0, '127.0.0.1', ok); });
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('[chrome-run] the static server did not bind a TCP port');
  return { server, url: `http://127.0.0.1:${addr.port}` };
}
