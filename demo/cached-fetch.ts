// Getting files into the download cache (download-cache.ts) and out of it. `prefetch` streams one whole file into the
// cache with byte progress; `cachedFetch` is the `fetch` handed to urlFiles: it answers GET (whole or one byte range)
// and HEAD from a cached file, and otherwise goes to the network (caching whole 200 GET responses of small files
// such as config.json on the way). Only a file that arrived whole is kept: its length matches Content-Length, a
// .json parses, a .safetensors header's tensors end inside it.
// Not public API: the loader's own safetensors header check, reused to tell a whole download from a cut one.
import { NetworkError } from '../src/index.ts';
import { streamDownload, type Progress } from '../src/advanced.ts';
import { blobSource } from '../src/io/sources.ts';
import { SafetensorsFile } from '../src/io/safetensors.ts';
import { abortable, counted } from './streams.ts';
import { cacheAvailable, cachedBlob, evict, fileOf, forgetRead, keep, openCache } from './download-cache.ts';

function urlOf(input: RequestInfo | URL): string {
  if (typeof input === 'string') return new URL(input, globalThis.location?.href).href;
  return input instanceof URL ? input.href : input.url;
}

/** Parse `bytes=a-b` (one range) against a size; null when absent or unsatisfiable. */
function parseRange(header: string | null, size: number): [number, number] | null {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (!m[1] && !m[2])) return null;
  const start = m[1] ? Number(m[1]) : Math.max(0, size - Number(m[2]));
  const end = m[1] && m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
  return start <= end && start < size ? [start, end] : null;
}

/** Whether `res` is a web page (200, text/html) answering for a file that is not one. */
function isWebPage(url: string, res: Response): boolean {
  return res.ok && (res.headers.get('content-type') ?? '').startsWith('text/html') && !/\.html?(\?|$)/.test(url);
}

/**
 * fetch, with two fixes: a server's HTML page answering for a missing file (single-page-app fallbacks, custom 404
 * pages sent with 200) becomes a 404, as urlFiles needs to tell an absent file from a present one; and a request
 * that got no answer says what that may mean. The library's download path, which calls it, names the URL and
 * retries. (urlFiles' reads bypass the HTTP cache themselves: src/io/http.ts.)
 */
export const strictFetch: typeof fetch = async (input, init) => {
  let res: Response;
  try {
    res = await fetch(input, init);
  } catch (e) {
    const why = 'no answer: offline, a wrong host, or the server does not allow cross-origin requests (CORS)';
    if (e instanceof TypeError) throw new TypeError(why);
    throw e;
  }
  if (isWebPage(urlOf(input), res)) {
    await res.body?.cancel();
    htmlPages.add(urlOf(input));
    return new Response(null, { status: 404, statusText: 'Not Found (the server sent an HTML page)' });
  }
  return res;
};

/** URLs a server answered with a web page (200, text/html): absent files to urlFiles, remembered for messages. */
const htmlPages = new Set<string>();

/** A weights file under `base` the server answered with a web page, or null. */
export function htmlAnswered(base: string): string | null {
  return [...htmlPages].find((u) => u.startsWith(`${base}/`) && u.endsWith('.safetensors')) ?? null;
}

/** A fetch that serves cached files first (HEAD, GET, GET with one Range). */
export const cachedFetch: typeof fetch = async (input, init) => {
  const url = urlOf(input);
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  const rangeHeader = headers.get('range');
  const blob = method === 'GET' || method === 'HEAD' ? await cachedBlob(url) : null;
  if (blob) {
    const size = blob.size;
    if (method === 'HEAD') {
      return new Response(null, { status: 200, headers: { 'content-length': String(size), 'accept-ranges': 'bytes' } });
    }
    const range = parseRange(rangeHeader, size);
    if (rangeHeader && range) {
      const [a, b] = range;
      return new Response(blob.slice(a, b + 1), {
        status: 206, headers: { 'content-range': `bytes ${a}-${b}/${size}`, 'content-length': String(b - a + 1) },
      });
    }
    return new Response(blob, { status: 200, headers: { 'content-length': String(size) } });
  }
  const res = await strictFetch(input, init);
  const len = Number(res.headers.get('content-length'));
  // Small files only here (read whole, checked, then kept); checkpoints go through prefetch, which reports progress.
  if (method !== 'GET' || rangeHeader || res.status !== 200 || !cacheAvailable() || len > 64 << 20) return res;
  // Failures as the library's download path (its caller) throws them: named by URL, a cut one retried.
  let body: Blob;
  try {
    body = await res.blob();
  } catch {
    throw new NetworkError('fetch', `${url}: the connection was cut${len ? ` (expected ${len} bytes)` : ''}`, true);
  }
  const encoded = res.headers.get('content-encoding') !== null;
  const problem = await incomplete(url, body, len, encoded);
  if (problem) throw new NetworkError('fetch', `${url}: ${problem}`, len > 0 && !encoded && body.size !== len);
  await keep(url, new Response(body, { headers: res.headers }));
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
};

