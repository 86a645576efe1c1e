// HRM-Text forward pass, read top to bottom like the math (HRM-TEXT.md):
//   z_H = embed(ids) * embedding_scale;  z_L = z_L_init
//   for h < H: (for l < L: z_L = L_stack(z_L + z_H));  z_H = H_stack(z_H + z_L)
//   logits = lm_head(z_H)
//   stack(x) = rms(for each layer: x += attn(rms(x)); x += mlp(rms(x)))
// Fused where it saves dispatches without changing a bit (tests/kernels prove each fusion against the composed
// ops): rms into the projection after it, the sigmoid gate into attention's output, SwiGLU into gate_up, the
// residual adds into o_proj and down_proj, RoPE and the cache append into one step (into attention itself for a
// decode step into a full-precision cache, whose attention merges inside its split, and into the scores of a
// quantized one), and a decode row's whole MLP into one where the Gpu's policy folds it (decodeMlp: dense, 4- and
// 8-bit weights). A decode layer is 5 dispatches on a GPU (6 into a quantized cache), one fewer with the MLP folded;
// in a persistent forward (ForwardOptions.persistent) o_proj, the whole MLP and, within a stack, the next layer's
// norm + gqkv are one dispatch (linear.ts tail): 2 (3 for each stack's first layer, whose gqkv runs on its own).
// Two numeric modes: 'f32' (precise reference) and 'bf16' (every op output rounded to bf16 where MLX rounds).
// All dispatches of one forward go into one command encoder; nothing is read back until the caller reads logits.
import { InputError } from '../errors.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { Tensor } from '../tensor/tensor.ts';
import { roundBf16 } from '../tensor/dtype.ts';
import type { Round } from '../kernels/common/codes.ts';
import { persistGrid } from '../kernels/plan/persist.ts';
import { add } from '../kernels/ops/ops.ts';
import { embedding, linear, prepareTail, tail } from './linear.ts';
import { rmsNorm } from '../kernels/rmsnorm/rmsnorm.ts';
import { stackCalls, type HrmConfig } from './config.ts';
import { HrmCache, roundFor, type ActDtype, type CacheOptions, type KvStorage } from './cache.ts';
import type { CachePass, CacheSlot } from './slot.ts';
import { disposeWeights, type HrmWeights, type LayerWeights } from './weights.ts';
import type { Weight } from './layout.ts';

/** How the new positions attend: the prompt as one bidirectional block, causal, or per-token types (1 = block). */
export type MaskSpec = 'prefix' | 'causal' | number[];

export interface ForwardOptions {
  mask: MaskSpec;
  /** Logits for every position, or only the last (generation). Default 'all'. */
  logits?: 'all' | 'last';
  /**
   * A decode row's layer tails (o_proj, the MLP and the next layer's norm + gqkv) may run on the persistent kernel
   * (linear.ts tail, where the Gpu's decodeStep and prepareDecode allow). Only for a caller that reads the barrier's
   * flag after the forward and redoes the whole step per op when it is set (decode.ts, stepper.ts): a barrier that
   * ran out leaves the tail, or the next gqkv, undone. Default false.
   */
  persistent?: boolean;
}

export class HrmModel {
  readonly round: Round;

  constructor(readonly gpu: Gpu, readonly config: HrmConfig, readonly weights: HrmWeights,
    readonly dtype: ActDtype = 'f32') {
    this.round = roundFor(dtype);
  }

  newCache(opts: Omit<CacheOptions, 'dtype'>): HrmCache {
    return new HrmCache(this.gpu, this.config, { ...opts, dtype: this.dtype });
  }

  /**
   * Run S new tokens through the model at the cache's offset; returns f32 logits [S or 1, vocab]. `ids` may be a
   * u32 tensor already on the GPU (a captured decode step feeds back its own argmax); its values are then not
   * checked here (the embedding clamps them to the vocabulary).
   */
  forward(ids: number[] | Tensor, cache: HrmCache, opts: ForwardOptions): Tensor {
    const c = this.config;
    const S = ids instanceof Tensor ? ids.size : ids.length;
    if (S === 0) throw new InputError('forward', 'no input ids');
    if (ids instanceof Tensor && (ids.dtype !== 'u32' || ids.rank !== 1)) {
      throw new InputError('forward',
        `ids tensor '${ids.label}' is [${ids.shape.join(', ')}] ${ids.dtype}; expected u32 [S]`);
    }
    const bad = ids instanceof Tensor ? undefined : ids.find((t) => !Number.isInteger(t) || t < 0 || t >= c.vocab_size);
    if (bad !== undefined) throw new InputError('forward',
      `token id ${bad} is outside the vocabulary [0, ${c.vocab_size})`);
    const tokenTypes = opts.mask === 'prefix' ? new Array<number>(S).fill(1)
      : opts.mask === 'causal' ? new Array<number>(S).fill(0) : opts.mask;
    if (tokenTypes.length !== S) throw new InputError('forward',
      `mask has ${tokenTypes.length} token types for ${S} ids`);

    const pass = cache.begin(tokenTypes);
    const idsT = ids instanceof Tensor ? ids : Tensor.from(this.gpu, ids, [S], 'u32', 'ids');
    const scale = this.dtype === 'bf16' ? roundBf16(c.embedding_scale) : c.embedding_scale;
    let zH = embedding(idsT, this.weights.embed, { scale, round: this.round });
    let zL = this.zLInit(S);
    const per = c.num_layers_per_stack;
    const step = { pass, persistent: opts.persistent === true };
    for (let h = 0; h < c.H_cycles; h++) {
      for (let l = 0; l < c.L_cycles; l++) {
        zL = this.stack(this.weights.L, this.residual(zL, zH), cache.slots, (h * (c.L_cycles + 1) + l) * per, step);
      }
      zH = this.stack(this.weights.H, this.residual(zH, zL), cache.slots,
        (h * (c.L_cycles + 1) + c.L_cycles) * per, step);
    }
    zL.dispose();
    if (idsT !== ids) idsT.dispose();
    const last = opts.logits === 'last' && S > 1 ? this.lastRow(zH) : zH;
    const logits = linear(last, this.weights.lmHead, { round: this.round });
    if (last !== zH) last.dispose();
    zH.dispose();
    cache.end(pass);
    return logits;
  }

