// The messages between HrmWorkerClient (the page) and WorkerHandler (the dedicated worker that owns the GPU). Every
// payload survives structured cloning: plain data, Files and typed arrays (logits travel as a transferred
// Float32Array); errors cross as ErrorPayload and are rebuilt by class name (errors.ts). One request per call, with
// an id; the worker answers with progress and stream events for that id, then exactly one `result` or `error`. An
// `abort` names a running call; `lost` (the GPU device is gone) fails every call in flight.
import type { AdapterSummary, DeviceOptions } from '../gpu/device.ts';
import type { ActDtype, KvStorage } from '../hrm/cache.ts';
import type { DType } from '../tensor/dtype.ts';
import type { HrmConfig, QuantSpec } from '../hrm/config.ts';
import type { LoadStage } from '../hrm/load.ts';
import type { GenerateEvent, GenerateOptions, GenerateStats } from '../hrm/generate.ts';
import type { RunRefractOptions, Stage } from '../refract/runner.ts';
import type { RefractReport } from '../refract/report/json.ts';
import { errorName } from './errors.ts';

/**
 * Where the worker loads a model from: an http(s) base URL (a URL crosses as its href; a folder path where the
 * worker has a file system, as in Deno), browser `File`s (a folder from a picker or a drop), nothing for the
 * embedded model (where the library's own files are served: a dev server, a CDN), or an app's own description of
 * a source (plain data) that its worker's `files` option turns into files (WorkerHandlerOptions).
 */
export type WorkerModelSource = string | File[] | AppModelSource | undefined;

/** An app's description of where a model is (its kind, URL, Files, name), read by its worker's `files`. */
export interface AppModelSource { [field: string]: unknown }

/** Options of `load` that cross to the worker (loadModel's, without the callback and the Gpu). */
export interface WorkerLoadOptions {
  /** Adapter options for the worker's own device. */
  device?: DeviceOptions;
  /** 'f32' (default) or 'bf16' activations; each call may ask for the other (the weights are shared). */
  dtype?: ActDtype;
  /** Quantize the dense weights on the GPU while loading (loadModel's `quantize`). */
  quantize?: QuantSpec;
}

/** What the worker says about the model it loaded (everything an app shows about it). */
export interface WorkerModelInfo {
  name: string;
  /** Which checkpoint file(s) were read. */
  checkpoint: string;
  config: HrmConfig;
  /** Whether the model has a tokenizer (generation and REFRACT need one; logits do not). */
  tokenizer: boolean;
  chatTemplate: string | null;
  /** The activation dtype calls use unless they pass their own. */
  dtype: ActDtype;
  /** Bytes of weights on the GPU, and the quantization of the weight matrices (null: dense). */
  weightBytes: number;
  quant: QuantSpec | null;
  /** How the dense weights are stored on the GPU (the attention projections' dtype). */
  weightDtype: DType;
  /** The worker's adapter: features it got, the fast paths on and off (and why). */
  adapter: AdapterSummary;
  /** What the loader warned of (a tokenizer smaller than the vocabulary, a stale config key), in order. */
  warnings: string[];
}

/** Options of the worker's `generate` (the library's, but the signal: the client's own stops the worker). */
export interface WorkerGenerateOptions extends Omit<GenerateOptions, 'signal'> {
  /** Activations of this call (default: the load's dtype). */
  dtype?: ActDtype;
}

/** Options of the worker's `logits`. */
export interface WorkerLogitsOptions {
  mask?: 'prefix' | 'causal';
  kv?: string;
  dtype?: ActDtype;
}

/** Options of the worker's REFRACT run: runRefract's, with the worker's model as the backend. */
export interface WorkerRefractOptions extends Omit<RunRefractOptions, 'backend' | 'model' | 'onProgress' | 'signal'> {
  /** The model name in the report (default: the loaded model's name). */
  model?: string;
  /** HRM condition tags the backend formats prompts with (HrmBackend's `condition`). */
  condition?: string;
  dtype?: ActDtype;
}

