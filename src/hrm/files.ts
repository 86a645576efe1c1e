// Where a model's files come from: a local folder (Node/Deno), a base URL (e.g. a Hugging Face
// `https://huggingface.co/<repo>/resolve/main`), or a browser FileList from a directory picker or a drop.
// Each gives text files (config, tokenizer) and byte sources for safetensors files.
import { FormatError } from '../tensor/errors.ts';
import { blobSource, fileSource, urlSource, type ByteSource } from '../tensor/sources.ts';

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

export function urlFiles(base: string, init: { fetch?: typeof fetch } = {}): ModelFiles {
  const f = init.fetch ?? fetch;
  const url = (file: string) => `${base.replace(/\/+$/, '')}/${file}`;
  return {
    name: base,
    async text(file) {
      const res = await f(url(file));
      if (res.status === 404) return null;
      if (!res.ok) throw new FormatError('fetch', `${url(file)}: HTTP ${res.status} ${res.statusText}`);
      return res.text();
    },
    async bytes(file) {
      const res = await f(url(file), { method: 'HEAD' });
      if (res.status === 404) return null;
      if (!res.ok) throw new FormatError('fetch', `${url(file)}: HTTP ${res.status} ${res.statusText}`);
      return urlSource(url(file), init);
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