  /** f32 logits [ids.length, vocab] of `ids` with a fresh cache (`kv` quantized before the pass), read back. */
  async logits(ids: number[], opts: { mask: MaskSpec; kv?: KvStorage }): Promise<Float32Array> {
    const cache = this.newCache({ capacity: ids.length, kv: opts.kv, mode: 'before-pass' });
    try {
      const t = this.forward(ids, cache, { mask: opts.mask });
      try { return await t.readF32(); } finally { t.dispose(); }
    } finally {
      cache.dispose();
    }
  }

  /** x + y, disposing x (the recurrent state it replaces). */
  private residual(x: Tensor, y: Tensor): Tensor {
    const out = add(x, y, { round: this.round });
    x.dispose();
    return out;
  }

  /**
   * Before decoding with persistent forwards: the persistent kernel's grid measured on these weights (linear.ts
   * prepareTail), so that the forward, which is synchronous, finds it. Nothing where the Gpu runs per op.
   */
  async prepareDecode(): Promise<void> {
    if (persistGrid(this.gpu) === 0) return;
    const x = Tensor.empty(this.gpu, [1, this.config.hidden_size], 'f32', 'prepare.x');
    try {
      for (const ws of [this.weights.L, this.weights.H]) {
        for (let i = 0; i < ws.length; i++) await prepareTail(x, ws[i], ws[i + 1]?.gqkv);
      }
    } finally {
      x.dispose();
    }
  }

  private stack(layers: LayerWeights[], x: Tensor, slots: CacheSlot[], base: number,
    step: { pass: CachePass; persistent: boolean }): Tensor {
    // The residual stream x is this stack's own tensor: the output projections add into it in place. A tail may
    // compute the next layer's gqkv projection too (persistent), which that layer's attention then takes.
    let gqkv: Tensor | null = null;
    for (let i = 0; i < layers.length; i++) {
      const attn = this.attention(x, layers[i], slots[base + i], step.pass, gqkv);
      gqkv = this.tail(x, attn, layers[i], step.persistent, layers[i + 1]);
      attn.dispose();
    }
    const out = rmsNorm(x, { eps: this.config.rms_norm_eps, round: this.round });
    x.dispose();
    return out;
  }

  /**
   * sigmoid(gate) * sdpa(q, cache.update(k, v)), gate | q | k | v = gqkv_proj(rms(x)), q and k RoPE'd; gqkv_proj's
   * output taken from `gqkv` where the previous layer's tail computed it.
   */
  private attention(x: Tensor, w: LayerWeights, slot: CacheSlot, pass: CachePass, gqkv: Tensor | null): Tensor {
    gqkv ??= this.proj(x, w.gqkv, { norm: true });
    const attn = slot.appendAttend(gqkv, pass);
    gqkv.dispose();
    return attn;
  }

  /**
   * x += o_proj(attn); x += down_proj(silu(gate) * up), gate | up = gate_up_proj(rms(x)): in place. Returns the
   * next layer's gqkv_proj(rms(x)) where the tail computed it too (persistent, `next` the stack's next layer), else
   * null. `persistent`: ForwardOptions'.
   */
  private tail(x: Tensor, attn: Tensor, w: LayerWeights, persistent: boolean, next?: LayerWeights): Tensor | null {
    return tail(x, attn, w, { eps: this.config.rms_norm_eps, round: this.round, persistent }, next?.gqkv);
  }

  /** x @ W^T with what surrounds it fused in: `norm` rms(x) first. */
  private proj(x: Tensor, w: Weight, o: { norm?: boolean }): Tensor {
    const norm = o.norm ? { eps: this.config.rms_norm_eps } : undefined;
    return linear(x, w, { round: this.round, norm });
  }

  private zLInit(S: number): Tensor {
    const h = this.config.hidden_size;
    const rows = new Float32Array(S * h);
    for (let s = 0; s < S; s++) rows.set(this.weights.zLInit, s * h);
    return Tensor.from(this.gpu, rows, [S, h], 'f32', 'z_L');
  }

  private lastRow(x: Tensor): Tensor {
    const [S, h] = x.shape;
    const out = Tensor.empty(this.gpu, [1, h], 'f32', 'last');
    this.gpu.copy({ buffer: x.buffer, offset: x.offset + (S - 1) * h * 4, size: h * 4 }, out.binding('lastRow'));
    return out;
  }

  /** Free the weights' GPU memory (the model is unusable afterwards). */
  dispose(): void {
    disposeWeights(this.weights);
  }

  /** Stack invocations per token times layers: dispatch-count and cache-slot bookkeeping for benchmarks. */
  get layerCalls(): number {
    return stackCalls(this.config) * this.config.num_layers_per_stack;
  }
}
