// The demo's model in a dedicated worker (engine.ts is the page's side): the library's handler, reading each source
// the page describes (sources.ts's SourceSpec) through the same files as the page, so that downloads stay in the
// download cache; its warnings go to the page. `__demoWorker` exposes the handler to the browser tests (its
// device, to lose it on purpose).
import { installWorkerHandler } from '../src/worker/handler.ts';
import { sourceFiles, type SourceSpec } from './sources.ts';

// The loader warns through console.warn (a tokenizer smaller than the vocabulary, a stale config key), and the
// worker protocol carries no warnings: each is posted to the page as well, which shows it in the model panel. The
// library's client ignores a message that answers no call.
const warn = console.warn.bind(console);
console.warn = (...args: unknown[]) => {
  warn(...args);
  postMessage({ type: 'demo-warning', message: args.map(String).join(' ') });
};

const handler = installWorkerHandler({ files: (source) => sourceFiles(source as SourceSpec) });
(globalThis as unknown as { __demoWorker: typeof handler }).__demoWorker = handler;
