// Prefill matmul on subgroup matrices (tensor cores) for bf16 mode: x @ W^T over f32 activations holding bf16
// values and bf16 weights, f32 accumulation of exact f16 products, one rounding to bf16. Per call:
//   1. to_f16 (sgmat_prep.wgsl): x's rows as f16, each scaled by a power of two that fits it into f16's range;
//   2. per weight chunk (in row spans where one would pass a binding): its f16 copy (made the same way at its
//      first use and kept with it; made per call for a quantized weight's dense copy), the tensor-core
//      product C = x16 @ w16^T (matmul_sgmat_staged.wgsl where the device can run it, else matmul_sgmat.wgsl; the
//      schedule in sgmat-schedule.ts, planned per Gpu by kernels/plan/matmul.ts),
//      then sgmat_out: C unscaled, rounded, added to the residual or through SwiGLU.
// Values the f16 path cannot hold exactly (an x that is not bf16, inf, NaN) flag the call (or the weight), and
// sgmat_out then computes those outputs with f32 FMAs: same numbers, slower. sgmat_prep.wgsl gives the error bound of
// the rest.
// matmul() routes here for path 'sgmat'; this file dispatches. What a device can do is sgmat-caps.ts, the f16 copies
// sgmat-weights.ts, the device's self-check sgmat-check.ts.
import { Kernel, grid, padTo } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { InputError } from '../../errors.ts';
import { SGMAT_KERNELS, rowSpans, splitFor, type SgmatKernel, type SgmatPlan } from './sgmat-schedule.ts';
import { PAD } from './sgmat-caps.ts';
import { halfOf, nextEpoch, sgmatState, toF16 } from './sgmat-weights.ts';

const OUT = new Kernel('matmul/sgmat_prep.wgsl', 'sgmat_out');
const KERNELS: Record<SgmatKernel, Kernel> = {
  staged: new Kernel('matmul/matmul_sgmat_staged.wgsl', 'matmul_sgmat_staged'),
  direct: new Kernel('matmul/matmul_sgmat.wgsl', 'matmul_sgmat'),
};

/**
 * c [B, S, Mp, Np] = a [B, Mp, Kp] @ b [B, Np, Kp]^T per batch, in S = `slices` K slices (their sums are the
 * caller's to add, in slice order), f16 operands, f32 sums of exact products, on the staged kernel: Mp and Np
 * multiples of 128, Kp of 64. The caller checks batchedSgmatUnavailable.
 */
export function batchedSgmat(a: Tensor, b: Tensor, c: Tensor,
  u: { batch: number; Mp: number; Np: number; Kp: number; slices: number }, label: string): void {
  const { batch, Mp, Np, Kp, slices } = u;
  if (Mp % PAD.M || Np % PAD.N || Kp % PAD.K || !(Number.isInteger(slices) && slices >= 1) ||
    a.size !== batch * Mp * Kp || b.size !== batch * Np * Kp || c.size !== batch * slices * Mp * Np) {
    throw new InputError('matmul',
      `batched sgmat ${label}: a [${a.shape.join(', ')}], b [${b.shape.join(', ')}], c [${c.shape.join(', ')}] ` +
      `do not hold ${batch} products of [${Mp}, ${Kp}] @ [${Np}, ${Kp}]^T in ${slices} K slices ` +
      `(Mp, Np multiples of ${PAD.M}, Kp of ${PAD.K})`);
  }
  KERNELS.staged.dispatch(a.gpu, {
    bindings: { a, b, c }, label,
    uniforms: { Kp, Np, Ks: PAD.K * Math.ceil(Kp / PAD.K / slices), slab: Mp * Np, nslice: slices,
      a_batch: (Mp * Kp) / 8, b_batch: (Np * Kp) / 8 },
    workgroups: [Np / PAD.N, Mp / PAD.M, batch * slices],
  });
}

/** One tensor-core product of a call: rows p0 .. p0 + N of the copy span at row r0 of chunk w, and its K slices. */
interface Part { w: Tensor; r0: number; rows: number; p0: number; N: number; Np: number; S: number; Ks: number }

/**
 * The products of x [M, K] @ chunks^T: each chunk in row spans whose f16 copy ([Np, Kp], Np padded to the tile)
 * fits one binding (one span but near the binding limit, where the padding can push a chunk the loader sized to
 * the limit past it; spans depend on the chunk's shape and the Gpu only, so a span's first row names its cached
 * copy), each cut where its product C ([Mp, Np] f32, one K slice) would not fit (long prefills against the vocabulary).
 */
