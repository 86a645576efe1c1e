// The demo's model in a dedicated worker (engine.ts is the page's side): the library's handler, reading each source
// the page describes (sources.ts's SourceSpec) through the same files as the page, so that downloads stay in the
// download cache. `__demoWorker` exposes the handler to the browser tests (its device, to lose it on purpose).
import { installWorkerHandler } from '../src/worker/handler.ts';
import { sourceFiles, type SourceSpec } from './sources.ts';

const handler = installWorkerHandler({ files: (source) => sourceFiles(source as SourceSpec) });
(globalThis as unknown as { __demoWorker: typeof handler }).__demoWorker = handler;