/**
 * Why `body` is not the whole of `url`, or null: length against Content-Length, JSON that parses, safetensors
 * extent.
 */
async function incomplete(url: string, body: Blob, expected: number, encoded: boolean): Promise<string | null> {
  if (expected > 0 && !encoded && body.size !== expected) {
    return `got ${body.size} of ${expected} bytes (connection cut?)`;
  }
  const name = fileOf(url);
  try {
    if (name.endsWith('.json')) JSON.parse(await body.text());
    else if (name.endsWith('.safetensors')) await SafetensorsFile.open(blobSource(body, name));
  } catch (e) {
    const why = (e as Error).message;
    return name.endsWith('.json') ? `arrived incomplete or is not JSON (${why})`
      : `arrived incomplete: ${why.replace(/^\[\w+\] /, '')}`;
  }
  return null;
}

/** What the page says of a web page (200, text/html) where a model's weights should be. */
export const WEB_PAGE =
  'the server sent a web page (HTML) where the model\'s weights should be; is this the folder that holds them?';

/** A failure of the library's download path as a DownloadError naming `url` once. */
function downloadError(url: string, e: unknown): unknown {
  if (!(e instanceof NetworkError)) return e;
  return new DownloadError(url, e.message.replace(/^\[fetch\] /, '').replace(`${url}: `, ''));
}

/**
 * Download `url` whole into the cache unless it is there, through the library's download path: transient failures
 * retried with backoff (each told to `onRetry`), a cut body resumed with a Range request, an idle body abandoned and
 * resumed. Returns its size. A file that does not arrive whole is not kept (DownloadError). When the cache refuses
 * the file (quota), returns the size anyway: reads then go to the network.
 */
export async function prefetch(
  url: string, onProgress: Progress, signal?: AbortSignal, onRetry?: (message: string) => void,
): Promise<number> {
  const hit = await cachedBlob(url);
  if (hit) { onProgress(hit.size, hit.size); return hit.size; }
  const dl = await streamDownload(url, { signal, onRetry: (m) => onRetry?.(m.replace(`${url}: `, '')) })
    .catch((e: unknown) => { throw downloadError(url, e); });
  const res = dl.response;
  if (res.status === 404) throw new DownloadError(url, 'not found (404)');
  if (!res.ok || !dl.body) throw new DownloadError(url, `HTTP ${res.status} ${res.statusText}`.trim());
  // Whatever the HEAD probe said, a web page is not the weights (a server's fallback page for a missing file).
  if (isWebPage(url, res)) { await dl.body.cancel(); throw new DownloadError(url, WEB_PAGE); }
  const total = Number(res.headers.get('content-length')) || 0;
  let loaded = 0;
  let lost: unknown = null;
  // The download path's own reason, when it gave up, says more than the cache's "network error".
  const cut = () => (lost ? downloadError(url, lost)
    : new DownloadError(url, `the connection was cut after ${loaded}${total ? ` of ${total}` : ''} bytes`));
  const count = (n: number) => { loaded += n; onProgress(loaded, Math.max(total, loaded)); };
  const body = counted(dl.body, count, signal, (e) => { lost = e; });
  const stopped = abortable(signal);
  if (!cacheAvailable()) {
    // Nowhere to keep it: drain for the byte count; the loader will fetch ranges itself.
    try {
      await Promise.race([body.pipeTo(new WritableStream()), stopped.promise]);
    } catch (e) {
      throw signal?.aborted ? signal.reason ?? e : cut();
    } finally {
      stopped.done();
    }
    return loaded || total;
  }
  // Streamed into the cache (a checkpoint need not fit in memory), then checked there and taken out if not whole.
  const type = res.headers.get('content-type') ?? 'application/octet-stream';
  try {
    const put = (await openCache()).put(url, new Response(body, { headers: { 'content-type': type } }));
    put.catch(() => {}); // after a stop, its own rejection comes later and says nothing new
    await Promise.race([put, stopped.promise]);
  } catch (e) {
    if (signal?.aborted) throw signal.reason ?? e;
    if (e instanceof DOMException && e.name === 'QuotaExceededError') {
      console.warn(`the download cache is full; ${fileOf(url)} is read from the network`);
      return loaded || total;
    }
    throw cut();
  } finally {
    stopped.done();
  }
  forgetRead(url);
  const kept = await cachedBlob(url);
  const problem = kept ? await incomplete(url, kept, total, res.headers.get('content-encoding') !== null) : null;
  if (problem) {
    await evict(url);
    throw new DownloadError(url, problem);
  }
  return kept?.size ?? loaded;
}

/** A download that failed for a network or HTTP reason. */
export class DownloadError extends Error {
  constructor(readonly url: string, detail: string) {
    super(`${url}: ${detail}`);
    this.name = 'DownloadError';
  }
}
