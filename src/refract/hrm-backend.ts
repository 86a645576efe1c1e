// REFRACT's Backend on the WebGPU HRM-Text model. Completions use mlx-lm's generation semantics for a quantized
// cache (full-precision prefill, then quantized); KLD@D quantizes the candidate cache before the pass, so every
// attention reads quantized K/V, and compares per position in float64 (the MLX backend does this in the model
// dtype: f32 here is the more precise choice).
import { generate } from '../hrm/generate.ts';
import type { LoadedModel } from '../hrm/load.ts';
import { formatPrompt } from '../hrm/prompt.ts';
import { BackendCapabilityError, type Backend, type CompletionOptions, type CompletionResult, type DecodeTokensOptions,
  type KLDResult, type KldOptions, type Metadata, type TrajectoryOptions, type TrajectoryResult } from './backend.ts';
import { KLD_CONVENTION, KldAccumulator, comparePosition, kldChunks, newKldProgress,
  type KldProgress } from './axes/kld.ts';
import { kvStorage, parseKvConfig } from '../hrm/kv-spec.ts';

/** Positions in a part of a KLD pass on a CPU adapter (see logits). */
const CPU_PART = 8;

export interface HrmBackendOptions {
  /** HRM condition tags used when a prompt is formatted ("chat template" in REFRACT's terms). Default 'synth,cot'. */
  condition?: string;
}

export class HrmBackend implements Backend {
  readonly name = 'hrm-webgpu';
  private readonly condition: string;

  constructor(readonly lm: LoadedModel, opts: HrmBackendOptions = {}) {
    this.condition = opts.condition ?? 'synth,cot';
  }

  /** The last long text encoded (the KLD corpus: the runner's preflight counts its tokens, then runKld chunks it). */
  private encoded: { text: string; ids: number[] } | null = null;

  /** Token ids of `text`, the last one memoised. */
  private encode(text: string): number[] {
    if (this.encoded?.text !== text) this.encoded = { text, ids: this.tokenizer().encode(text) };
    return this.encoded.ids;
  }

  private tokenizer() {
    if (!this.lm.tokenizer) throw new BackendCapabilityError('hrm-backend',
      `${this.lm.name} has no tokenizer.json; text axes need one`);
    return this.lm.tokenizer;
  }

  /** The ids a completion feeds the model: system + user rendered by the chat template (formatPrompt), or the raw
   *  prompt (a system text is then prepended with a blank line, so it is never dropped). */
  promptIds(o: Pick<CompletionOptions, 'prompt' | 'system' | 'applyChatTemplate'>): number[] {
    const text = (o.applyChatTemplate ?? true)
      ? formatPrompt(o.prompt, this.condition, { chatTemplate: this.lm.chatTemplate, system: o.system })
      : o.system ? `${o.system}\n\n${o.prompt}` : o.prompt;
    return this.tokenizer().encode(text);
  }

  private async complete(o: CompletionOptions): Promise<{ text: string; ids: number[]; meta: Metadata }> {
    // Stopped: no new prefill goes to the GPU (the axes loop over completions without a check of their own).
    o.signal?.throwIfAborted();
    const promptIds = this.promptIds(o);
    const room = this.lm.config.max_position_embeddings - promptIds.length;
    if (room < 1) throw new BackendCapabilityError('hrm-backend',
      `prompt of ${promptIds.length} tokens fills the model's context ${this.lm.config.max_position_embeddings}`);
    let text = '';
    let ids: number[] = [];
    let meta: Metadata = {};
    for await (const ev of generate(this.lm, '', {
      promptIds, maxTokens: Math.min(o.nPredict ?? 128, room), sampler: { temperature: o.temperature ?? 0,
        seed: o.seed ?? 42 },
      cache: { kv: kvStorage(o.kvConfig), mode: 'after-prefill' }, signal: o.signal,
    })) {
      if (ev.type === 'done') {
        text = ev.text;
        ids = ev.stats.ids;
        meta = { prompt_tokens: ev.stats.promptTokens, stop_reason: ev.stats.stopReason,
          kv: parseKvConfig(o.kvConfig).label };
      }
    }
    return { text, ids, meta };
  }

  async promptTokens(o: Pick<CompletionOptions, 'prompt' | 'system' | 'applyChatTemplate'>): Promise<number> {
    return this.promptIds(o).length;
  }

  async runCompletion(o: CompletionOptions): Promise<CompletionResult> {
    const r = await this.complete(o);
    return { text: r.text, nTokens: r.ids.length, metadata: r.meta };
  }

