// A deterministic in-memory REFRACT backend for tests: one token per character (id = char code, 0 = EOS),
// next-token logits from fixed random bigram + skip-gram tables, and "KV quantization" that adds hash noise of
// amplitude 6 * 2^-bits per quantized side (K, V) to every logit. f16 adds nothing, so reference == reference
// exactly; fewer bits drift more. R-NIAH retrieval is emulated: the answer names the needle's keyword unless
// the noise amplitude times the haystack length is too large.
import type { Backend, CompletionOptions, CompletionResult, KLDResult, KldOptions, TrajectoryOptions,
  TrajectoryResult } from '../../src/refract/backend.ts';
import { comparePosition, kldChunks, newKldProgress } from '../../src/refract/axes/kld.ts';
import { DeviceLostError } from '../../src/errors.ts';
import { parseKvConfig } from '../../src/hrm/kv-spec.ts';
import { TURBO_BITS, type TurboType } from '../../src/kernels/turbo/format.ts';
import { rng } from '../../testkit/helpers/seeded.ts';

export const V = 128;

export interface FakeOptions {
  contextLength?: number;
  /** Global corpus positions whose candidate logits are NaN (to check that KLD drops them). */
  nanPositions?: number[];
  /** Logit bias of EOS (default -4: generations rarely stop early). */
  eosBias?: number;
  /** Throw DeviceLostError once, before scoring this KLD chunk (device-loss recovery tests). */
  loseDeviceAtChunk?: number;
}

function hash01(x: number): number {
  let h = Math.imul(x ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}

export class FakeBackend implements Backend {
  readonly name = 'fake-bigram';
  readonly calls = { completion: 0, trajectory: 0, kld: 0, tokenize: 0 };
  lost = false;
  private readonly bigram: Float32Array;
  private readonly skip: Float32Array;
  private readonly topic: Float32Array;

  constructor(private readonly o: FakeOptions = {}) {
    const r = rng(1234);
    this.bigram = Float32Array.from({ length: V * V }, () => (r() * 2 - 1) * 10);
    this.skip = Float32Array.from({ length: V * V }, () => (r() * 2 - 1) * 4);
    this.topic = Float32Array.from({ length: 31 * V }, () => (r() * 2 - 1) * 4);
  }

  tokenize(text: string): number[] {
    return Array.from(text, (ch) => {
      const c = ch.charCodeAt(0);
      return c > 0 && c < V ? c : 63;
    });
  }

  /** Noise amplitude of a KV config: 6 * 2^-bits for each quantized side (a TurboQuant type's index bits). */
  amplitude(kv: string): number {
    const cfg = parseKvConfig(kv);
    const a = (b: number | TurboType | null) =>
      (b === null ? 0 : 6 * 2 ** -(typeof b === 'string' ? TURBO_BITS[b] : b));
    return a(cfg.k.bits) + a(cfg.v.bits);
  }

  /** Logits for the token after position t of `ctxIds`; `topic` (0..30) stands in for the prompt's meaning. */
  logits(ctxIds: readonly number[], t: number, amp: number, topic = 0): Float32Array {
    const a = ctxIds[t];
    const b = t > 0 ? ctxIds[t - 1] : 0;
    const out = new Float32Array(V);
    for (let j = 0; j < V; j++) {
      const noise = amp ? (hash01((t * 131 + a) * V + j) * 2 - 1) * amp : 0;
      out[j] = this.bigram[a * V + j] + this.skip[b * V + j] + this.topic[topic * V + j] + noise;
    }
    out[0] += this.o.eosBias ?? -4;
    return out;
  }

  /** One token a character of the rendered prompt. */
  async promptTokens(o: Pick<CompletionOptions, 'prompt' | 'system' | 'applyChatTemplate'>): Promise<number> {
    return this.render(o).length;
  }

  private render(o: Pick<CompletionOptions, 'prompt' | 'system' | 'applyChatTemplate'>): string {
    if (o.applyChatTemplate === false) return o.prompt;
    return `${o.system ? `System: ${o.system}\n` : ''}User: ${o.prompt}\nAssistant:`;
  }

  private greedy(o: CompletionOptions | TrajectoryOptions): number[] {
    o.signal?.throwIfAborted();
    const ids = this.tokenize(this.render(o));
    const amp = this.amplitude(o.kvConfig);
    const topic = this.tokenize(o.prompt).reduce((s, x) => s + x, 0) % 31;
    const out: number[] = [];
    for (let s = 0; s < (o.nPredict ?? 128); s++) {
      const l = this.logits(ids, ids.length - 1, amp, topic);
      let best = 0; // EOS, else the best printable character
      for (let j = 32; j < 127; j++) if (l[j] > l[best]) best = j;
      if (best === 0) break;
      out.push(best);
      ids.push(best);
    }
    return out;
  }

  async runCompletionTrajectory(o: TrajectoryOptions): Promise<TrajectoryResult> {
    this.calls.trajectory++;
    const tokenIds = this.greedy(o);
    return { tokenIds, metadata: { n_tokens: tokenIds.length } };
  }

  async runCompletion(o: CompletionOptions): Promise<CompletionResult> {
    this.calls.completion++;
    const ids = this.greedy(o);
    let text = String.fromCharCode(...ids);
    const needle = /APRICOT-7-BLUE/.exec(o.system ?? '');
    if (needle &&
      this.amplitude(o.kvConfig) * ((o.system ??
      '').length / 10000) < 0.25) text = `The color is ${needle[0]}. ${text}`;
    return { text, nTokens: ids.length, metadata: {} };
  }

  async runKld(o: KldOptions): Promise<KLDResult> {
    this.calls.kld++;
    const ctx = o.ctx ?? 512;
    const tokens = this.tokenize(o.corpus);
    const chunks = kldChunks(tokens, o.chunks ?? 32, ctx);
    const ampRef = this.amplitude(o.refKv);
    const ampCand = this.amplitude(o.candKv);
    const nan = new Set(this.o.nanPositions ?? []);
    const state = o.resume ?? newKldProgress();
    const acc = state.acc;
    chunks.forEach((chunk, i) => {
      if (i < state.done) return;
      o.signal?.throwIfAborted();
      if (this.o.loseDeviceAtChunk === i && !this.lost) { this.lost = true; throw new DeviceLostError('fake',
        'device lost (test)'); }
      for (let t = 0; t < ctx; t++) {
        const ref = this.logits(chunk, t, ampRef);
        const cand = this.logits(chunk, t, ampCand);
        if (nan.has(i * ctx + t)) cand.fill(Number.NaN);
        acc.add(comparePosition(ref, cand, V, 0, t + 1 < ctx ? chunk[t + 1] : undefined));
      }
      state.done = i + 1;
      o.onChunk?.(i + 1, chunks.length);
    });
    const r = acc.result();
    return {
      meanKld: r.meanKld, ppl: r.ppl, rmsDpPct: r.rmsDpPct, sameToppPct: r.sameToppPct, stats: r.stats,
      chunks: chunks.length, ctx,
      metadata: { kept: r.kept, dropped: r.dropped }, ...(o.perPosition ? { perPosition: acc.perPosition } : {}),
    };
  }

  async tokenizeToIds(o: { model: string; text: string }): Promise<number[]> {
    this.calls.tokenize++;
    return this.tokenize(o.text);
  }

  async modelMetadata(o: { model: string }): Promise<Record<string, unknown>> {
    return { backend: this.name, model: o.model, context_length: this.o.contextLength ?? 8192 };
  }

  async decodeTokens(o: { ids: readonly number[] }): Promise<string[]> {
    return o.ids.map((id) => String.fromCharCode(id));
  }
}
