// The worker's side of a model in a dedicated worker (client.ts is the page's): it owns the GPU device, the model,
// its tokenizer and REFRACT, and serves the client's calls one at a time (one device, one stream of GPU work).
// A worker script is one line: `installWorkerHandler()`. Shaped after WebLLM's WebWorkerMLCEngineHandler.
import {
  formatPrompt, generate, Gpu, HrmBackend, loadModel, logits, modelFiles, runRefract, type ModelFiles, type ModelSource,
} from '../index.ts';
import { DEFAULT_CONDITION, HrmModel } from '../advanced.ts';
import { prefillMatmulPath } from '../kernels/plan/matmul.ts';
import type { ActDtype } from '../hrm/cache.ts';
import type { LoadedModel } from '../hrm/load.ts';
import { checkGenerateOptions } from '../hrm/generate.ts';
import { checkRefractOptions } from '../refract/runner.ts';
import { InputError } from '../errors.ts';
import { WorkerError } from './errors.ts';
import {
  errorPayload, type Calls, type LoadProgress, type Method, type Reply, type Request, type WorkerDeviceInfo,
  type WorkerModelInfo, type WorkerModelSource,
} from './protocol.ts';

/** What the page learns about a loaded model. */
function modelInfo(lm: LoadedModel): Omit<WorkerModelInfo, 'warnings'> {
  const w = lm.model.weights;
  const matrices = [w.embed, w.lmHead, ...[...w.L, ...w.H].flatMap((l) => [l.gqkv, l.o, l.gateUp, l.down])];
  const q = matrices.find((m) => m.quant)?.quant;
  return {
    name: lm.name, checkpoint: lm.checkpoint, config: lm.config, tokenizer: lm.tokenizer !== null,
    chatTemplate: lm.chatTemplate, dtype: lm.model.dtype, weightBytes: w.bytes,
    quant: q ? { bits: q.bits, groupSize: q.groupSize } : null, weightDtype: w.L[0]?.gqkv.dtype ?? 'f32',
    adapter: lm.model.gpu.summary,
  };
}

/** What the page learns about the worker's device. */
function deviceInfo(gpu: Gpu): WorkerDeviceInfo {
  return { adapter: gpu.summary, prefillMatmuls: prefillMatmulPath(gpu) };
}

/** How the handler answers: `postMessage` of the worker scope (or of a port). */
export type Post = (reply: Reply, transfer?: Transferable[]) => void;

export interface WorkerHandlerOptions {
  /**
   * The files of a source (default: loadModel's rules: an http(s) URL, a folder path, Files, none for the embedded
   * model). An app passes its own to read through a download cache or a custom fetch, or to read its own
   * descriptions of sources (AppModelSource).
   */
  files?: (source: WorkerModelSource) => ModelFiles;
}

type Result<M extends Method> = Promise<Calls[M]['result']>;
type Handler<M extends Method> = (args: Calls[M]['args'], id: number, signal: AbortSignal) => Result<M>;
type Handlers = { [M in Method]: Handler<M> };

/**
 * Serves HrmWorkerClient's calls: open, load (without open, the previous model and its device are freed first),
 * generate, logits, refract, tokenize, timePass, sync, dispose. Each call gets an AbortController that the client's
 * `abort` fires; a lost device is reported once (`lost`) and the model dropped. `installWorkerHandler` wires one to
 * the worker's scope.
 */