  async runCompletionTrajectory(o: TrajectoryOptions): Promise<TrajectoryResult> {
    const r = await this.complete({ ...o, temperature: 0 });
    return { tokenIds: r.ids, metadata: { ...r.meta, n_tokens: r.ids.length } };
  }

  /**
   * Causal logits of `ids` with a fresh cache of the given config, quantized before the pass. On a CPU adapter
   * (where a 128-position pass takes tens of seconds) the positions run in parts of CPU_PART, each read back before
   * the next is recorded and the signal checked between them, so a stop waits for one part at most. Each position
   * attends to the cache's earlier ones either way; the parts depend on the adapter alone (never on timing), so
   * the reference and candidate passes, and every run on one adapter, split alike.
   */
  async logits(ids: number[], kv: string, signal?: AbortSignal): Promise<Float32Array> {
    const model = this.lm.model;
    const V = this.lm.config.vocab_size;
    const part = model.gpu.cpu ? CPU_PART : ids.length;
    const cache = model.newCache({ capacity: ids.length, kv: kvStorage(kv), mode: 'before-pass' });
    const out = new Float32Array(ids.length * V);
    try {
      for (let a = 0; a < ids.length; a += part) {
        signal?.throwIfAborted();
        const t = model.forward(ids.slice(a, a + part), cache, { mask: 'causal' });
        try { out.set(await t.readF32(), a * V); } finally { t.dispose(); }
      }
    } finally {
      cache.dispose();
    }
    return out;
  }

  /** KL(P_ref || P_cand) per position of token chunks, accumulated into `state` from chunk `state.done` on (so a
   *  run interrupted by a lost device continues where it stopped; see resilient.ts). The signal is checked between
   *  the parts of each pass (see logits). */
  async kldOnIds(chunksOfIds: number[][], refKv: string, candKv: string, onChunk?: (d: number, t: number) => void,
    signal?: AbortSignal, state: KldProgress = newKldProgress()): Promise<KldAccumulator> {
    const V = this.lm.config.vocab_size;
    for (let c = state.done; c < chunksOfIds.length; c++) {
      const ids = chunksOfIds[c];
      const ref = await this.logits(ids, refKv, signal);
      const cand = await this.logits(ids, candKv, signal);
      for (let i = 0; i < ids.length; i++) state.acc.add(comparePosition(ref, cand, V, i * V, ids[i + 1]));
      state.done = c + 1;
      onChunk?.(c + 1, chunksOfIds.length);
    }
    return state.acc;
  }

  async runKld(o: KldOptions): Promise<KLDResult> {
    const ctx = o.ctx ?? 512;
    if (ctx > this.lm.config.max_position_embeddings) {
      throw new BackendCapabilityError('hrm-backend',
        `ctx ${ctx} exceeds the model's context ${this.lm.config.max_position_embeddings}`);
    }
    const tokens = this.encode(o.corpus);
    const chunks = kldChunks(tokens, o.chunks ?? 32, ctx);
    const acc = await this.kldOnIds(chunks, o.refKv, o.candKv, o.onChunk, o.signal, o.resume);
    const r = acc.result();
    return {
      meanKld: r.meanKld, ppl: r.ppl, rmsDpPct: r.rmsDpPct, sameToppPct: r.sameToppPct, stats: r.stats,
      chunks: chunks.length, ctx,
      metadata: { convention: KLD_CONVENTION, kept_positions: r.kept, dropped_positions: r.dropped,
        ref_kv: parseKvConfig(o.refKv).label, cand_kv: parseKvConfig(o.candKv).label,
        kl_dtype: 'f32 logits, float64 KL', base_path: null },
      perPosition: o.perPosition ? acc.perPosition : undefined,
    };
  }

  /** True once the GPU device is gone (destroyed, driver reset): the model must be reloaded on a new one. */
  deviceLost(): boolean {
    return this.lm.model.gpu.watch.lost !== null;
  }

  async tokenizeToIds(o: { text: string }): Promise<number[]> {
    return o.text ? [...this.encode(o.text)] : [];
  }

  async decodeTokens(o: DecodeTokensOptions): Promise<string[]> {
    const t = this.tokenizer();
    return o.ids.map((id) => t.decode([id]));
  }

  async modelMetadata(): Promise<Metadata> {
    const g = this.lm.model.gpu.summary;
    return {
      backend: this.name, model: this.lm.name, checkpoint: this.lm.checkpoint,
      context_length: this.lm.config.max_position_embeddings,
      dtype: this.lm.model.dtype, condition: this.condition, adapter: g.description ||
        `${g.vendor} ${g.architecture}`.trim(), runtime: g.runtime,
    };
  }
}
