// One KV-cache slot (a stack call's layer), owning its K/V life cycle as mlx-lm's KVCache / QuantizedKVCache do:
// `append` RoPEs the new queries and keys and writes keys and values at the pass's offset, `attend` reads every
// cached position back through the kernel the Gpu's planner names for its sides (kernels/plan/attention.ts).
// The model never asks which kind a side is, nor the slot which kernel runs.
// Sides: full precision (f32, or packed bf16 in bf16 mode), group-64 quantized with their own bits, or TurboQuant
// (kernels/turbo/: coded by its own append; a decode step over two turbo sides reads the codes, turbo_one, other
// steps read them decoded to the original domain), any mix.
import { Tensor } from '../tensor/tensor.ts';
import type { Round } from '../kernels/common/codes.ts';
import type { AttnMask, CacheSide, FullKV } from '../kernels/attention/types.ts';
import { planAttend, planStep } from '../kernels/plan/attention.ts';
import { ropeAppend, ropeK, ropeQ, takeV, writeFull, type HeadsOptions } from '../kernels/attention/kvcache.ts';
import { appendQuantized, dequantizeKV } from '../kernels/attention/kvquant.ts';
import { sdpa } from '../kernels/attention/sdpa.ts';
import { appendAttendOne } from '../kernels/attention/sdpa-one.ts';
import { qsdpa } from '../kernels/attention/qsdpa.ts';
import { qsdpaOneAppend } from '../kernels/attention/qsdpa-one.ts';
import { appendTurbo, dequantizeTurbo, dequantizeTurboPair, turboRopeAppend } from '../kernels/turbo/turbo.ts';
import { turboAppendAttend } from '../kernels/turbo/turbo-one.ts';

/** What every slot of one forward shares (HrmCache.begin makes it, HrmCache.end frees it). */
export interface CachePass {
  /** New positions and where the first goes (the cache offset before this forward). */
  S: number;
  offset: number;
  /** Token type of each new position (1 = the prompt's bidirectional block). */
  tokenTypes: number[];
  mask: AttnMask;
  /**
   * 'after-prefill' first pass: quantized sides also get full-precision copies, which this pass attends to
   * (mlx-lm's generation: a full-precision prefill, then the cache converted). null otherwise.
   */
  shadow: Map<CacheSide, FullKV> | null;
  /** Tensors freed at the end of the pass (the mask's token types, dequantized sides, shadows). */
  temps: Tensor[];
  /** Keys a decode step's attention covers when a captured step fixes it (kernels/plan/reach.ts). */
  reach?: number;
}

/** The shape of a slot's attention: heads, head dim, RoPE base and the activation rounding. */
export interface SlotGeometry { heads: number; headDim: number; ropeBase: number; round: Round }

export class CacheSlot {
  constructor(readonly k: CacheSide, readonly v: CacheSide, private readonly geo: SlotGeometry) {}

  /**
   * The new positions of gqkv [S, 4*H*D] (columns gate | q | k | v): keys RoPE'd and written with the values at
   * the pass's offset; returns the RoPE'd queries [H, S, D]. One dispatch, except in an 'after-prefill' first pass
   * with a quantized side, which writes full-precision copies as well, and with a TurboQuant side (ropeQ and its
   * append: one for two turbo sides).
   */
  append(gqkv: Tensor, pass: CachePass): Tensor {
    const heads = this.heads(pass);
    const { k, v } = this;
    // ropeAppend writes full and quantized sides in one dispatch, turboRopeAppend two turbo sides; a turbo side beside
    // another kind takes its own append.
    const turbo = k.kind === 'turbo' || v.kind === 'turbo';
    const direct = !turbo && (!pass.shadow || (k.kind === 'full' && v.kind === 'full'));
    if (direct) return ropeAppend(gqkv, { k, v }, heads);
    if (k.kind === 'turbo' && v.kind === 'turbo' && !pass.shadow) {
      turboRopeAppend(gqkv, k, v, heads);
      return ropeQ(gqkv, heads);
    }
    for (const [side, fresh] of [[this.k, ropeK(gqkv, heads)], [this.v, takeV(gqkv, heads)]] as const) {
      this.write(fresh, side, pass);
      fresh.dispose();
    }
    return ropeQ(gqkv, heads);
  }

