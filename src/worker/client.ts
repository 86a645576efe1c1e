// The page's side of a model in a dedicated worker (handler.ts is the worker's): the library's calls, each a
// message to the worker and its answers back. Shaped after WebLLM's WebWorkerMLCEngine, with streaming pushed by
// the worker, AbortSignals forwarded as `abort` messages, and errors rebuilt as their own classes. A worker that
// fails or is terminated, or whose GPU device is lost, rejects every call in flight at once: nothing waits forever.
import { DeviceLostError } from '../errors.ts';
import { reviveError, WorkerError } from './errors.ts';
import type { DeviceOptions } from '../gpu/device.ts';
import type {
  AppModelSource, Calls, GenerateEvent, GenerateStats, LoadProgress, Method, RefractProgress, RefractReport, Reply,
  Request, WorkerDeviceInfo, WorkerGenerateOptions, WorkerLoadOptions, WorkerLogitsOptions, WorkerModelInfo,
  WorkerRefractOptions, WorkerTimeOptions, WorkerTokenizeOptions,
} from './protocol.ts';

/** What the client talks to: a `Worker`, or anything with its message interface (a MessagePort, a test's fake). */
export interface WorkerPort {
  postMessage(message: Request, transfer?: Transferable[]): void;
  addEventListener(
    type: 'message' | 'error' | 'messageerror', listener: (ev: { data?: unknown; message?: string }) => void,
  ): void;
  terminate?(): void;
}

/** One call waiting for its answer. */
interface Pending {
  resolve(value: unknown): void;
  reject(e: Error): void;
  onProgress?(p: LoadProgress | RefractProgress): void;
  onEvent?(ev: GenerateEvent): void;
}

/** A call's progress and stream listeners, and the signal that aborts it. */
type Hooks = Omit<Pending, 'resolve' | 'reject'> & { signal?: AbortSignal };

/** Options of `load`: loadModel's, with the load's progress reported from the worker. */
export interface ClientLoadOptions extends WorkerLoadOptions {
  progressCallback?: (p: LoadProgress) => void;
}

/** Options of `generate`: the library's, and a signal that stops the generation in the worker. */
export interface ClientGenerateOptions extends WorkerGenerateOptions {
  signal?: AbortSignal;
}

/** Options of `runRefract`: runRefract's (the worker's model is the backend), with progress and a signal. */
export interface ClientRefractOptions extends WorkerRefractOptions {
  onProgress?: (stage: RefractProgress['stage'], done: number, total: number, etaSeconds: number | null) => void;
  signal?: AbortSignal;
}

/**
 * A model in a dedicated worker, driven from the page. The worker script installs the handler
 * (`installWorkerHandler()` from `hrm-webgpu/worker/handler`); the page wraps the Worker:
 * @example
 * const hrm = new HrmWorkerClient(new Worker(new URL('./hrm.worker.ts', import.meta.url), { type: 'module' }));
 * await hrm.load('https://huggingface.co/sapientinc/HRM-Text-1B/resolve/main', { progressCallback: (p) => show(p) });
 * for await (const ev of hrm.generate('The jury said', { maxTokens: 32, signal })) {
 *   if (ev.type === 'text') out.append(ev.text);
 * }
 *
 * Calls run in the worker one at a time, in the order they were made.
 */
export class HrmWorkerClient {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Set once the worker cannot answer any more: every later call fails with it. */
  private dead: WorkerError | null = null;
  /** The loaded model, as the worker described it (null before a load, after dispose or a lost device). */
  info: WorkerModelInfo | null = null;
  private readonly lostListeners: Array<(message: string) => void> = [];

  constructor(private readonly port: WorkerPort) {
    port.addEventListener('message', (ev) => this.receive(ev.data as Reply));
    // An error the worker did not catch (a script that failed to load, a crash): its state is unknown, so it ends.
    port.addEventListener('error', (ev) => {
      this.kill(`the worker stopped: ${ev.message || 'an error it did not catch (see its console)'}`);
    });
    port.addEventListener('messageerror', () => this.kill('the worker sent a message this page could not read'));
  }

  /**
   * Open the worker's GPU device now (its adapter, limits and fast paths, before any model). Later loads run on it
   * and keep the loaded model until the new one is in; without `open`, each load frees the model and its device first.
   */
  open(device?: DeviceOptions): Promise<WorkerDeviceInfo> {
    return this.call('open', { device });
  }

  /**
   * Load a model in the worker. No source: the embedded model; an AppModelSource (plain data) is read by the
   * worker's own `files` option.
   */
  async load(
    source?: string | URL | Iterable<File> | AppModelSource, opts: ClientLoadOptions = {},
  ): Promise<WorkerModelInfo> {
    const { progressCallback, ...options } = opts;
    const iterable = (x: object): x is Iterable<File> => Symbol.iterator in x;
    const src = source === undefined || typeof source === 'string' ? source
      : source instanceof URL ? source.href : iterable(source) ? [...source] : source;
    this.info = null;
    const onProgress = progressCallback as Pending['onProgress'];
    this.info = await this.call('load', { source: src, options }, { onProgress });
    return this.info;
  }

