// The demo's one seam to the model: the GPU, the loaded model (one HrmModel per activation dtype over the same
// weights), and the GPU work the panels start (load, generate, KLD, REFRACT), with the pace measured on this
// device for estimates. The panels call only this object for model work (so it can move into a Web Worker).
import {
  formatPrompt, generate, Gpu, HrmBackend, HrmModel, InputError, loadModel, runKld, runRefract,
  type ActDtype, type GenerateEvent, type GenerationOptions, type KldAxisOptions, type LoadedModel, type ModelFiles,
  type KldAxisResult, type QuantSpec, type RefractReport, type RunRefractOptions,
} from '../src/index.ts';

/** Milliseconds a causal pass spends per position, and a decode step per token, as last measured here. */
export interface Pace { positionMs: number; decodeMs: number }

export class Engine {
  gpu: Gpu | null = null;
  lm: LoadedModel | null = null;
  private readonly variants = new Map<ActDtype, HrmModel>();
  private pace: Pace | null = null;

  async open(): Promise<Gpu> {
    this.gpu = await Gpu.create();
    return this.gpu;
  }

  /** The loaded model with activations in `dtype` (the weights are shared). */
  model(dtype: ActDtype): { lm: LoadedModel; model: HrmModel } {
    const lm = this.lm;
    if (!lm) throw new InputError('demo', 'no model is loaded yet');
    if (lm.model.dtype === dtype) return { lm, model: lm.model };
    let m = this.variants.get(dtype);
    if (!m) { m = new HrmModel(lm.model.gpu, lm.config, lm.model.weights, dtype); this.variants.set(dtype, m); }
    return { lm, model: m };
  }

  load(files: ModelFiles, quantize: QuantSpec | undefined, onWeights: (loaded: number, total: number) => void): Promise<LoadedModel> {
    const progressCallback = (p: { stage: string; loaded: number; total: number }) => { if (p.stage === 'weights') onWeights(p.loaded, p.total); };
    return loadModel(files, { gpu: this.gpu!, dtype: 'f32', quantize, progressCallback });
  }

  /** Make `lm` the current model and free the previous one's weights. */
  setModel(lm: LoadedModel | null): void {
    const old = this.lm;
    this.lm = lm;
    this.variants.clear();
    this.pace = null;
    // A lost device (lm null) has taken the weights with it.
    if (old && lm && old.model.weights !== lm.model.weights) old.model.dispose();
  }

  /** Tokens of `prompt` as generate formats it (null without a tokenizer). */
  promptTokens(prompt: string, condition: string): number | null {
    const lm = this.lm;
    if (!lm?.tokenizer) return null;
    return lm.tokenizer.encode(formatPrompt(prompt, condition, { chatTemplate: lm.chatTemplate })).length;
  }

  /** Tokens of a text as REFRACT's KLD reads it (null without a tokenizer). */
  textTokens(text: string): number | null {
    return this.lm?.tokenizer ? this.lm.tokenizer.encode(text).length : null;
  }

  /** The prompt as the model reads it (condition tags and template applied): each token's id and text. */
  tokens(prompt: string, condition: string): Array<[number, string]> {
    const lm = this.lm;
    if (!lm?.tokenizer) throw new InputError('tokens', `${lm?.name ?? 'this model'} has no tokenizer.json: no tokens to show`);
    const t = lm.tokenizer;
    const ids = t.encode(formatPrompt(prompt, condition, { chatTemplate: lm.chatTemplate }));
    return ids.map((id) => [id, t.decode([id])]);
  }

  /** Stream a completion; its prompt and decode speed become the measured pace. */
  async *generate(prompt: string, dtype: ActDtype, opts: GenerationOptions): AsyncGenerator<GenerateEvent> {
    const { lm, model } = this.model(dtype);
    for await (const ev of generate({ ...lm, model }, prompt, opts)) {
      const s = ev.type === 'done' ? ev.stats : null;
      if (s && s.decodeTokens > 1 && this.pace) this.pace.decodeMs = s.decodeMs / s.decodeTokens;
      yield ev;
    }
  }

  private backend(dtype: ActDtype, condition: string): HrmBackend {
    const { lm, model } = this.model(dtype);
    return new HrmBackend({ ...lm, model }, { condition });
  }

  kld(dtype: ActDtype, condition: string, o: Omit<KldAxisOptions, 'model'>): Promise<KldAxisResult> {
    return runKld(this.backend(dtype, condition), { ...o, model: this.lm!.name });
  }

  refract(dtype: ActDtype, condition: string, o: Omit<RunRefractOptions, 'backend' | 'model'>): Promise<RefractReport> {
    return runRefract({ ...o, backend: this.backend(dtype, condition), model: this.lm!.name });
  }

  /** Resolves once the GPU has run everything submitted (a stopped job's last part included). */
  async idle(): Promise<void> {
    await this.gpu?.sync().catch(() => {});
  }

  /**
   * This device's pace, measured once per model (passes of 1 and 16 positions, each after a warm-up that compiles
   * its kernels; 16 positions is a KLD part on a CPU adapter, whose cost is mostly per pass, not per position) and
   * then kept up to date by the runs themselves.
   */
  async measure(signal: AbortSignal): Promise<Pace> {
    if (this.pace) return this.pace;
    const { model } = this.model('f32');
    const time = async (n: number) => {
      signal.throwIfAborted();
      const t0 = performance.now();
      await model.logits(Array.from({ length: n }, (_, i) => i % this.lm!.config.vocab_size), { mask: 'causal' });
      return performance.now() - t0;
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
