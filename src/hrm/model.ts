// HRM-Text forward pass, read top to bottom like the math (HRM-TEXT.md):
//   z_H = embed(ids) * embedding_scale;  z_L = z_L_init
//   for h < H: (for l < L: z_L = L_stack(z_L + z_H));  z_H = H_stack(z_H + z_L)
//   logits = lm_head(z_H)
//   stack(x) = rms(for each layer: x += attn(rms(x)); x += mlp(rms(x)))
// Fused where it saves dispatches without changing a bit (tests/kernels prove each fusion against the composed
// ops): rms into the projection after it, the sigmoid gate into attention's output, SwiGLU into gate_up, the
// residual adds into o_proj and down_proj, RoPE and the cache append into one step. A decode layer is 7 dispatches.
// Two numeric modes: 'f32' (precise reference) and 'bf16' (every op output rounded to bf16 where MLX rounds).
// All dispatches of one forward go into one command encoder; nothing is read back until the caller reads logits.
import { InputError } from '../tensor/errors.ts';
import type { Gpu } from '../tensor/gpu.ts';
import { Tensor } from '../tensor/tensor.ts';
import { roundBf16 } from '../tensor/dtype.ts';
import type { AttnMask, FullKV, KVSide, Round } from '../kernels/attention/types.ts';
import { add } from '../kernels/ops/ops.ts';
import { embedding, linear } from './linear.ts';
import { rmsNorm } from '../kernels/rmsnorm/rmsnorm.ts';
import { ropeAppend, ropeK, ropeQ, takeV, writeFull } from '../kernels/attention/kvcache.ts';
import { sdpa } from '../kernels/attention/sdpa.ts';
import { appendQuantized, dequantize } from '../kernels/quant/quant.ts';
import { qsdpa } from '../kernels/quant/qsdpa.ts';
import { stackCalls, type HrmConfig } from './config.ts';
import { HrmCache, type ActDtype, type CacheOptions, type Slot } from './cache.ts';
import { disposeWeights, type HrmWeights, type LayerWeights } from './weights.ts';

/** How the new positions attend: the prompt as one bidirectional block, causal, or per-token types (1 = block). */
export type MaskSpec = 'prefix' | 'causal' | number[];

export interface ForwardOptions {
  mask: MaskSpec;
  /** Logits for every position, or only the last (generation). Default 'all'. */
  logits?: 'all' | 'last';
}

/** Per-forward state shared by every layer. */
interface Pass {
  S: number;
  offset: number;
  capacity: number;
  mask: AttnMask;
  /** 'after-prefill' first pass: quantized sides also keep full-precision copies to attend to. */
  shadow: Map<KVSide, FullKV> | null;
  temps: Tensor[];
}

export class HrmModel {
  readonly round: Round;

  constructor(readonly gpu: Gpu, readonly config: HrmConfig, readonly weights: HrmWeights, readonly dtype: ActDtype = 'f32') {
    this.round = dtype === 'bf16' ? 'bf16' : 'none';
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
      throw new InputError('forward', `ids tensor '${ids.label}' is [${ids.shape.join(', ')}] ${ids.dtype}; expected u32 [S]`);
    }
    const bad = ids instanceof Tensor ? undefined : ids.find((t) => !Number.isInteger(t) || t < 0 || t >= c.vocab_size);
    if (bad !== undefined) throw new InputError('forward', `token id ${bad} is outside the vocabulary [0, ${c.vocab_size})`);
    cache.reserve(S);
    const tokenTypes = opts.mask === 'prefix' ? new Array<number>(S).fill(1) : opts.mask === 'causal' ? new Array<number>(S).fill(0) : opts.mask;
    if (tokenTypes.length !== S) throw new InputError('forward', `mask has ${tokenTypes.length} token types for ${S} ids`);

