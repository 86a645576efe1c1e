// Byte sources a checkpoint can come from: a file path (Node/Deno, read with node:fs), a URL (fetch, with
// HTTP range requests when the server allows them, else one streamed download), a browser File/Blob, or bytes
// in memory. Every read reports byte progress.
import { FormatError, NetworkError } from '../errors.ts';
import { getBytes, head, rangeTotal } from './http.ts';
import type { NetOptions } from './request.ts';

export type Progress = (loaded: number, total: number) => void;

export interface ByteSource {
  /** A name for error messages (path, URL or file name). */
  readonly name: string;
  size(): Promise<number>;
  /** Bytes [start, end). */
  read(start: number, end: number, onProgress?: Progress): Promise<Uint8Array>;
}

export function bytesSource(name: string, bytes: Uint8Array): ByteSource {
  return {
    name,
    size: async () => bytes.byteLength,
    read: async (start, end, onProgress) => {
      if (end > bytes.byteLength) throw new FormatError('read',
        `${name}: wanted bytes ${start}..${end}, file has ${bytes.byteLength} (truncated?)`);
      onProgress?.(end - start, end - start);
      return bytes.subarray(start, end);
    },
  };
}

export function blobSource(blob: Blob, name = (blob as File).name ?? 'blob'): ByteSource {
  return {
    name,
    size: async () => blob.size,
    read: async (start, end, onProgress) => {
      if (end > blob.size) throw new FormatError('read',
        `${name}: wanted bytes ${start}..${end}, file has ${blob.size} (truncated?)`);
      const out = new Uint8Array(await blob.slice(start, end).arrayBuffer());
      onProgress?.(out.byteLength, out.byteLength);
      return out;
    },
  };
}

/** A local file, read in pieces (the 1B checkpoint is 2.4 GB: never read it whole). */
export function fileSource(path: string): ByteSource {
  const fsp = import(/* @vite-ignore */ 'node:' + 'fs/promises') as Promise<typeof import('node:fs/promises')>;
  return {
    name: path,
    size: async () => {
      try { return (await (await fsp).stat(path)).size; } catch (e) { throw new FormatError('open',
        `${path}: ${(e as Error).message}`); }
    },
    read: async (start, end, onProgress) => {
      const fh = await (await fsp).open(path, 'r');
      try {
        const out = new Uint8Array(end - start);
        let done = 0;
        while (done < out.byteLength) {
          const n = Math.min(64 << 20, out.byteLength - done);
          const { bytesRead } = await fh.read(out, done, n, start + done);
          if (bytesRead === 0) throw new FormatError('read',
            `${path}: ended at byte ${start + done}, wanted ${end} (truncated?)`);
          done += bytesRead;
          onProgress?.(done, out.byteLength);
        }
        return out;
      } finally {
        await fh.close();
      }
    },
  };
}

/**
 * A URL. Reads are Range requests (with the timeouts, retries and resumption of http.ts); a server that ignores
 * ranges is downloaded once and kept in memory.
 */
export function urlSource(url: string, opts: NetOptions = {}, knownSize: number | null = null): ByteSource {
  let whole: Promise<Uint8Array> | null = null;
  let total = knownSize;
  return {
    name: url,
    async size() {
      if (total !== null) return total;
      const res = await head(url, opts);
      const len = Number(res.headers.get('content-length'));
      if (res.ok && Number.isFinite(len) && len > 0) return (total = len);
      if (res.status === 404) throw new NetworkError('fetch', `${url}: HTTP 404 (not found)`, false, 404);
      const ranged = await rangeTotal(url, opts);
      if (ranged !== null) return (total = ranged);
      whole ??= getBytes(url, null, opts).then((r) => r.bytes);
      return (total = (await whole).byteLength);
    },
    async read(start, end, onProgress) {
      if (!whole) {
        const r = await getBytes(url, { start, end }, opts, onProgress);
        if (!r.whole) return r.bytes;
        whole = Promise.resolve(r.bytes);
      }
      const all = await whole;
      if (end > all.byteLength) throw new FormatError('read',
        `${url}: wanted bytes ${start}..${end}, got ${all.byteLength} (truncated?)`);
      onProgress?.(end - start, end - start);
      return all.subarray(start, end);
    },
  };
}
