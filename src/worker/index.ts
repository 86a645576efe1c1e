// `hrm-webgpu/worker`: the page's side of a model running in a dedicated worker, so that the page never waits on
// the GPU's JavaScript (the encoding of every token's dispatches). The worker script installs the other side from
// `hrm-webgpu/worker/handler`:
//
//   // hrm.worker.ts
//   import { installWorkerHandler } from 'hrm-webgpu/worker/handler';
//   installWorkerHandler();
//
//   // the page
//   import { HrmWorkerClient } from 'hrm-webgpu/worker';
//   const hrm = new HrmWorkerClient(new Worker(new URL('./hrm.worker.ts', import.meta.url), { type: 'module' }));
//   const info = await hrm.load(); // the embedded model, where the package's files are served; or a URL, or Files
//   for await (const ev of hrm.generate('The jury said', { signal })) ...
//
// This entry holds no GPU code: a page that imports it loads only the client.
/**
 * The client: open, load, generate, generateText, logits, runRefract, tokenize, timePass, sync, onLost, dispose,
 * terminate.
 */
export {
  HrmWorkerClient, type ClientGenerateOptions, type ClientLoadOptions, type ClientRefractOptions, type WorkerPort,
} from './client.ts';
/** The error a worker that cannot answer gives (failed to start, died, terminated); its own errors keep their class. */
export { WorkerError, reviveError } from './errors.ts';
/** The messages, for apps that speak to the worker themselves. */
export type {
  AppModelSource, Calls, ErrorPayload, GenerateEvent, GenerateStats, LoadProgress, Method, RefractProgress,
  RefractReport, Reply, Request, WorkerDeviceInfo, WorkerGenerateOptions, WorkerLoadOptions, WorkerLogitsOptions,
  WorkerModelInfo, WorkerModelSource, WorkerRefractOptions, WorkerTimeOptions, WorkerTokenizeOptions,
} from './protocol.ts';
/** Whether the worker's adapter runs on the CPU (pass `info.adapter`). */
export { isSoftwareAdapter, type AdapterSummary } from '../gpu/device.ts';
/** Every typed error class, so that `e instanceof DeviceLostError` works on what the client rejects with. */
export * from '../errors.ts';
