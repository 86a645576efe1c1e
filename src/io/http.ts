// HTTP downloads that end: a deadline for the response headers (connecting included) and for every body read,
// retries with exponential backoff for transient failures (refused or reset connections, timeouts, 408/429/5xx),
// and resumption of a cut body with a Range request from the last byte received where the server honours ranges
// (a 2.4 GB checkpoint is not restarted for one reset). Every failure is a NetworkError naming the URL and what
// happened. Plain `fetch`, so the same code runs in browsers, Deno and Node.
import { NetworkError } from '../errors.ts';
import type { Progress } from './sources.ts';

export interface NetOptions {
  fetch?: typeof fetch;
  /**
   * Milliseconds until the response headers arrive, connecting included (default 15 000). A server that stalls
   * there is tried twice at most, so a dead host fails in about half a minute.
   */
  connectTimeoutMs?: number;
  /** Milliseconds a body may send nothing before the read is abandoned (and resumed; default 30 000). */
  idleTimeoutMs?: number;
  /** Retries after the first attempt for transient failures (default 4). */
  retries?: number;
  /** Wait before the first retry, doubled for each next one (default 1000 ms). */
  backoffMs?: number;
  /** Told of each retry (the CLIs print it on stderr; the demo shows it in its progress line). */
  onRetry?: (message: string) => void;
  /** Ends the request in flight and the retries still to come, with the signal's reason. */
  signal?: AbortSignal;
}

type Net = Required<Omit<NetOptions, 'onRetry' | 'signal'>> & Pick<NetOptions, 'onRetry' | 'signal'>;

const TRANSIENT_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

function net(o: NetOptions): Net {
  // Called as a plain function: a browser's window.fetch refuses any other `this` ("Illegal invocation").
  return { fetch: o.fetch ?? ((input, init) => fetch(input, init)), connectTimeoutMs: o.connectTimeoutMs ?? 15_000, idleTimeoutMs: o.idleTimeoutMs ?? 30_000,
    retries: o.retries ?? 4, backoffMs: o.backoffMs ?? 1000, onRetry: o.onRetry, signal: o.signal };
}

const seconds = (ms: number) => `${+(ms / 1000).toFixed(3)} s`;

/** What a failed fetch says, from the runtime's error and its cause (undici puts the socket error in `cause`). */
function describe(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } })?.cause;
  const code = cause?.code ?? (e as { code?: string })?.code;
  const known: Record<string, string> = {
    ECONNREFUSED: 'connection refused', ECONNRESET: 'connection reset', ENOTFOUND: 'host not found', EAI_AGAIN: 'host not found (DNS)',
    ETIMEDOUT: 'connection timed out', EHOSTUNREACH: 'host unreachable', UND_ERR_SOCKET: 'connection closed by the server',
  };
  const text = cause?.message ?? (e as Error)?.message ?? String(e);
  return code && known[code] ? `${known[code]} (${code})` : text;
}

const fail = (url: string, what: string, transient: boolean, status?: number) => new NetworkError('fetch', `${url}: ${what}`, transient, status);

/** Header stalls, retried once only (the other transient failures take every retry). */
const stalls = new WeakSet<NetworkError>();

/**
 * One fetch with a deadline for its headers. The deadline is raced as well as signalled, so that a `fetch` that
 * ignores its signal cannot hang us. The controller also ends the body (idle timeout).
 */
async function attempt(url: string, init: RequestInit, o: Net): Promise<{ res: Response; ctl: AbortController }> {
  o.signal?.throwIfAborted();
  const ctl = new AbortController();
  // The caller's stop ends this request and its body; `retrying` then ends with the signal's reason.
  o.signal?.addEventListener('abort', () => ctl.abort(o.signal!.reason), { once: true, signal: ctl.signal });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const e = fail(url, `no response within ${seconds(o.connectTimeoutMs)} (connect timeout)`, true);
      stalls.add(e);
      ctl.abort(e);
      reject(e);
    }, o.connectTimeoutMs);
  });
  try {
    // No HTTP cache: a browser revalidating its cached copy turns a Range request into a 304 and hands fetch an
    // empty body (seen in Chrome after a reload); apps keep downloads themselves (the demo in Cache Storage).
    return { res: await Promise.race([o.fetch(url, { cache: 'no-store', ...init, signal: ctl.signal }), deadline]), ctl };
  } catch (e) {
    throw e instanceof NetworkError ? e : fail(url, describe(e), true);
  } finally {
    clearTimeout(timer);
  }
}

/** Wait `ms`, or less when `signal` aborts (rejecting with its reason). */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { signal?.removeEventListener('abort', stop); resolve(); }, ms);
    const stop = () => { clearTimeout(timer); reject(signal!.reason); };
    signal?.addEventListener('abort', stop, { once: true });
  });
}