export class WorkerHandler {
  private lm: LoadedModel | null = null;
  /** The device in use (opened by `open`, or the loaded model's); null once freed or lost. */
  private gpu: Gpu | null = null;
  /** Whether `gpu` came from `open` (loads keep it, and the model before them until they succeed). */
  private opened = false;
  /** The loaded model with other activation dtypes (the same weights). */
  private readonly variants = new Map<ActDtype, HrmModel>();
  /** Calls not answered yet, for `abort`. */
  private readonly running = new Map<number, AbortController>();
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly post: Post, private readonly opts: WorkerHandlerOptions = {}) {}

  /** The model the worker holds (for a worker script's own use of it), or null. */
  get loaded(): LoadedModel | null {
    return this.lm;
  }

  /** Take one message from the page (`self.onmessage = (ev) => handler.onmessage(ev)`). */
  onmessage(ev: { data: Request }): void {
    const m = ev.data;
    if (m.type === 'abort') {
      this.running.get(m.id)?.abort(new DOMException('stopped by the caller', 'AbortError'));
      return;
    }
    const ctl = new AbortController();
    this.running.set(m.id, ctl);
    this.queue = this.queue.then(async () => {
      try {
        const handler = this.handlers[m.method] as (args: unknown, id: number, signal: AbortSignal) => Promise<unknown>;
        if (!handler) throw new InputError('worker', `unknown call '${String(m.method)}'`);
        const value = await handler(m.args, m.id, ctl.signal);
        this.post({ type: 'result', id: m.id, value } as Reply, value instanceof Float32Array ? [value.buffer] : []);
      } catch (e) {
        this.post({ type: 'error', id: m.id, error: errorPayload(e) });
      } finally {
        this.running.delete(m.id);
      }
    });
  }

  private readonly handlers: Handlers = {
    open: async ({ device }) => {
      if (!this.gpu) {
        this.free();
        this.watch(await Gpu.create(device));
        this.opened = true;
      }
      return deviceInfo(this.gpu!);
    },
    load: async ({ source, options }, id) => {
      if (!this.opened) this.free();
      const files = this.opts.files?.(source) ?? modelFiles(source as ModelSource);
      const progressCallback = (progress: LoadProgress) => this.post({ type: 'progress', id, progress });
      // The page is told what the loader warned of; the worker's console keeps it too.
      const warnings: string[] = [];
      const warn = (m: string) => { warnings.push(m); console.warn(m); };
      const lm = await loadModel(files, { ...options, gpu: this.gpu ?? undefined, progressCallback, warn });
      const old = this.lm;
      this.lm = lm;
      this.variants.clear();
      if (!this.opened) this.watch(lm.model.gpu);
      else if (old && old.model.weights !== lm.model.weights) old.model.dispose();
      return { ...modelInfo(lm), warnings };
    },
    generate: async ({ prompt, options }, id, signal) => {
      const { dtype, ...opts } = options;
      checkGenerateOptions('generate', opts);   // before the model: a wrong key is named even with none loaded
      for await (const event of generate(this.model(dtype), prompt, { ...opts, signal })) {
        this.post({ type: 'event', id, event });
      }
      return null;
    },
    logits: ({ ids, options }) => {
      const { dtype, ...opts } = options;
      return logits(this.model(dtype), ids, opts);
    },
    refract: async ({ options }, id, signal) => {
      const { dtype, condition, model, ...opts } = options;
      checkRefractOptions(opts);
      const lm = this.model(dtype);
      return runRefract({
        ...opts, model: model ?? lm.name, backend: new HrmBackend(lm, { condition }), signal,
        onProgress: (stage, done, total, etaSeconds) => {
          this.post({ type: 'progress', id, progress: { stage, done, total, etaSeconds } });
        },
      });
    },
    tokenize: async ({ text, options }) => {
      const lm = this.model();
      const tok = lm.tokenizer;
      if (!tok) throw new InputError('tokenize', `${lm.name} has no tokenizer.json`);
      const condition = options.condition ?? DEFAULT_CONDITION;
      const ids = tok.encode(options.raw ? text : formatPrompt(text, condition, { chatTemplate: lm.chatTemplate }));
      return { ids, pieces: ids.map((id) => tok.decode([id])) };
    },
    timePass: async ({ positions, options }) => {
      const lm = this.model(options.dtype);
      if (!Number.isInteger(positions) || positions < 1) {
        throw new InputError('timePass', `positions must be a whole number from 1 (got ${positions})`);
      }
      const ids = Array.from({ length: positions }, (_, i) => i % lm.config.vocab_size);
      const t0 = performance.now();
      await lm.model.logits(ids, { mask: 'causal' });
      return performance.now() - t0;
    },
    sync: async () => {
      await this.gpu?.sync().catch(() => {});
      return null;
    },
    dispose: async () => {
      this.free();
      return null;
    },
  };

  /** The loaded model with activations in `dtype` (default: the load's). */
  private model(dtype?: ActDtype): LoadedModel {
    const lm = this.lm;
    if (!lm) throw new WorkerError('worker', 'no model is loaded in the worker: call load() first');
    if (!dtype || dtype === lm.model.dtype) return lm;
    if (dtype !== 'f32' && dtype !== 'bf16') {
      throw new InputError('worker', `dtype must be 'f32' or 'bf16' (got '${String(dtype)}')`);
    }
    let m = this.variants.get(dtype);
    if (!m) this.variants.set(dtype, (m = new HrmModel(lm.model.gpu, lm.config, lm.model.weights, dtype)));
    return { ...lm, model: m };
  }

  /** Use `gpu`, and report its loss (unless it was freed or replaced by then). */
  private watch(gpu: Gpu): void {
    this.gpu = gpu;
    void gpu.device.lost.then((info) => {
      if (this.gpu !== gpu) return; // freed on purpose, or replaced by another load
      this.gpu = null;
      this.opened = false;
      this.lm = null;
      this.variants.clear();
      const why = `${info.reason}: ${info.message || 'no message'}`;
      this.post({ type: 'lost', message: `the worker's GPU device was lost (${why}); load the model again` });
    });
  }

  /** Free the model and its device; forgotten first, so that the device's 'destroyed' loss is not reported. */
  private free(): void {
    const gpu = this.gpu;
    this.gpu = null;
    this.opened = false;
    this.lm = null;
    this.variants.clear();
    gpu?.destroy();
  }
}

/**
 * Serve the client's calls in this dedicated worker: `self.onmessage` takes them, `self.postMessage` answers.
 * @example // hrm.worker.ts
 * import { installWorkerHandler } from 'hrm-webgpu/worker/handler';
 * installWorkerHandler();
 */
export function installWorkerHandler(opts: WorkerHandlerOptions = {}): WorkerHandler {
  const scope = globalThis as unknown as {
    postMessage(m: unknown, transfer: Transferable[]): void; onmessage: ((ev: { data: Request }) => void) | null;
  };
  // A page's window has a postMessage too (to other windows): not what answers the client.
  if (typeof scope.postMessage !== 'function' || 'window' in globalThis) {
    const where = 'this is a page, or has no postMessage';
    throw new WorkerError('worker', `installWorkerHandler runs in a dedicated worker (${where})`);
  }
  const handler = new WorkerHandler((reply, transfer) => scope.postMessage(reply, transfer ?? []), opts);
  scope.onmessage = (ev) => handler.onmessage(ev);
  return handler;
}
