// The demo's one seam to the model, which runs in a dedicated worker (model.worker.ts) so that the page never waits
// on the GPU's JavaScript: the worker owns the device, the model (one HrmModel per activation dtype over the same
// weights), its tokenizer and REFRACT; this object wraps the library's worker client (HrmWorkerClient) with the
// calls the panels make (load, generate, tokens, REFRACT), the pace measured on this device for estimates, and what
// the worker said about its device and model.
import {
  HrmWorkerClient, type ClientRefractOptions, type WorkerDeviceInfo, type WorkerModelInfo,
} from '../src/worker/index.ts';
import {
  InputError, NoWebGpuError,
  type ActDtype, type GenerateEvent, type GenerateOptions, type QuantSpec, type RefractReport,
} from '../src/index.ts';
import type { SourceSpec } from './sources.ts';

/** Milliseconds a causal pass spends per position, and a decode step per token, as last measured here. */
export interface Pace { positionMs: number; decodeMs: number }

export class Engine {
  private readonly worker = new Worker(new URL('./model.worker.ts', import.meta.url), { type: 'module' });
  private readonly client = new HrmWorkerClient(this.worker);
  /** The worker's device (null until `open`). */
  device: WorkerDeviceInfo | null = null;
  /** The loaded model, as the worker describes it. */
  lm: WorkerModelInfo | null = null;
  /** Why the worker's device was lost (null while it is not). */
  lost: string | null = null;
  private pace: Pace | null = null;

  /** Open the worker's GPU device (the page's own navigator.gpu says at once whether this browser has WebGPU). */
  async open(): Promise<WorkerDeviceInfo> {
    const none = 'this runtime has no navigator.gpu (WebGPU is off or unsupported)';
    if (!('gpu' in navigator)) throw new NoWebGpuError('device', none);
    this.device = await this.client.open();
    return this.device;
  }

  /** Call `f` when the worker's device is lost (the model is gone with it). */
  onLost(f: (message: string) => void): void {
    this.client.onLost((message) => {
      this.lost = message;
      this.setModel(null);
      f(message);
    });
  }

  /** Load a model in the worker; the one loaded before stays there until this one is in. */
  load(
    source: SourceSpec, quantize: QuantSpec | undefined, onWeights: (loaded: number, total: number) => void,
  ): Promise<WorkerModelInfo> {
    return this.client.load(source, {
      dtype: 'f32', quantize, progressCallback: (p) => { if (p.stage === 'weights') onWeights(p.loaded, p.total); },
    });
  }

  /** Make `lm` the current model (the worker has freed the previous one's weights). */
  setModel(lm: WorkerModelInfo | null): void {
    this.lm = lm;
    this.pace = null;
  }

  /** Tokens of `prompt` as generate formats it (null without a tokenizer). */
  async promptTokens(prompt: string, condition: string): Promise<number | null> {
    return this.lm?.tokenizer ? (await this.client.tokenize(prompt, { condition })).ids.length : null;
  }

  /** Tokens of a text as REFRACT's KLD reads it (null without a tokenizer). */
  async textTokens(text: string): Promise<number | null> {
    return this.lm?.tokenizer ? (await this.client.tokenize(text, { raw: true })).ids.length : null;
  }

  /** The prompt as the model reads it (condition tags and template applied): each token's id and text. */
  async tokens(prompt: string, condition: string): Promise<Array<[number, string]>> {
    const lm = this.lm;
    const none = `${lm?.name ?? 'this model'} has no tokenizer.json: no tokens to show`;
    if (!lm?.tokenizer) throw new InputError('tokens', none);
    const { ids, pieces } = await this.client.tokenize(prompt, { condition });
    return ids.map((id, i) => [id, pieces[i]]);
  }

  /** Stream a completion; its prompt and decode speed become the measured pace. */
  async *generate(prompt: string, dtype: ActDtype, opts: GenerateOptions): AsyncGenerator<GenerateEvent> {
    for await (const ev of this.client.generate(prompt, { ...opts, dtype })) {
      const s = ev.type === 'done' ? ev.stats : null;
      if (s && s.decodeTokens > 1 && this.pace) this.pace.decodeMs = s.decodeMs / s.decodeTokens;
      yield ev;
    }
  }

  refract(
    dtype: ActDtype, condition: string, o: Omit<ClientRefractOptions, 'model' | 'dtype' | 'condition'>,
  ): Promise<RefractReport> {
    return this.client.runRefract({ ...o, dtype, condition, model: this.lm!.name });
  }

  /** Resolves once the worker's GPU has run everything submitted (a stopped job's last part included). */
  async idle(): Promise<void> {
    await this.client.sync().catch(() => {});
  }

  /** Milliseconds of one causal pass over `positions` positions, timed in the worker (as measure() does). */
  timePass(positions: number, dtype?: ActDtype): Promise<number> {
    return this.client.timePass(positions, dtype ? { dtype } : {});
  }

  /**
   * This device's pace, measured once per model (passes of 1 and 16 positions, timed in the worker, each after a
   * warm-up that compiles its kernels; 16 positions is a KLD part on a CPU adapter, whose cost is mostly per pass,
   * not per position) and then kept up to date by the runs themselves.
   */
  async measure(signal: AbortSignal): Promise<Pace> {
    if (this.pace) return this.pace;
    const time = (n: number) => {
      signal.throwIfAborted();
      return this.timePass(n, 'f32');
    };
    await time(1);
    await time(16);
    const one = await time(1);
    this.pace = { positionMs: (await time(16)) / 16, decodeMs: one };
    return this.pace;
  }

  /** Update the pace from a run: `ms` spent on `positions` positions of causal passes. */
  notePositions(positions: number, ms: number): void {
    if (this.pace && positions > 0) this.pace.positionMs = ms / positions;
  }
}