/** Run `step` until it succeeds, retrying transient NetworkErrors with exponential backoff. */
async function retrying<T>(url: string, o: Net, step: () => Promise<T>): Promise<T> {
  let stalled = 0;
  for (let n = 1; ; n++) {
    try {
      return await step();
    } catch (e) {
      o.signal?.throwIfAborted();
      if (!(e instanceof NetworkError) || !e.transient) throw e;
      const what = e.message.slice(`[fetch] ${url}: `.length);
      if (n > o.retries || (stalls.has(e) && ++stalled > 1)) throw fail(url, `${what}${n > 1 ? ` (gave up after ${n} attempts)` : ''}`, true, e.status);
      const wait = o.backoffMs * 2 ** (n - 1);
      o.onRetry?.(`${url}: ${what}; retrying in ${seconds(wait)} (attempt ${n + 1} of ${o.retries + 1})`);
      await sleep(wait, o.signal);
    }
  }
}

const discard = (res: Response) => { res.body?.cancel().catch(() => {}); };

/** A response's status as an error: transient ones are retried, others (404, 403, ...) end at once. */
function statusError(url: string, res: Response): NetworkError {
  discard(res);
  return fail(url, `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`, TRANSIENT_STATUS.has(res.status), res.status);
}

/** Headers of a URL (HEAD), retried like a download; a non-transient status is returned for the caller to judge. */
export async function head(url: string, opts: NetOptions = {}): Promise<Response> {
  const o = net(opts);
  return retrying(url, o, async () => {
    const { res } = await attempt(url, { method: 'HEAD' }, o);
    if (TRANSIENT_STATUS.has(res.status)) throw statusError(url, res);
    return res;
  });
}

/** The size of a URL from a one-byte Range request (for servers whose HEAD gives none); null when it names none. */
export async function rangeTotal(url: string, opts: NetOptions = {}): Promise<number | null> {
  const o = net(opts);
  return retrying(url, o, async () => {
    const { res } = await attempt(url, { headers: { Range: 'bytes=0-0' } }, o);
    discard(res);
    if (TRANSIENT_STATUS.has(res.status)) throw statusError(url, res);
    const total = res.status === 206 ? /\/(\d+)$/.exec(res.headers.get('content-range') ?? '')?.[1] : undefined;
    return total === undefined ? null : Number(total);
  });
}

/** One read of a body; a read that waits longer than the idle timeout ends the response. Null at its end. */
async function readChunk(
  url: string, reader: ReadableStreamDefaultReader<Uint8Array>, ctl: AbortController, o: Net, got: number,
): Promise<Uint8Array | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<never>((_, reject) => {
    const what = `stalled: no data for ${seconds(o.idleTimeoutMs)} after ${got} bytes (idle timeout)`;
    timer = setTimeout(() => reject(fail(url, what, true)), o.idleTimeoutMs);
  });
  try {
    const { done, value } = await Promise.race([reader.read(), idle]);
    return done ? null : value;
  } catch (e) {
    ctl.abort();
    reader.cancel().catch(() => {});
    throw e instanceof NetworkError ? e : fail(url, `connection lost after ${got} bytes (${describe(e)})`, true);
  } finally {
    clearTimeout(timer);
  }
}

/** Feed every body chunk to `sink` (readChunk's idle timeout on each read). */
async function readBody(url: string, res: Response, ctl: AbortController, o: Net, got: () => number, sink: (b: Uint8Array) => void): Promise<void> {
  if (!res.body) { sink(new Uint8Array(await res.arrayBuffer())); return; }
  const reader = res.body.getReader();
  for (let b; (b = await readChunk(url, reader, ctl, o, got())) !== null;) sink(b);
}

/** What `getBytes` returns: `whole` is true when the server ignored the Range and sent the entire resource. */
export interface Fetched { bytes: Uint8Array; whole: boolean }

/**
 * GET bytes [start, end) of a URL (the whole resource when `range` is null). A body cut short is resumed from its
 * last byte with a Range request where the server honours ranges, and restarted where it does not.
 */
