// Where the demo gets a model: the embedded one (served next to the page), a URL (Hugging Face `resolve/main`
// folders, through the download cache), or a local folder (directory picker or drag-and-drop).
import { EMBEDDED_MODEL, FormatError, InputError, type ModelFiles } from '../src/index.ts';
import { fileListFiles, urlFiles } from '../src/advanced.ts';
import { cachedFetch, strictFetch } from './cached-fetch.ts';
import { forgetCachedReads } from './download-cache.ts';

export interface ModelSource {
  files: ModelFiles;
  /** 'url' checkpoints are downloaded into the cache first (with a progress bar); the others are read in place. */
  kind: 'embedded' | 'url' | 'folder';
  /** Base URL of a 'url' source. */
  base?: string;
  /** The same source as plain data, for the model's worker (which reads its files with `sourceFiles`). */
  spec: SourceSpec;
}

/** Where a model is, as plain data that crosses to the worker: the page and the worker read the same files. */
export type SourceSpec =
  | { kind: 'embedded' | 'url'; base: string }
  /**
   * Files deepest first (fileListFiles keeps the last of a name, so the shallowest one wins), the folder's name,
   * and the files' names as given (what a message about a missing file lists).
   */
  | { kind: 'folder'; files: File[]; label: string; shown: string };

export const EMBEDDED_NAME = `${EMBEDDED_MODEL} (embedded)`;

const INDEX = 'model.safetensors.index.json';

/**
 * A model's files as the demo reads them: each file asked for once (the memory check and the loader read the
 * same ones); the sharded index probed only when there is no model.safetensors (a probe that misses is a 404 the
 * browser logs as an error); a missing config.json said plainly, with where it was looked for.
 */
export function probedFiles(files: ModelFiles, missing: string): ModelFiles {
  const texts = new Map<string, ReturnType<ModelFiles['text']>>();
  const bytes = new Map<string, ReturnType<ModelFiles['bytes']>>();
  const memo = <T>(m: Map<string, Promise<T>>, f: string, get: () => Promise<T>) => {
    let p = m.get(f);
    if (!p) { p = get(); m.set(f, p); p.catch(() => m.delete(f)); }
    return p;
  };
  const byteSource = (f: string) => memo(bytes, f, () => files.bytes(f));
  return {
    name: files.name,
    text: (f) => memo(texts, f, async () => {
      if (f === INDEX && (await byteSource('model.safetensors'))) return null;
      const t = await files.text(f);
      if (t === null && f === 'config.json') throw new FormatError('load', `${files.name}/config.json: ${missing}`);
      return t;
    }),
    bytes: byteSource,
  };
}

/** A source's files: the embedded model's read as served, a URL's through the download cache. */
export function sourceFiles(s: SourceSpec): ModelFiles {
  if (s.kind === 'folder') {
    return probedFiles(fileListFiles(s.files, s.label),
      `not among the files given (${s.shown}); a model folder holds config.json, tokenizer.json and the safetensors`);
  }
  if (s.kind === 'embedded') return probedFiles({ ...urlFiles(s.base, { fetch: strictFetch }), name: EMBEDDED_NAME },
    'not found (404)');
  forgetCachedReads(); // a source's files are made once a load, here and in the worker
  return probedFiles(urlFiles(s.base, { fetch: cachedFetch }),
    'not found (404): is this the folder that holds the model\'s files?');
}

const source = (spec: SourceSpec): ModelSource =>
  ({ files: sourceFiles(spec), kind: spec.kind, base: spec.kind === 'url' ? spec.base : undefined, spec });

export function embeddedSource(): ModelSource {
  return source({ kind: 'embedded', base: new URL(`models/${EMBEDDED_MODEL}`, document.baseURI).href });
}

/**
 * A model folder URL. Hugging Face repository pages (`/org/name`, `/org/name/tree/rev`, a file's `/blob/rev/...`)
 * become the `resolve/rev` folder the files are downloaded from.
 */
export function normalizeModelUrl(raw: string): string {
  const bad = (why: string) => new InputError('settings', `the Model folder URL ${why}; it is "${raw.trim()}"`);
  let u: URL;
  try { u = new URL(raw.trim()); } catch { throw bad('is not a URL'); }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw bad('must start with https:// or http://');
  if (u.hostname === 'huggingface.co' || u.hostname === 'hf.co') {
    const parts = u.pathname.split('/').filter(Boolean);
    const model = parts[0] === 'models' ? parts.slice(1) : parts;
    if (model.length === 2) return `https://huggingface.co/${model[0]}/${model[1]}/resolve/main`;
    if (model.length >= 4 && (model[2] === 'tree' || model[2] === 'blob' || model[2] === 'resolve')) {
      const rest = model.slice(4);
      // A file URL (.../config.json) means its folder.
      if (rest.length && /\.[a-z]+$/i.test(rest[rest.length - 1])) rest.pop();
      return [`https://huggingface.co/${model[0]}/${model[1]}/resolve/${model[3]}`, ...rest].join('/');
    }
  }
  return u.href.replace(/\/+$/, '').replace(/\/(config\.json|model\.safetensors(\.index\.json)?)$/, '');
}

export function urlSource(raw: string): ModelSource {
  return source({ kind: 'url', base: normalizeModelUrl(raw) });
}

/** Files from a picker or a drop; the shallowest file wins when names repeat in sub-folders. */
export function folderSource(files: File[], name?: string): ModelSource {
  const depth = (f: File) => (f.webkitRelativePath || f.name).split('/').length;
  const sorted = [...files].sort((a, b) => depth(b) - depth(a));
  const top = files.find((f) => f.webkitRelativePath)?.webkitRelativePath.split('/')[0];
  const label = name ?? top ?? (files.length === 1 ? files[0].name : `${files.length} files`);
  const names = files.map((f) => f.name);
  const shown = names.length > 4 ? `${names.slice(0, 4).join(', ')} and ${names.length - 4} more` : names.join(', ');
  return source({ kind: 'folder', files: sorted, label, shown });
}

/** Every file under the dropped items (folders walked recursively, deepest first), and the first folder's name. */
export async function droppedFiles(dt: DataTransfer): Promise<{ files: File[]; name: string | undefined }> {
  const entries = [...dt.items].map((i) => i.webkitGetAsEntry()).filter((e): e is FileSystemEntry => e !== null);
  const out: Array<{ file: File; depth: number }> = [];
  const walk = async (e: FileSystemEntry): Promise<void> => {
    if (e.isFile) {
      const file = await new Promise<File>((res, rej) => (e as FileSystemFileEntry).file(res, rej));
      out.push({ file, depth: e.fullPath.split('/').length });
    } else if (e.isDirectory) {
      const reader = (e as FileSystemDirectoryEntry).createReader();
      // readEntries returns batches (100 in Chrome) until an empty one.
      for (;;) {
        const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
        if (!batch.length) break;
        for (const child of batch) await walk(child);
      }
    }
  };
  for (const e of entries) await walk(e);
  if (!entries.length) for (const file of dt.files) out.push({ file, depth: 0 });
  // Deepest first: fileListFiles keeps the last file of a name, so the shallowest one wins.
  out.sort((a, b) => b.depth - a.depth);
  return { files: out.map((x) => x.file), name: entries.find((e) => e.isDirectory)?.name };
}