function partsOf(chunks: readonly Tensor[], M: number, K: number, plan: SgmatPlan): Part[] {
  const Kp = padTo(K, PAD.K), Mp = padTo(M, PAD.M), tiling = SGMAT_KERNELS[plan.kernel];
  return chunks.flatMap((w) => rowSpans(w.gpu.maxBinding, w.shape[0], 2 * Kp, PAD.N,
    `the f16 copy of '${w.label}'`).flatMap(([r0, rows]) =>
    rowSpans(w.gpu.maxBinding, rows, 4 * Mp, PAD.N, `the product with x [${M}, ${K}]`).map(([p0, N]) => {
      const Np = padTo(N, PAD.N);
      return { w, r0, rows, p0, N, Np, ...splitFor(w.gpu, Mp, Np, Kp, tiling, plan.splitK) };
    })));
}

/** Whether path 'sgmat' runs x [M, K] @ chunks^T as more than one product per chunk (then swiglu is not fused). */
export function sgmatSplitsRows(chunks: readonly Tensor[], M: number, K: number, plan: SgmatPlan): boolean {
  return partsOf(chunks, M, K, plan).length > chunks.length;
}

/**
 * out[:, col0_i ..] (+)= bf16(x @ c_i^T) for bf16 weight chunks c_i [N_i, K] (consecutive output columns from 0);
 * x f32 [M, K], out f32 [M, ldo]; `swiglu` (one chunk [2I, K]): out [M, I] = siluMul of the product. `plan`: the
 * kernel and schedule (kernels/plan/matmul.ts, sgmatPlan). `transient`: the chunks were made for this call (a quantized
 * weight's dense copy): their f16 copies are not kept.
 */
export function dispatchSgmat(x: Tensor, chunks: readonly Tensor[], out: Tensor,
  u: { M: number; K: number; ldo: number },
  plan: SgmatPlan, f: { accumulate?: boolean; swiglu?: boolean; transient?: boolean } = {}): void {
  const gpu = x.gpu;
  const { M, K } = u;
  if (f.swiglu && (chunks.length !== 1 || f.accumulate)) throw new InputError('matmul',
    `path 'sgmat': swiglu is fused for a single weight tensor without accumulate (got ${chunks.length} chunks ` +
    `of x [${M}, ${K}]${f.accumulate ? ', accumulate' : ''})`);
  const Kp = padTo(K, PAD.K), Mp = padTo(M, PAD.M);
  const kernel = plan.kernel, tiling = SGMAT_KERNELS[kernel];
  const parts = partsOf(chunks, M, K, plan);
  if (f.swiglu && parts.length > 1) throw new InputError('matmul',
    `path 'sgmat': swiglu is fused for a weight taken in one product; '${chunks[0].label}' ` +
    `[${chunks[0].shape.join(', ')}] takes ${parts.length} at this binding limit`);
  const { flag } = sgmatState(gpu), epoch = nextEpoch(gpu);
  const sx = Tensor.empty(gpu, [Mp], 'i32', 'matmul.sgmat.x_scales'), xh = Tensor.empty(gpu, [Mp, Kp], 'f16',
    'matmul.sgmat.x16');
  // C holds the largest product's S slabs [S, Mp, Np].
  const c = Tensor.empty(gpu, [Math.max(...parts.map((q) => q.S * Mp * q.Np))], 'f32', 'matmul.sgmat.c');
  const temps = [sx, xh, c];
  toF16(x, xh, sx, flag, { rows: M, padded: Mp, K, Kp, epoch, bf16: false, label: 'matmul.sgmat.x_f16' });
  let col0 = 0;
  for (const { w, r0, rows, p0, N, Np, S, Ks } of parts) {
    const h = halfOf(w, r0, rows, Kp, { temps, epoch, transient: f.transient === true });
    const one = N === rows;   // the product is the whole copy span
    const wh = one ? h.wh : h.wh.rows(p0, Np), sw = one ? h.sw : h.sw.rows(p0, Np);
    const uniforms: Record<string, number> = kernel === 'staged' ? { Kp, Np, Ks, slab: Mp * Np, nslice: S, a_batch: 0,
      b_batch: 0 } : { Kp, Np, Ks, slab: Mp * Np };
    KERNELS[kernel].dispatch(gpu, {
      bindings: { a: xh, b: wh, c }, uniforms, label: `matmul.sgmat_${kernel}`,
      overrides: kernel === 'direct' ? { PIPE: plan.pipe ? 1 : 0 } : {}, workgroups: [Np / tiling.N, Mp / tiling.M, S],
    });
    OUT.dispatch(gpu, {
      bindings: { c, sx, sw, flag, wflag: h.bad, x, w: N === w.shape[0] ? w : w.rows(r0 + p0, N),
        out }, label: 'matmul.sgmat.out',
      uniforms: { rows: M, rows_pad: Mp, K, Kp, N, ldo: u.ldo, col0, Np, epoch, S },
      overrides: { ROUND: 1, ACC: f.accumulate ? 1 : 0, SWIGLU: f.swiglu ? 1 : 0 }, workgroups: grid(gpu,
        M * (f.swiglu ? N / 2 : N), 256),
    });
    col0 += N;
  }
  // Recorded dispatches keep reading them in order; the pool may hand them out again.
  for (const t of temps) t.dispose();
}
