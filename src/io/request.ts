// One HTTP request as the downloads make it (http.ts): the options, a deadline for the response headers, retries
// with exponential backoff for transient failures, a failure named as a NetworkError with the URL, and a body read
// chunk by chunk with an idle timeout.
import { NetworkError } from '../errors.ts';

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

export type Net = Required<Omit<NetOptions, 'onRetry' | 'signal'>> & Pick<NetOptions, 'onRetry' | 'signal'>;

export const TRANSIENT_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

export function net(o: NetOptions): Net {
  // Called as a plain function: a browser's window.fetch refuses any other `this` ("Illegal invocation").
  return { fetch: o.fetch ?? ((input, init) => fetch(input, init)), connectTimeoutMs: o.connectTimeoutMs ?? 15_000,
    idleTimeoutMs: o.idleTimeoutMs ?? 30_000,
    retries: o.retries ?? 4, backoffMs: o.backoffMs ?? 1000, onRetry: o.onRetry, signal: o.signal };
}

const seconds = (ms: number) => `${+(ms / 1000).toFixed(3)} s`;

/** What a failed fetch says, from the runtime's error and its cause (undici puts the socket error in `cause`). */
function describe(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } })?.cause;
  const code = cause?.code ?? (e as { code?: string })?.code;
  const known: Record<string, string> = {
    ECONNREFUSED: 'connection refused', ECONNRESET: 'connection reset', ENOTFOUND: 'host not found',
    EAI_AGAIN: 'host not found (DNS)', ETIMEDOUT: 'connection timed out', EHOSTUNREACH: 'host unreachable',
    UND_ERR_SOCKET: 'connection closed by the server',
  };
  const text = cause?.message ?? (e as Error)?.message ?? String(e);
  return code && known[code] ? `${known[code]} (${code})` : text;
}

export const fail = (url: string, what: string, transient: boolean, status?: number) =>
  new NetworkError('fetch', `${url}: ${what}`, transient, status);

/** Header stalls, retried once only (the other transient failures take every retry). */
const stalls = new WeakSet<NetworkError>();

/**
 * One fetch with a deadline for its headers. The deadline is raced as well as signalled, so that a `fetch` that
 * ignores its signal cannot hang us. The controller also ends the body (idle timeout).
 */
export async function attempt(url: string, init: RequestInit,
  o: Net): Promise<{ res: Response; ctl: AbortController }> {
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
    const res = await Promise.race([o.fetch(url, { cache: 'no-store', ...init, signal: ctl.signal }), deadline]);
    return { res, ctl };
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
export async function retrying<T>(url: string, o: Net, step: () => Promise<T>): Promise<T> {
  let stalled = 0;
  for (let n = 1; ; n++) {
    try {
      return await step();
    } catch (e) {
      o.signal?.throwIfAborted();
      if (!(e instanceof NetworkError) || !e.transient) throw e;
      const what = e.message.slice(`[fetch] ${url}: `.length);
      if (n > o.retries || (stalls.has(e) && ++stalled > 1)) {
        throw fail(url, `${what}${n > 1 ? ` (gave up after ${n} attempts)` : ''}`, true, e.status);
      }
      const wait = o.backoffMs * 2 ** (n - 1);
      o.onRetry?.(`${url}: ${what}; retrying in ${seconds(wait)} (attempt ${n + 1} of ${o.retries + 1})`);
      await sleep(wait, o.signal);
    }
  }
}

export const discard = (res: Response) => { res.body?.cancel().catch(() => {}); };

/** A response's status as an error: transient ones are retried, others (404, 403, ...) end at once. */
export function statusError(url: string, res: Response): NetworkError {
  discard(res);
  const status = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
  return fail(url, status, TRANSIENT_STATUS.has(res.status), res.status);
}

/** One read of a body; a read that waits longer than the idle timeout ends the response. Null at its end. */
export async function readChunk(
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
export async function readBody(url: string, res: Response, ctl: AbortController, o: Net, got: () => number,
  sink: (b: Uint8Array) => void): Promise<void> {
  if (!res.body) { sink(new Uint8Array(await res.arrayBuffer())); return; }
  const reader = res.body.getReader();
  for (let b; (b = await readChunk(url, reader, ctl, o, got())) !== null;) sink(b);
}