  /**
   * append, then attend (gated by gqkv's gate block): one step of the layer's attention, or the fused kernel the
   * planner names for it (planStep: a decode step's append inside attention, the same bits in fewer dispatches).
   */
  appendAttend(gqkv: Tensor, pass: CachePass): Tensor {
    const { k, v } = this;
    const step = planStep(gqkv.gpu, { seq: pass.S, mask: pass.mask, k, v, shadowed: Boolean(pass.shadow) });
    if (step.kind !== 'composed') {
      const o = { ...this.heads(pass), scale: 1 / Math.sqrt(this.geo.headDim), reach: pass.reach };
      const out = step.kind === 'full-one' ? appendAttendOne(gqkv, step.k, step.v, { ...o, merge: step.merge })
        : step.kind === 'turbo-one' ? turboAppendAttend(gqkv, step.k, step.v, o)
          : qsdpaOneAppend(gqkv, step.k, step.v, o);
      if (out) return out;
    }
    const q = this.append(gqkv, pass);
    const attn = this.attend(q, gqkv, pass);
    q.dispose();
    return attn;
  }

  /**
   * softmax(q K^T / sqrt(D) + mask) V over every cached position, gated by sigmoid(gate block of `gate`), before
   * o_proj: [S, H*D], by the kernel the planner names for the sides (planAttend); a quantized side that the
   * full-precision kernel reads is dequantized for the pass (two turbo sides in one dispatch).
   */
  attend(q: Tensor, gate: Tensor, pass: CachePass): Tensor {
    const k = pass.shadow?.get(this.k) ?? this.k;
    const v = pass.shadow?.get(this.v) ?? this.v;
    const { round, headDim } = this.geo;
    const opts = { kvLen: pass.offset + pass.S, reach: pass.reach, offset: pass.offset, mask: pass.mask,
      scale: 1 / Math.sqrt(headDim), round, gate };
    const plan = planAttend(k, v);
    if (plan.kernel === 'qsdpa') return qsdpa(q, plan.k, plan.v, opts);
    // A coded side is decoded over the keys in use, or over a captured step's reach: its dispatches replay at
    // every position of the reach, so they cannot follow kvLen.
    const at = { len: opts.kvLen, round, reach: pass.reach };
    if (k.kind === 'turbo' && v.kind === 'turbo') {
      const [dk, dv] = dequantizeTurboPair(k, v, at);
      pass.temps.push(dk.data, dv.data);
      return sdpa(q, dk, dv, opts);
    }
    const full = (side: CacheSide): FullKV => {
      if (side.kind === 'full') return side;
      const d = side.kind === 'turbo' ? dequantizeTurbo(side, at) : dequantizeKV(side, at);
      pass.temps.push(d.data);
      return d;
    };
    return sdpa(q, full(k), full(v), opts);
  }

  /** GPU bytes the slot holds. */
  get bytes(): number {
    return [this.k, this.v].flatMap(tensorsOf).reduce((n, t) => n + t.byteLength, 0);
  }

  dispose(): void {
    for (const t of [this.k, this.v].flatMap(tensorsOf)) t.dispose();
  }

  private heads(pass: CachePass): HeadsOptions {
    const { heads, headDim, ropeBase, round } = this.geo;
    return { heads, headDim, base: ropeBase, offset: pass.offset, round };
  }

  /** New K or V ([H, S, D]) into a side; a coded side in a shadowed pass also gets its f32 copy. */
  private write(fresh: Tensor, side: CacheSide, pass: CachePass): void {
    const at = { offset: pass.offset, round: this.geo.round };
    if (side.kind === 'full') return writeFull(fresh, side, at);
    if (side.kind === 'turbo') appendTurbo(fresh, side, at);
    else appendQuantized(fresh, side, at);
    if (!pass.shadow) return;
    // Shaped like the cache (the other side may be a full cache side, and both must share a capacity).
    const [h, cap] = side.kind === 'turbo' ? side.codes.shape : side.q.shape;
    const copy: FullKV = { kind: 'full',
      data: Tensor.empty(fresh.gpu, [h, cap, this.geo.headDim], 'f32', 'prefill.kv') };
    writeFull(fresh, copy, at);
    pass.temps.push(copy.data);
    pass.shadow!.set(side, copy);
  }
}

function tensorsOf(s: CacheSide): Tensor[] {
  return s.kind === 'full' ? [s.data] : s.kind === 'turbo' ? [s.codes] : [s.q, s.scales, s.biases];
}
