// Where a model's files come from: a local folder (Node/Deno), a base URL (e.g. a Hugging Face
// `https://huggingface.co/<repo>/resolve/main`), or a browser FileList from a directory picker or a drop.
// Each gives text files (config, tokenizer) and byte sources for safetensors files.
import { InputError, NetworkError } from '../errors.ts';
import { runtimeName } from '../gpu/device.ts';
import { getBytes, head } from '../io/http.ts';
import type { NetOptions } from '../io/request.ts';
import { blobSource, fileSource, urlSource, type ByteSource } from '../io/sources.ts';

export interface ModelFiles {
  /** Shown in messages: the folder, URL or picked folder name. */
  readonly name: string;
  /** A text file's contents, or null when the model has no such file. */
  text(file: string): Promise<string | null>;
  /** A byte source for a file, or null when absent. */
  bytes(file: string): Promise<ByteSource | null>;
}

export function dirFiles(dir: string): ModelFiles {
  const fsp = import(/* @vite-ignore */ 'node:' + 'fs/promises') as Promise<typeof import('node:fs/promises')>;
  const path = (f: string) => `${dir.replace(/\/+$/, '')}/${f}`;
  const exists = async (f: string) => (await fsp).stat(path(f)).then((s) => s.isFile(), () => false);
  return {
    name: dir,
    text: async (f) => ((await exists(f)) ? (await fsp).readFile(path(f), 'utf8') : null),
    bytes: async (f) => ((await exists(f)) ? fileSource(path(f)) : null),
  };
}

/** Files under a base URL; `opts` sets the timeouts and retries of every request (see io/http.ts). */
export function urlFiles(base: string, opts: NetOptions = {}): ModelFiles {
  const url = (file: string) => `${base.replace(/\/+$/, '')}/${file}`;
  return {
    name: base,
    async text(file) {
      try {
        return new TextDecoder().decode((await getBytes(url(file), null, opts)).bytes);
      } catch (e) {
        if (e instanceof NetworkError && e.status === 404) return null;
        throw e;
      }
    },
    async bytes(file) {
      const res = await head(url(file), opts);
      if (res.status === 404) return null;
      // A server that does not answer HEAD: the file's reads will tell whether it is there (and how long it is).
      if (!res.ok && res.status !== 405 && res.status !== 501) throw new NetworkError('fetch',
        `${url(file)}: HTTP ${res.status} ${res.statusText}`, false, res.status);
      const len = Number(res.headers.get('content-length'));
      return urlSource(url(file), opts, res.ok && Number.isFinite(len) && len > 0 ? len : null);
    },
  };
}

/** Files picked in a browser (webkitdirectory input or drop): matched by base name. */
export function fileListFiles(files: Iterable<File>, name = 'picked files'): ModelFiles {
  const byName = new Map<string, File>();
  for (const file of files) byName.set(file.name, file);
  return {
    name,
    text: async (f) => byName.get(f)?.text() ?? null,
    bytes: async (f) => {
      const file = byName.get(f);
      return file ? blobSource(file, file.name) : null;
    },
  };
}

/** The model embedded in the package: hrm-text-brown-10m (9.9 M parameters, context 4096, trained on the Brown corpus
 * and generated reading tasks: it finds a needle in its context; models/hrm-text-brown-10m/README.md). */
export const EMBEDDED_MODEL = 'hrm-text-brown-10m';
// A variable, not a literal: bundlers rewrite `new URL('literal', import.meta.url)` into an asset, and this is a
// folder. Two levels up: this file is src/hrm/files.ts (dist/hrm/files.js), the models sit beside src/ and dist/.
const EMBEDDED_PATH = `../../models/${EMBEDDED_MODEL}/`;

/**
 * Where the embedded model's files are: next to `dist/` in the installed package (a `file:` URL under Node and
 * Deno). In a browser this is only reachable when the package's files are served as they are (a dev server, a
 * CDN such as jsDelivr); a bundled app copies the folder and passes its URL to `loadModel` instead.
 */
export function embeddedModelUrl(): URL {
  return new URL(EMBEDDED_PATH, import.meta.url);
}

/** What `loadModel` accepts: a folder path, an http(s) base URL, browser `File`s, or a `ModelFiles` set. */
export type ModelSource = string | URL | ModelFiles | Iterable<File>;

/** The file set of a model source; no source means the embedded model. `net`: a URL's download settings. */
export function modelFiles(source?: ModelSource, net: NetOptions = {}): ModelFiles {
  if (source === undefined) source = embeddedModelUrl();
  if (source instanceof URL) {
    if (source.protocol !== 'file:') return urlFiles(source.href, net);
    return runtimeName() === 'browser' ? urlFiles(source.href, net) : dirFiles(decodeURIComponent(source.pathname));
  }
  if (typeof source === 'string') return /^https?:\/\//.test(source) ? urlFiles(source, net) : dirFiles(source);
  const set = source as ModelFiles;
  if (typeof set.text === 'function' && typeof set.bytes === 'function') return set;
  if (typeof (source as Iterable<File>)[Symbol.iterator] === 'function') return fileListFiles(source as Iterable<File>);
  throw new InputError('loadModel', 'model source must be a folder path, a URL, browser Files or a ModelFiles set');
}