export async function getBytes(url: string, range: { start: number; end: number } | null, opts: NetOptions = {}, onProgress?: Progress): Promise<Fetched> {
  const o = net(opts);
  const base = range?.start ?? 0;
  let expected = range ? range.end - range.start : null;
  if (expected === 0) return { bytes: new Uint8Array(0), whole: false };
  let parts: Uint8Array[] = [];
  let got = 0;
  let whole = false;
  let resumable = range !== null;
  await retrying(url, o, async () => {
    if (got > 0 && !resumable) { parts = []; got = 0; }
    const from = base + got;
    const headers = range || got > 0 ? { Range: `bytes=${from}-${range ? range.end - 1 : ''}` } : undefined;
    const { res, ctl } = await attempt(url, { headers }, o);
    if (res.status === 206) {
      const start = /^bytes (\d+)-/.exec(res.headers.get('content-range') ?? '')?.[1];
      if (start !== undefined && Number(start) !== from) {
        discard(res);
        throw fail(url, `asked for bytes from ${from}, the server sent them from ${start}`, false);
      }
      resumable = true;
    } else if (res.ok) {
      // The entire resource from byte 0: the server ignores Range (or this is the first plain GET).
      parts = []; got = 0;
      whole = range !== null;
      const encoded = (res.headers.get('content-encoding') ?? 'identity') !== 'identity';
      resumable = !headers && !encoded && res.headers.get('accept-ranges') === 'bytes';
      expected = encoded ? null : Number(res.headers.get('content-length')) || null;
    } else {
      throw statusError(url, res);
    }
    await readBody(url, res, ctl, o, () => got, (b) => { parts.push(b); got += b.byteLength; onProgress?.(got, expected ?? got); });
    if (expected !== null && got < expected) throw fail(url, `connection closed after ${got} of ${expected} bytes`, true);
    if (expected !== null && got > expected) throw fail(url, `the server sent ${got} bytes, ${expected} expected`, false);
  });
  const bytes = new Uint8Array(got);
  let at = 0;
  for (const p of parts) { bytes.set(p, at); at += p.byteLength; }
  return { bytes, whole };
}

/** A whole URL as a stream (`streamDownload`): the first response's status and headers, and its body. */
export interface StreamedDownload {
  /** The first response (its body is `body`'s start); not 2xx when the server refused the GET. */
  response: Response;
  /** The file's bytes, resumed across cuts; null when `response` is not 2xx (its body is then cancelled). */
  body: ReadableStream<Uint8Array> | null;
}

/**
 * GET a whole URL as a stream, for files too large to hold in memory (the demo streams checkpoints into Cache
 * Storage). Transient statuses are retried with backoff; any other status is returned for the caller to judge (a
 * 404, say). A body cut short, or idle past the idle timeout, is resumed from its last byte with a Range request; a
 * server that answers that with the whole file has the bytes already streamed skipped. `retries` bounds the
 * failures in a row: each chunk that arrives starts the count again, so a long download survives many blips.
 */
export async function streamDownload(url: string, opts: NetOptions = {}): Promise<StreamedDownload> {
  const o = net(opts);
  const first = await retrying(url, o, async () => {
    const a = await attempt(url, {}, o);
    if (TRANSIENT_STATUS.has(a.res.status)) throw statusError(url, a.res);
    return a;
  });
  const response = first.res;
  if (!response.ok || !response.body) { discard(response); return { response, body: null }; }
  const encoded = (response.headers.get('content-encoding') ?? 'identity') !== 'identity';
  const total = encoded ? null : Number(response.headers.get('content-length')) || null;
  let got = 0;
  /** Bytes of the current response to drop: ones a server that ignored the Range sent again. */
  let skip = 0;
  type Reading = { reader: ReadableStreamDefaultReader<Uint8Array>; ctl: AbortController };
  let current: Reading | null = { reader: response.body.getReader(), ctl: first.ctl };
  const resume = async () => {
    const { res, ctl } = await attempt(url, { headers: { Range: `bytes=${got}-` } }, o);
    const start = res.status === 206 ? /^bytes (\d+)-/.exec(res.headers.get('content-range') ?? '')?.[1] : '0';
    if (!res.ok || !res.body) throw statusError(url, res);
    if (start === undefined || (res.status === 206 && Number(start) !== got)) {
      discard(res);
      throw fail(url, `asked for bytes from ${got}, the server sent them from ${start ?? 'an unnamed byte'}`, false);
    }
    skip = got - Number(start);
    return { reader: res.body.getReader(), ctl };
  };
  const next = () => retrying(url, o, async (): Promise<Uint8Array | null> => {
    try {
      current ??= await resume();
      for (;;) {
        const b = await readChunk(url, current.reader, current.ctl, o, got);
        if (b === null) {
          if (total !== null && got < total) throw fail(url, `connection closed after ${got} of ${total} bytes`, true);
          return null;
        }
        const kept = skip >= b.byteLength ? null : b.subarray(skip);
        skip = Math.max(0, skip - b.byteLength);
        if (kept) { got += kept.byteLength; return kept; }
      }
    } catch (e) {
      current = null;
      throw e;
    }
  });
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      const b = await next();
      if (b === null) c.close();
      else c.enqueue(b);
    },
    cancel(reason) {
      current?.ctl.abort(reason);
      current?.reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
  return { response, body };
}