/** The worker's GPU device, as `open` describes it before any model is loaded. */
export interface WorkerDeviceInfo {
  /** Features it got, limits, the fast paths on and off (and why). */
  adapter: AdapterSummary;
  /** The kernel that runs the prefill matmuls on this device, and why (the library's `prefillMatmulPath`). */
  prefillMatmuls: string;
}

/** Options of `timePass`. */
export interface WorkerTimeOptions {
  dtype?: ActDtype;
}

/** Options of `tokenize`. */
export interface WorkerTokenizeOptions {
  /** Condition tags of the prompt envelope (default 'synth,cot', as generate's). */
  condition?: string;
  /** Encode the text as it is, without the envelope (or the checkpoint's chat template). */
  raw?: boolean;
}

/** The calls, each with its arguments and its result. */
export interface Calls {
  /**
   * Open the worker's GPU device before a load (to show the adapter, to size a model against its limits). Loads
   * then run on it, and a load that fails keeps the model loaded before; without `open` each load frees the model
   * and its device first, and opens a new device with the load's options.
   */
  open: { args: { device?: DeviceOptions }; result: WorkerDeviceInfo };
  load: { args: { source: WorkerModelSource; options: WorkerLoadOptions }; result: WorkerModelInfo };
  generate: { args: { prompt: string; options: WorkerGenerateOptions }; result: null };
  logits: { args: { ids: number[]; options: WorkerLogitsOptions }; result: Float32Array };
  refract: { args: { options: WorkerRefractOptions }; result: RefractReport };
  /** The prompt as the model reads it: its ids and each id's text. */
  tokenize: { args: { text: string; options: WorkerTokenizeOptions }; result: { ids: number[]; pieces: string[] } };
  /**
   * Milliseconds one causal pass over `positions` positions takes in the worker (a fresh cache, the logits read
   * back), timed there: what an app estimates a run's time from.
   */
  timePass: { args: { positions: number; options: WorkerTimeOptions }; result: number };
  /** Resolves once the worker's GPU has run everything submitted (a stopped call's last part included). */
  sync: { args: Record<string, never>; result: null };
  dispose: { args: Record<string, never>; result: null };
}
export type Method = keyof Calls;

/** Page -> worker. */
export type Request =
  | { [M in Method]: { type: 'call'; id: number; method: M; args: Calls[M]['args'] } }[Method]
  | { type: 'abort'; id: number };

/** A load's progress, as loadModel's progressCallback reports it. */
export interface LoadProgress { stage: LoadStage; loaded: number; total: number; progress: number }
/** A REFRACT stage's progress, as runRefract's onProgress reports it. */
export interface RefractProgress { stage: Stage; done: number; total: number; etaSeconds: number | null }

/** An error as it crosses: its class name (a typed error's export name), message and the fields typed errors carry. */
export interface ErrorPayload {
  name: string; message: string; stack?: string; op?: string; transient?: boolean; status?: number;
}

/** Worker -> page. */
export type Reply =
  | { type: 'progress'; id: number; progress: LoadProgress | RefractProgress }
  | { type: 'event'; id: number; event: GenerateEvent }
  | { type: 'result'; id: number; value: Calls[Method]['result'] }
  | { type: 'error'; id: number; error: ErrorPayload }
  | { type: 'lost'; message: string };

export type { GenerateEvent, GenerateStats, RefractReport };

/** An error (or anything thrown) as plain data. */
export function errorPayload(e: unknown): ErrorPayload {
  if (!(e instanceof Error) && !(typeof DOMException !== 'undefined' && e instanceof DOMException)) {
    return { name: 'Error', message: String(e) };
  }
  const x = e as Error & { op?: unknown; transient?: unknown; status?: unknown };
  const out: ErrorPayload = { name: errorName(x), message: x.message, stack: x.stack };
  if (typeof x.op === 'string') out.op = x.op;
  if (typeof x.transient === 'boolean') out.transient = x.transient;
  if (typeof x.status === 'number') out.status = x.status;
  return out;
}
