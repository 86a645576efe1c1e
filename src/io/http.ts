// HTTP downloads that end: a deadline for the response headers (connecting included) and for every body read,
// retries with exponential backoff for transient failures (refused or reset connections, timeouts, 408/429/5xx),
// and resumption of a cut body with a Range request from the last byte received where the server honours ranges
// (a 2.4 GB checkpoint is not restarted for one reset). Every failure is a NetworkError naming the URL and what
// happened. Plain `fetch`, so the same code runs in browsers, Deno and Node.
import type { Progress } from './sources.ts';
import {
  attempt, discard, fail, net, readBody, readChunk, retrying, statusError, TRANSIENT_STATUS, type NetOptions,
} from './request.ts';

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

/** What `getBytes` returns: `whole` is true when the server ignored the Range and sent the entire resource. */
export interface Fetched { bytes: Uint8Array; whole: boolean }

/**
 * GET bytes [start, end) of a URL (the whole resource when `range` is null). A body cut short is resumed from its
 * last byte with a Range request where the server honours ranges, and restarted where it does not.
 */
export async function getBytes(url: string, range: { start: number; end: number } | null, opts: NetOptions = {},
  onProgress?: Progress): Promise<Fetched> {
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
    await readBody(url, res, ctl, o, () => got, (b) => {
      parts.push(b); got += b.byteLength; onProgress?.(got, expected ?? got);
    });
    if (expected !== null && got < expected) {
      throw fail(url, `connection closed after ${got} of ${expected} bytes`, true);
    }
    if (expected !== null && got > expected) {
      throw fail(url, `the server sent ${got} bytes, ${expected} expected`, false);
    }
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
