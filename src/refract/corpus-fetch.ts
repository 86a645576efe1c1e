// `refract fetch`: download a corpus (any URL; wikitext-2-raw by default, as the original's fetch) into a cache for
// --corpus / --rniah-haystack, checked by size and SHA-256. Node and Deno (node:* modules); the CLI is its only
// importer, so browser bundles never see it.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { env, pid } from 'node:process';
import { dirname, join, resolve, sep } from 'node:path';
import { unzipSync } from 'fflate';
import { FormatError, InputError } from '../errors.ts';
import { getBytes } from '../io/http.ts';
import type { NetOptions } from '../io/request.ts';
import type { Progress } from '../io/sources.ts';

/**
 * REFRACT's corpus: wikitext-2-raw, the archive the original's `refract fetch` downloads (and llama.cpp's
 * scripts/get-wikitext-2.sh), pinned by size and SHA-256. It unpacks to wikitext-2-raw/wiki.{test,valid,train}.raw:
 * the original's default --corpus is wiki.test.raw, its R-NIAH haystack wiki.train.raw.
 */
export const WIKITEXT_2_RAW = {
  url: 'https://huggingface.co/datasets/ggml-org/ci/resolve/main/wikitext-2-raw-v1.zip',
  size: 4_721_645,
  sha256: 'ef7edb566e3e2b2d31b29c1fdb0c89a4cc683597484c3dc2517919c615435a11',
} as const;

/** Where `refract fetch` keeps corpora, as the original: ~/.cache/refract (XDG_CACHE_HOME/refract when set). */
export function defaultCacheDir(): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'refract');
}

export interface FetchCorpusOptions {
  /** Default defaultCacheDir(). */
  cacheDir?: string;
  /** The download's expected size in bytes and SHA-256 (hex); a mismatch is an error and nothing is kept. */
  size?: number;
  sha256?: string;
  /** Deadlines and retries of the download (the model downloads' defaults). */
  net?: NetOptions;
  onProgress?: Progress;
}

export interface FetchedCorpus {
  /** The files kept (a zip's members, or the download itself), absolute paths. */
  files: string[];
  /** The download's size and SHA-256. */
  size: number;
  sha256: string;
  /** False when the cache already held it (nothing was downloaded). */
  downloaded: boolean;
}

/** What a finished fetch records beside its files, so that the next one for the same URL downloads nothing. */
interface Manifest { url: string; size: number; sha256: string; files: Array<{ path: string; size: number }> }

const sha256Of = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** The last segment of the URL's path: the cache's name for it. */
function fileName(url: string): string {
  let u: URL;
  try { u = new URL(url); } catch { throw new InputError('fetch', `${JSON.stringify(url)} is not a URL`); }
  if (!/^https?:$/.test(u.protocol)) throw new InputError('fetch', `${url}: only http and https URLs can be fetched`);
  const name = decodeURIComponent(u.pathname.split('/').pop() ?? '');
  // An encoded slash would step out of the cache folder.
  if (!name || name === '.' || name === '..' || /[/\\]/.test(name)) throw new InputError('fetch',
    `${url} names no file`);
  return name;
}

/** Manifest of a previous fetch of `url` whose files are all still there, unchanged in size; else null. */
async function cached(path: string, url: string, expect: FetchCorpusOptions): Promise<Manifest | null> {
  const m = await readFile(path, 'utf8').then((t) => JSON.parse(t) as Manifest, () => null);
  if (!m || m.url !== url || (expect.sha256 && m.sha256 !== expect.sha256.toLowerCase())) return null;
  if (expect.size !== undefined && m.size !== expect.size) return null;
  for (const f of m.files) if ((await stat(f.path).catch(() => null))?.size !== f.size) return null;
  return m;
}

/** Write whole or not at all: a temporary file renamed over the target. */
async function writeWhole(path: string, data: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${pid}.partial`;
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
}

/** The files a download stands for: a zip archive's members (paths inside `dir` only), or the bytes as `name`. */
function unpack(bytes: Uint8Array, url: string, name: string, dir: string): Array<[string, Uint8Array]> {
  const zip = bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;
  if (!zip) return [[join(dir, name), bytes]];
  let members: Record<string, Uint8Array>;
  try {
    members = unzipSync(bytes);
  } catch (e) {
    throw new FormatError('fetch', `${url}: not a readable zip archive (${(e as Error).message})`);
  }
  const out: Array<[string, Uint8Array]> = [];
  for (const [member, data] of Object.entries(members)) {
    if (member.endsWith('/')) continue; // a folder entry
    const path = resolve(dir, member);
    if (!path.startsWith(resolve(dir) + sep)) {
      throw new FormatError('fetch', `${url}: archive member ${JSON.stringify(member)} points outside ${dir}`);
    }
    out.push([path, data]);
  }
  if (out.length === 0) throw new FormatError('fetch', `${url}: the zip archive holds no file`);
  return out;
}

/** The expected size and SHA-256 must be a positive integer and 64 hex digits. */
export function checkPins(o: Pick<FetchCorpusOptions, 'size' | 'sha256'>): void {
  if (o.sha256 !== undefined && !/^[0-9a-f]{64}$/i.test(o.sha256)) {
    throw new InputError('fetch', `sha256 ${JSON.stringify(o.sha256)} is not 64 hex digits`);
  }
  if (o.size !== undefined && !(Number.isInteger(o.size) && o.size > 0)) {
    throw new InputError('fetch', `size ${o.size} is not a positive integer`);
  }
}

/**
 * Download `url` into the cache (unpacking a zip archive), checked against `size` and `sha256` when given; the
 * download itself retries, resumes and times out as the model downloads do (io/http.ts). A second call for the
 * same URL finds the files and downloads nothing.
 */
export async function fetchCorpus(url: string, o: FetchCorpusOptions = {}): Promise<FetchedCorpus> {
  const name = fileName(url);
  checkPins(o);
  const dir = resolve(o.cacheDir ?? defaultCacheDir());
  const manifestPath = join(dir, `${name}.fetched.json`);
  const hit = await cached(manifestPath, url, o);
  if (hit) return { files: hit.files.map((f) => f.path), size: hit.size, sha256: hit.sha256, downloaded: false };

  const { bytes } = await getBytes(url, null, o.net, o.onProgress);
  if (o.size !== undefined && bytes.byteLength !== o.size) {
    throw new FormatError('fetch', `${url}: ${bytes.byteLength} bytes arrived, ${o.size} expected; nothing was kept`);
  }
  const sha256 = sha256Of(bytes);
  if (o.sha256 !== undefined && sha256 !== o.sha256.toLowerCase()) {
    throw new FormatError('fetch', `${url}: SHA-256 ${sha256}, ${o.sha256.toLowerCase()} expected; nothing was kept`);
  }
  const files = unpack(bytes, url, name, dir);
  for (const [path, data] of files) await writeWhole(path, data);
  const kept = files.map(([path, data]) => ({ path, size: data.byteLength }));
  const manifest: Manifest = { url, size: bytes.byteLength, sha256, files: kept };
  await writeWhole(manifestPath, new TextEncoder().encode(JSON.stringify(manifest, null, 2) + '\n'));
  return { files: manifest.files.map((f) => f.path), size: manifest.size, sha256, downloaded: true };
}