    const pass: Pass = { S, offset: cache.offset, capacity: cache.capacity, mask: this.attnMask(cache, tokenTypes), shadow: cache.fullPrecisionPass ? new Map() : null, temps: [] };
    if (pass.mask.kind === 'prefix') pass.temps.push(pass.mask.tokenTypes);
    const idsT = ids instanceof Tensor ? ids : Tensor.from(this.gpu, ids, [S], 'u32', 'ids');
    const scale = this.dtype === 'bf16' ? roundBf16(c.embedding_scale) : c.embedding_scale;
    let zH = embedding(idsT, this.weights.embed, { scale, round: this.round });
    let zL = this.zLInit(S);
    const per = c.num_layers_per_stack;
    for (let h = 0; h < c.H_cycles; h++) {
      for (let l = 0; l < c.L_cycles; l++) {
        zL = this.stack(this.weights.L, this.residual(zL, zH), cache.slots, (h * (c.L_cycles + 1) + l) * per, pass);
      }
      zH = this.stack(this.weights.H, this.residual(zH, zL), cache.slots, (h * (c.L_cycles + 1) + c.L_cycles) * per, pass);
    }
    zL.dispose();
    if (idsT !== ids) idsT.dispose();
    const last = opts.logits === 'last' && S > 1 ? this.lastRow(zH) : zH;
    const logits = linear(last, this.weights.lmHead, { round: this.round });
    if (last !== zH) last.dispose();
    zH.dispose();
    for (const t of pass.temps) t.dispose();
    for (const f of pass.shadow?.values() ?? []) f.data.dispose();
    cache.advance(tokenTypes);
    return logits;
  }

  /** x + y, disposing x (the recurrent state it replaces). */
  private residual(x: Tensor, y: Tensor): Tensor {
    const out = add(x, y, { round: this.round });
    x.dispose();
    return out;
  }

  private stack(layers: LayerWeights[], x: Tensor, slots: Slot[], base: number, pass: Pass): Tensor {
    const norm = { eps: this.config.rms_norm_eps };
    const round = this.round;
    // The residual stream x is this stack's own tensor: the output projections add into it in place.
    for (let i = 0; i < layers.length; i++) {
      const w = layers[i];
      const gated = this.attention(linear(x, w.gqkv, { round, norm }), slots[base + i], pass);
      linear(gated, w.o, { round, accumulate: x });
      gated.dispose();
      this.mlp(x, w, norm);
    }
    const out = rmsNorm(x, { eps: norm.eps, round });
    x.dispose();
    return out;
  }

  /** Attention of one layer from its fused projection gqkv (consumed): the gated output, before o_proj. */
  private attention(gqkv: Tensor, slot: Slot, pass: Pass): Tensor {
    const c = this.config;
    const round = this.round;
    const geo = { heads: c.num_attention_heads, headDim: c.head_dim, base: c.rope_theta, offset: pass.offset, round };
    let q: Tensor;
    let k = slot.k, v = slot.v;
    if (pass.shadow && (k.kind === 'quant' || v.kind === 'quant')) {
      // mlx-lm's first pass: the cache keeps quantized K/V, this pass attends to them at full precision.
      q = ropeQ(gqkv, geo);
      const kNew = ropeK(gqkv, geo);
      const vNew = takeV(gqkv, geo);
      k = this.append(kNew, k, pass);
      v = this.append(vNew, v, pass);
      kNew.dispose();
      vNew.dispose();
    } else {
      q = ropeAppend(gqkv, slot, geo);
    }
    const kvLen = pass.offset + pass.S;
    const opts = { kvLen, offset: pass.offset, mask: pass.mask, scale: 1 / Math.sqrt(c.head_dim), round, gate: gqkv };
    let o: Tensor;
    if (k.kind === 'quant' && v.kind === 'quant') o = qsdpa(q, k, v, opts);
    else {
      // One side quantized, the other full (asymmetric configs MLX cannot express): attend to the dequantized side.
      const kf = k.kind === 'quant' ? this.dequantized(k, pass) : k;
      const vf = v.kind === 'quant' ? this.dequantized(v, pass) : v;
      o = sdpa(q, kf, vf, opts);
    }
    q.dispose();
    gqkv.dispose();
    return o;
  }

  /** Write new K or V ([H, S, D]) into a cache side; returns the side attention should read this pass. */
  private append(src: Tensor, side: KVSide, pass: Pass): KVSide {
    if (side.kind === 'full') {
      writeFull(src, side, { offset: pass.offset, round: this.round });
      return side;
    }
    appendQuantized(src, side, { offset: pass.offset, round: this.round });
    if (!pass.shadow) return side;
    // The first pass attends to full precision: an f32 copy shaped like the cache (the other side may be a cache side).
    const full: FullKV = { kind: 'full', data: Tensor.empty(this.gpu, [this.config.num_attention_heads, pass.capacity, this.config.head_dim], 'f32', 'prefill.kv') };
    writeFull(src, full, { offset: pass.offset, round: this.round });
    pass.shadow.set(side, full);
    return full;
  }

  private dequantized(side: Extract<KVSide, { kind: 'quant' }>, pass: Pass): FullKV {
    const [h, cap] = side.q.shape;
    const rows = h * cap;
    const flat = dequantize(side.q.reshape([rows, side.q.shape[2]]), side.scales.reshape([rows, side.scales.shape[2]]),
      side.biases.reshape([rows, side.biases.shape[2]]), { bits: side.bits, round: this.round });
    pass.temps.push(flat);
    return { kind: 'full', data: flat.reshape([h, cap, this.config.head_dim]) };
  }

  /** x += down(silu(gate(rms(x))) * up(rms(x))), in place. */
  private mlp(x: Tensor, w: LayerWeights, norm: { eps: number }): void {
    const a = linear(x, w.gateUp, { round: this.round, norm, swiglu: true });
    linear(a, w.down, { round: this.round, accumulate: x });
    a.dispose();
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

  /** The attention mask of this forward, in kernel terms. */
  private attnMask(cache: HrmCache, newTypes: number[]): AttnMask {
    const S = newTypes.length;
    const allPrefix = newTypes.every((t) => t === 1);
    if (S === 1 && newTypes[0] === 0) return { kind: 'none' }; // one causal query sees every cached key
    if (allPrefix && cache.offset === 0) return { kind: 'none' }; // the whole prompt is one bidirectional block
    if (newTypes.every((t) => t === 0)) return { kind: 'causal' };
    const types = [...cache.tokenTypes, ...newTypes];
    return { kind: 'prefix', tokenTypes: Tensor.from(this.gpu, types, [types.length], 'u32', 'token_types') };
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
