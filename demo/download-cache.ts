// The download cache's storage: the browser's Cache Storage, so a reload does not fetch a checkpoint again.
// Reads of a cached file are memoised; whatever a load put in the cache can be evicted again when the load fails;
// the page counts and clears what is kept. Getting files into it is cached-fetch.ts's job.

const CACHE_NAME = 'hrm-webgpu-files-v1';

/** Cache Storage exists only in secure contexts (https, localhost, 127.0.0.1). */
export function cacheAvailable(): boolean {
  return typeof caches !== 'undefined' && globalThis.isSecureContext !== false;
}

/** The download cache itself. */
export function openCache(): Promise<Cache> {
  return caches.open(CACHE_NAME);
}

const blobs = new Map<string, Promise<Blob | null>>();

/** The cached body of `url`, or null. Memoised: Chrome's blobs from the cache point at the disk entry. */
export function cachedBlob(url: string): Promise<Blob | null> {
  if (!cacheAvailable()) return Promise.resolve(null);
  let p = blobs.get(url);
  if (!p) {
    p = openCache().then((c) => c.match(url)).then((r) => (r ? r.blob() : null), () => null);
    blobs.set(url, p);
    // Forget misses so a later prefetch's entry is seen.
    p.then((b) => { if (!b) blobs.delete(url); });
  }
  return p;
}

/** Forget the memoised read of `url`, after its entry was put or taken out. */
export function forgetRead(url: string): void {
  blobs.delete(url);
}

/**
 * Start a load's reads afresh. A body memoised by an earlier load may belong to an entry that has since been evicted
 * or cleared, and the server may hold other files now: the model's worker has a memo of its own, which the page's
 * eviction and Clear cannot reach, so each load starts by forgetting.
 */
export function forgetCachedReads(): void {
  blobs.clear();
}

/** Whether `url` is in the download cache. */
export async function isCached(url: string): Promise<boolean> {
  return (await cachedBlob(url)) !== null;
}

/** The file name at the end of a URL (what messages name). */
export function fileOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.split('/').pop() || url);
}

/** Put a checked file in the cache; a refusal (quota, opaque response) only means it is served uncached. */
export async function keep(url: string, res: Response): Promise<boolean> {
  try {
    await (await openCache()).put(url, res);
  } catch (e) {
    console.warn(`could not keep ${fileOf(url)} in the download cache: ${(e as Error).message}`);
    return false;
  }
  forgetRead(url);
  return true;
}

/** Take `url` out of the cache (a file that did not arrive whole). */
export async function evict(url: string): Promise<void> {
  await (await openCache()).delete(url);
  forgetRead(url);
}

/**
 * The cache's URLs when the current load started. What a failed load evicts is read from the cache itself, not
 * from this page's own puts: the model's worker caches the files it reads (tokenizer.json) with its own copy of
 * this module.
 */
let before: Promise<Set<string>> = Promise.resolve(new Set());

async function cachedUrls(): Promise<Set<string>> {
  if (!cacheAvailable()) return new Set();
  return new Set((await (await openCache()).keys()).map((r) => r.url));
}

/** Start a load: entries cached from now on, here or in the worker, can be taken out by `evictNewEntries`. */
export async function trackNewEntries(): Promise<void> {
  before = cachedUrls();
  await before;
}

/** Take out what the current load cached; returns the file names evicted. */
export async function evictNewEntries(): Promise<string[]> {
  const known = await before;
  const urls = [...(await cachedUrls())].filter((u) => !known.has(u));
  before = Promise.resolve(new Set());
  if (!urls.length) return [];
  const c = await openCache();
  for (const u of urls) { blobs.delete(u); await c.delete(u); }
  return urls.map(fileOf);
}

/** Drop every cached download. */
export async function clearCache(): Promise<void> {
  blobs.clear();
  if (cacheAvailable()) await caches.delete(CACHE_NAME);
}

/** What the cache holds, and the origin's storage quota and usage when known. */
export interface CacheUsage { files: number; bytes: number; quota: number | null; usage: number | null }

/** Bytes held by the cached downloads (sum of entry sizes), and the origin's storage quota when known. */
export async function cacheUsage(): Promise<CacheUsage> {
  let files = 0;
  let bytes = 0;
  if (cacheAvailable() && (await caches.has(CACHE_NAME))) {
    const c = await openCache();
    for (const req of await c.keys()) {
      const b = await cachedBlob(req.url);
      if (b) { files++; bytes += b.size; }
    }
  }
  const est = await navigator.storage?.estimate?.().catch(() => null);
  return { files, bytes, quota: est?.quota ?? null, usage: est?.usage ?? null };
}