  /** Stream a completion: `text` events, then one `done` (the library's `generate`); `signal` stops it there. */
  async *generate(prompt: string, opts: ClientGenerateOptions = {}): AsyncGenerator<GenerateEvent> {
    const { signal, ...options } = opts;
    const queue: GenerateEvent[] = [];
    let wake: (() => void) | null = null;
    let state: { done: boolean; error?: Error } = { done: false };
    const onEvent = (ev: GenerateEvent) => { queue.push(ev); wake?.(); };
    const { id, result } = this.send('generate', { prompt, options }, { signal, onEvent });
    result.then(() => { state = { done: true }; }, (error: Error) => { state = { done: true, error }; })
      .finally(() => wake?.());
    try {
      for (;;) {
        if (queue.length) yield queue.shift()!;
        else if (state.error) throw state.error;
        else if (state.done) return;
        else await new Promise<void>((r) => { wake = r; });
      }
    } finally {
      // The consumer left the loop early: stop the work in the worker too.
      if (!state.done) this.post({ type: 'abort', id });
    }
  }

  /** Generate at once: the text and stats (`onText` sees each piece as it arrives). */
  async generateText(
    prompt: string, opts: ClientGenerateOptions & { onText?: (text: string) => void } = {},
  ): Promise<{ text: string; stats: GenerateStats }> {
    const { onText, ...rest } = opts;
    for await (const ev of this.generate(prompt, rest)) {
      if (ev.type === 'text') onText?.(ev.text);
      else return { text: ev.text, stats: ev.stats };
    }
    throw new WorkerError('generate', 'the worker ended the generation without a result');
  }

  /** f32 logits of `ids` with a fresh cache (`ids.length * vocab_size` values, row-major), moved from the worker. */
  logits(ids: number[], opts: WorkerLogitsOptions = {}): Promise<Float32Array> {
    return this.call('logits', { ids, options: opts });
  }

  /** A REFRACT score of the loaded model (runRefract with the worker's model as the backend). */
  runRefract(opts: ClientRefractOptions): Promise<RefractReport> {
    const { onProgress, signal, ...options } = opts;
    const progress = onProgress && ((p: LoadProgress | RefractProgress) => {
      const r = p as RefractProgress;
      onProgress(r.stage, r.done, r.total, r.etaSeconds);
    });
    return this.call('refract', { options }, { signal, onProgress: progress });
  }

  /** The prompt as the model reads it (in its envelope unless `raw`): the ids, and each one's text. */
  tokenize(text: string, opts: WorkerTokenizeOptions = {}): Promise<{ ids: number[]; pieces: string[] }> {
    return this.call('tokenize', { text, options: opts });
  }

  /** Milliseconds one causal pass over `positions` positions takes in the worker (for estimates of run times). */
  timePass(positions: number, opts: WorkerTimeOptions = {}): Promise<number> {
    return this.call('timePass', { positions, options: opts });
  }

  /** Resolves once the worker's GPU has run everything submitted before (a stopped call's last part included). */
  async sync(): Promise<void> {
    await this.call('sync', {});
  }

  /** Call `f` with the message when the worker's GPU device is lost (the calls in flight fail with DeviceLostError). */
  onLost(f: (message: string) => void): void {
    this.lostListeners.push(f);
  }

  /** Free the model and the worker's GPU device (the worker stays, ready for another load). */
  async dispose(): Promise<void> {
    this.info = null;
    await this.call('dispose', {});
  }

  /** End the worker now; calls in flight fail with a WorkerError. */
  terminate(): void {
    this.kill('the worker was terminated');
  }

  private kill(message: string): void {
    if (this.dead) return;
    this.dead = new WorkerError('worker', message);
    this.info = null;
    this.port.terminate?.();
    this.failAll(this.dead);
  }

  private failAll(e: Error): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const p of calls) p.reject(e);
  }

  private post(message: Request, transfer?: Transferable[]): void {
    if (!this.dead) this.port.postMessage(message, transfer);
  }

  private call<M extends Method>(method: M, args: Calls[M]['args'], hooks: Hooks = {}): Promise<Calls[M]['result']> {
    return this.send(method, args, hooks).result;
  }

  /** Send a call; its id names it in `abort` messages. */
  private send<M extends Method>(
    method: M, args: Calls[M]['args'], hooks: Hooks,
  ): { id: number; result: Promise<Calls[M]['result']> } {
    const id = this.nextId++;
    if (this.dead) return { id, result: Promise.reject(this.dead) };
    const { signal, ...rest } = hooks;
    const result = new Promise<Calls[M]['result']>((resolve, reject) => {
      const onAbort = () => this.post({ type: 'abort', id });
      const settle = () => signal?.removeEventListener('abort', onAbort);
      this.pending.set(id, {
        ...rest,
        resolve: (v) => { settle(); resolve(v as Calls[M]['result']); },
        reject: (e) => { settle(); reject(e); },
      });
      try {
        this.post({ type: 'call', id, method, args } as Request);
      } catch (e) {
        // Arguments that cannot be cloned (a function, a class instance): nothing was sent.
        this.pending.delete(id);
        settle();
        reject(e);
        return;
      }
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
    return { id, result };
  }

  private receive(m: Reply): void {
    if (m.type === 'lost') {
      this.info = null;
      this.failAll(new DeviceLostError('worker', m.message));
      for (const f of this.lostListeners) f(m.message);
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return; // a call already failed (lost device) whose worker side finished anyway
    if (m.type === 'progress') p.onProgress?.(m.progress);
    else if (m.type === 'event') p.onEvent?.(m.event);
    else {
      this.pending.delete(m.id);
      if (m.type === 'result') p.resolve(m.value);
      else p.reject(reviveError(m.error));
    }
  }
}
