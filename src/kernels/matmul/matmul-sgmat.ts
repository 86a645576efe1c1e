// Prefill matmul on subgroup matrices (tensor cores) for bf16 mode: x @ W^T over f32 activations holding bf16
// values and bf16 weights, f32 accumulation of exact f16 products, one rounding to bf16. Per call:
//   1. to_f16 (sgmat_prep.wgsl): x's rows as f16, each scaled by a power of two that fits it into f16's range;
//   2. per weight chunk (in row spans where one would pass a binding): its f16 copy (made the same way at its
//      first use and kept with it; made per call for a quantized weight's dense copy), the tensor-core
//      product C = x16 @ w16^T (matmul_sgmat_staged.wgsl where the device can run it, else matmul_sgmat.wgsl; the
//      schedule in sgmat-schedule.ts, planned per Gpu by kernels/plan/matmul.ts),
//      then sgmat_out: C unscaled, rounded, added to the residual or through SwiGLU.
// Values the f16 path cannot hold exactly (an x that is not bf16, inf, NaN) flag the call (or the weight), and
// sgmat_out then computes those outputs with f32 FMAs: same numbers, slower. sgmat_prep.wgsl gives the error bound of the rest.
// matmul() routes here for path 'sgmat'; this file says whether the adapter can and dispatches.
import { Kernel, grid, padTo } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { stateKey } from '../../gpu/registry.ts';
import { DTypeError, FeatureError, InputError } from '../../errors.ts';
import type { Round } from '../common/codes.ts';
import { roundBf16 } from '../../tensor/dtype.ts';
import { DEFAULT_SCHEDULE, SGMAT_KERNELS, rowSpans, splitFor, type SgmatKernel, type SgmatPlan } from './sgmat-schedule.ts';

const TO_F16 = new Kernel('matmul/sgmat_prep.wgsl', 'to_f16');
const OUT = new Kernel('matmul/sgmat_prep.wgsl', 'sgmat_out');
const KERNELS: Record<SgmatKernel, Kernel> = {
  staged: new Kernel('matmul/matmul_sgmat_staged.wgsl', 'matmul_sgmat_staged'),
  direct: new Kernel('matmul/matmul_sgmat.wgsl', 'matmul_sgmat'),
};
/** Rows and columns are padded to the staged kernel's tile, K to its block (the direct kernel's divide them): either kernel takes any operand. */
const PAD = { M: SGMAT_KERNELS.staged.M, N: SGMAT_KERNELS.staged.N, K: SGMAT_KERNELS.staged.kStep };
/** The staged kernel's workgroup memory: its A and B tiles, M and N rows of f16 each, rows padded by 8 (LD = kStep + 8). */
const STAGED_SHARED = (SGMAT_KERNELS.staged.M + SGMAT_KERNELS.staged.N) * (SGMAT_KERNELS.staged.kStep + 8) * 2;
/** The subgroup-matrix shape the kernel is written for (f16 inputs, f32 result) and its subgroup size. */
export const SGMAT_CONFIG = { M: 16, N: 16, K: 16, subgroup: 32 };
const FEATURE = 'chromium-experimental-subgroup-matrix';
/** Below this many x rows the f16 copies of the weights cost more than the tensor cores save. */
export const SGMAT_MIN_ROWS = 128;

/** Why this adapter cannot run the kernel (a feature missing, a failed self-check), or null when it can. */
export function sgmatUnavailable(gpu: Gpu): string | null {
  return featureMissing(gpu) ?? gpu.state.peek(SELF_CHECK) ?? null;
}

/** The self-check's verdict per device: null passed, else why not (never checked: no entry). */
const SELF_CHECK = stateKey<string | null>('matmul_sgmat.selfCheck');
/** The staged kernel's own verdict where it failed the self-check and the direct kernel passed it. */
const STAGED_CHECK = stateKey<string>('matmul_sgmat.stagedCheck');

/** Why the staged kernel cannot run here (it takes the subgroup id and 36 KiB of workgroup memory), or null. */
export function stagedUnavailable(gpu: Gpu): string | null {
  if (!gpu.subgroups) return `no subgroups: ${gpu.summary.fastFeatures.subgroups.why}`;
  const have = gpu.device.limits.maxComputeWorkgroupStorageSize;
  if (have < STAGED_SHARED) return `${have} bytes of workgroup memory, ${STAGED_SHARED} needed`;
  return gpu.state.peek(STAGED_CHECK) ?? null;
}

/**
 * Before a device is used (plan/prepare.ts runs it): one product of exact data (small multiples of 1/128, every sum exact in f32) on odd
 * sizes through the tensor cores (K split in 2: 320 padded columns in slices of 192 and 128 for the staged kernel,
 * 160 and 160 for the direct one) must equal the float64 result rounded to bf16 bit for bit and take no fallback.
 * The staged kernel is checked first where it can run; if it fails, the direct kernel is checked and takes the
 * path alone (stagedUnavailable says why). If that fails too, the path is off on this device, with the reason in
 * sgmatUnavailable (a driver that gets subgroup matrices wrong).
 */
export async function selfCheckSgmat(gpu: Gpu): Promise<void> {
  if (featureMissing(gpu) !== null) return;
  if (stagedUnavailable(gpu) === null) {
    const why = await checkProduct(gpu, { ...DEFAULT_SCHEDULE, kernel: 'staged' });
    if (why === null) {
      gpu.state.set(SELF_CHECK, null);
      return;
    }
    gpu.state.set(STAGED_CHECK, `the staged kernel ${why}`);
  }
  gpu.state.set(SELF_CHECK, await checkProduct(gpu, { ...DEFAULT_SCHEDULE, kernel: 'direct' }));
}

/** The self-check's product under `schedule`: null when exact, else what went wrong. */
async function checkProduct(gpu: Gpu, schedule: SgmatPlan): Promise<string | null> {
  const M = 130, N = 70, K = 260;
  const xv = Float32Array.from({ length: M * K }, (_, i) => ((i * 7) % 13 - 6) / 8);
  const wv = Float32Array.from({ length: N * K }, (_, i) => ((i * 5) % 11 - 5) / 16);
  const x = Tensor.from(gpu, xv, [M, K], 'f32', 'sgmat.check.x');
  const w = Tensor.from(gpu, wv, [N, K], 'bf16', 'sgmat.check.w');
  const out = Tensor.empty(gpu, [M, N], 'f32', 'sgmat.check.out');
  const before = (await sgmatStats(gpu).read())[0];
  try {
    dispatchSgmat(x, [w], out, { M, K, ldo: N }, schedule);
    const got = await out.read();
    const fell = (await sgmatStats(gpu).read())[0] - before;
    let bad = 0, at = -1;
    for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += xv[m * K + k] * wv[n * K + k];
      if (got[m * N + n] !== roundBf16(s)) { bad++; if (at < 0) at = m * N + n; }
    }
    return bad || fell ? `failed its self-check on this device (${bad} of ${M * N} outputs wrong, first at ${at}: ${got[at]}; ${fell} fallback rows)` : null;
  } catch (e) {
    return `failed its self-check on this device (${e instanceof Error ? e.message : String(e)})`;
  } finally {
    for (const t of [x, w, out]) t.dispose();
  }
}

/** The features the kernel runs on, each absent one with the summary's reason (what unlocks it, or an option). */
function featureMissing(gpu: Gpu): string | null {
  const s = gpu.summary;
  if (!gpu.device.features.has(FEATURE)) return `no ${FEATURE}: ${s.fastFeatures[FEATURE].why}`;
  if (!gpu.f16) return `no shader-f16: ${s.fastFeatures['shader-f16'].why}`;
  const want = `f16>f32 ${SGMAT_CONFIG.M}x${SGMAT_CONFIG.N}x${SGMAT_CONFIG.K}`;
  if (!s.subgroupMatrix.includes(want)) return `no ${want} subgroup-matrix configuration (adapter has: ${s.subgroupMatrix.join(', ') || 'none'})`;
  if (s.subgroupSizes[0] !== SGMAT_CONFIG.subgroup || s.subgroupSizes[1] !== SGMAT_CONFIG.subgroup) {
    return `subgroup size ${s.subgroupSizes.join('-')}; the kernel lays out its tiles for exactly ${SGMAT_CONFIG.subgroup}`;
  }
  return null;
}

/** Throws unless path 'sgmat' can serve x @ w^T with this rounding. */
export function requireSgmat(x: Tensor, w: Tensor, round?: Round): void {
  const what = `x '${x.label}' [${x.shape.join(', ')}] @ weight '${w.label}' [${w.shape.join(', ')}] ${w.dtype}`;
  const why = sgmatUnavailable(x.gpu);
  if (why !== null) throw new FeatureError('matmul', `path 'sgmat' for ${what}: this adapter cannot run it: ${why}`);
  if (round !== 'bf16' || w.dtype !== 'bf16') throw new DTypeError('matmul', `path 'sgmat' needs round 'bf16' and bf16 weights (${what}, round '${round ?? 'none'}')`);
}

/**
 * Per device: stats[0] counts the rows (of x or of a weight chunk) holding a value the f16 path cannot take, over
 * every call (wrapping at 2^32; tests read it); flag[0] holds the epoch of the last call that had one. Each call
 * takes a new epoch, so the flag is never cleared: clearing it needs a dispatch or a buffer write, and a write
 * into an open batch splits its pass.
 */
const STATS = stateKey<SgmatState>('matmul_sgmat.stats');
/** `clear`: a flag that stays 0, the weight flag of copies made for one call (their values flag the call's own). */
interface SgmatState { stats: Tensor; flag: Tensor; clear: Tensor; epoch: number }

function sgmatState(gpu: Gpu): SgmatState {
  return gpu.state.get(STATS, () => ({
    stats: Tensor.from(gpu, new Uint32Array(4), [4], 'u32', 'matmul.sgmat.stats'),
    flag: Tensor.from(gpu, new Uint32Array(1), [1], 'u32', 'matmul.sgmat.flag'),
    clear: Tensor.from(gpu, new Uint32Array(1), [1], 'u32', 'matmul.sgmat.clear'),
    epoch: 0,
  }));
}

/**
 * The per-device flag of calls with values the f16 path cannot take, and a new epoch for one call (see sgmatState):
 * prefill attention's tensor-core path (attention/sdpa-mm.ts) flags its operands the same way.
 */
export function sgmatCallFlag(gpu: Gpu): { flag: Tensor; epoch: number } {
  return { flag: sgmatState(gpu).flag, epoch: nextEpoch(gpu) };
}

/**
 * c [B, S, Mp, Np] = a [B, Mp, Kp] @ b [B, Np, Kp]^T per batch, in S = `slices` K slices (their sums are the
 * caller's to add, in slice order), f16 operands, f32 sums of exact products, on the staged kernel: Mp and Np
 * multiples of 128, Kp of 64. The caller checks batchedSgmatUnavailable.
 */
export function batchedSgmat(a: Tensor, b: Tensor, c: Tensor, u: { batch: number; Mp: number; Np: number; Kp: number; slices: number }, label: string): void {
  const { batch, Mp, Np, Kp, slices } = u;
  if (Mp % PAD.M || Np % PAD.N || Kp % PAD.K || !(Number.isInteger(slices) && slices >= 1) || a.size !== batch * Mp * Kp || b.size !== batch * Np * Kp || c.size !== batch * slices * Mp * Np) {
    throw new InputError('matmul', `batched sgmat ${label}: a [${a.shape.join(', ')}], b [${b.shape.join(', ')}], c [${c.shape.join(', ')}] do not hold ${batch} products of [${Mp}, ${Kp}] @ [${Np}, ${Kp}]^T in ${slices} K slices (Mp, Np multiples of ${PAD.M}, Kp of ${PAD.K})`);
  }
  KERNELS.staged.dispatch(a.gpu, {
    bindings: { a, b, c }, label,
    uniforms: { Kp, Np, Ks: PAD.K * Math.ceil(Kp / PAD.K / slices), slab: Mp * Np, nslice: slices, a_batch: (Mp * Kp) / 8, b_batch: (Np * Kp) / 8 },
    workgroups: [Np / PAD.N, Mp / PAD.M, batch * slices],
  });
}

/** Why batchedSgmat cannot run on this device (no tensor cores, or no staged kernel), or null. */
export function batchedSgmatUnavailable(gpu: Gpu): string | null {
  return sgmatUnavailable(gpu) ?? stagedUnavailable(gpu);
}

function nextEpoch(gpu: Gpu): number {
  const s = sgmatState(gpu);
  return (s.epoch = s.epoch >= 0xffffffff ? 1 : s.epoch + 1);
}

/** The device's stats tensor (see sgmatState): tests zero-difference it around a call. */
export function sgmatStats(gpu: Gpu): Tensor {
  return sgmatState(gpu).stats;
}

/** A weight's rows as to_f16 writes them (f16 [Np, Kp], exponents [Np]) and its flag (1: the f16 path cannot take it). */
interface HalfWeight { wh: Tensor; sw: Tensor; bad: Tensor }

/**
 * The f16 copy of each weight tensor the tensor cores have read, kept with it (attached: disposed when it is), by
 * the first row of each span that fits one binding (partsOf): a prefill would otherwise convert every weight
 * again in every layer call (a quarter of the matmul's dispatches). It costs the weight's size again in GPU memory,
 * on adapters that take this path only. Views of a buffer are converted per call instead.
 */
const HALVES = stateKey<WeakMap<Tensor, Map<number, HalfWeight>>>('matmul_sgmat.halves');
const halves = (gpu: Gpu) => gpu.state.get(HALVES, () => new WeakMap<Tensor, Map<number, HalfWeight>>());

function toF16(src: Tensor, dst: Tensor, scale: Tensor, flag: Tensor, u: { rows: number; padded: number; K: number; Kp: number; epoch: number; bf16: boolean; label: string }): void {
  const gpu = src.gpu;
  TO_F16.dispatch(gpu, {
    bindings: { src, dst, scale, flag, stats: sgmatState(gpu).stats }, label: u.label,
    uniforms: { rows: u.rows, rows_pad: u.padded, K: u.K, Kp: u.Kp, N: 0, ldo: 0, col0: 0, Np: 0, epoch: u.epoch, S: 0 },
    overrides: { SRC_BF16: u.bf16 ? 1 : 0 }, workgroups: grid(gpu, u.padded, 1),
  });
}

/**
 * Rows r0 .. r0 + rows of w as f16: the cached copy, or one made for this call (a view, or `transient` weights the
 * caller made for it), freed by `temps`. A call's own copy flags values the f16 path cannot take in the call's
 * flag: a flag of its own would need a buffer write per call, and a write into an open batch splits its pass and
 * stages through a new buffer (quantized prefill spent ~0.35 ms a product so, 20261205-014634Z).
 */
function halfOf(w: Tensor, r0: number, rows: number, Kp: number, call: { temps: Tensor[]; epoch: number; transient: boolean }): HalfWeight {
  const keep = w.ownsBuffer && !call.transient;
  const cached = keep ? halves(w.gpu).get(w)?.get(r0) : undefined;
  if (cached) return cached;
  const gpu = w.gpu, s = sgmatState(gpu);
  const K = w.shape[1], Np = padTo(rows, PAD.N);
  const whole = rows === w.shape[0];
  const label = whole ? w.label : `${w.label}[${r0}:${r0 + rows}]`;
  const h: HalfWeight = {
    wh: Tensor.empty(gpu, [Np, Kp], 'f16', `${label}.f16`), sw: Tensor.empty(gpu, [Np], 'i32', `${label}.f16_scales`),
    bad: keep ? Tensor.from(gpu, new Uint32Array(1), [1], 'u32', `${label}.f16_flag`) : s.clear,
  };
  const src = whole ? w : w.rows(r0, rows);
  const u = { rows, padded: Np, K, Kp, bf16: true, label: 'matmul.sgmat.w_f16' };
  if (keep) {
    toF16(src, h.wh, h.sw, h.bad, { ...u, epoch: 1 });
    for (const t of [h.wh, h.sw, h.bad]) w.attach(t);
    halves(gpu).set(w, (halves(gpu).get(w) ?? new Map()).set(r0, h));
  } else {
    toF16(src, h.wh, h.sw, s.flag, { ...u, epoch: call.epoch });
    call.temps.push(h.wh, h.sw);
  }
  return h;
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
  return chunks.flatMap((w) => rowSpans(w.gpu.maxBinding, w.shape[0], 2 * Kp, PAD.N, `the f16 copy of '${w.label}'`).flatMap(([r0, rows]) =>
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
export function dispatchSgmat(x: Tensor, chunks: readonly Tensor[], out: Tensor, u: { M: number; K: number; ldo: number },
  plan: SgmatPlan, f: { accumulate?: boolean; swiglu?: boolean; transient?: boolean } = {}): void {
  const gpu = x.gpu;
  const { M, K } = u;
  if (f.swiglu && (chunks.length !== 1 || f.accumulate)) throw new InputError('matmul', `path 'sgmat': swiglu is fused for a single weight tensor without accumulate (got ${chunks.length} chunks of x [${M}, ${K}]${f.accumulate ? ', accumulate' : ''})`);
  const Kp = padTo(K, PAD.K), Mp = padTo(M, PAD.M);
  const kernel = plan.kernel, tiling = SGMAT_KERNELS[kernel];
  const parts = partsOf(chunks, M, K, plan);
  if (f.swiglu && parts.length > 1) throw new InputError('matmul', `path 'sgmat': swiglu is fused for a weight taken in one product; '${chunks[0].label}' [${chunks[0].shape.join(', ')}] takes ${parts.length} at this binding limit`);
  const { flag } = sgmatState(gpu), epoch = nextEpoch(gpu);
  const sx = Tensor.empty(gpu, [Mp], 'i32', 'matmul.sgmat.x_scales'), xh = Tensor.empty(gpu, [Mp, Kp], 'f16', 'matmul.sgmat.x16');
  // C holds the largest product's S slabs [S, Mp, Np].
  const c = Tensor.empty(gpu, [Math.max(...parts.map((q) => q.S * Mp * q.Np))], 'f32', 'matmul.sgmat.c');
  const temps = [sx, xh, c];
  toF16(x, xh, sx, flag, { rows: M, padded: Mp, K, Kp, epoch, bf16: false, label: 'matmul.sgmat.x_f16' });
  let col0 = 0;
  for (const { w, r0, rows, p0, N, Np, S, Ks } of parts) {
    const h = halfOf(w, r0, rows, Kp, { temps, epoch, transient: f.transient === true });
    const one = N === rows;   // the product is the whole copy span
    const wh = one ? h.wh : h.wh.rows(p0, Np), sw = one ? h.sw : h.sw.rows(p0, Np);
    const uniforms: Record<string, number> = kernel === 'staged' ? { Kp, Np, Ks, slab: Mp * Np, nslice: S, a_batch: 0, b_batch: 0 } : { Kp, Np, Ks, slab: Mp * Np };
    KERNELS[kernel].dispatch(gpu, {
      bindings: { a: xh, b: wh, c }, uniforms, label: `matmul.sgmat_${kernel}`,
      overrides: kernel === 'direct' ? { PIPE: plan.pipe ? 1 : 0 } : {}, workgroups: [Np / tiling.N, Mp / tiling.M, S],
    });
    OUT.dispatch(gpu, {
      bindings: { c, sx, sw, flag, wflag: h.bad, x, w: N === w.shape[0] ? w : w.rows(r0 + p0, N), out }, label: 'matmul.sgmat.out',
      uniforms: { rows: M, rows_pad: Mp, K, Kp, N, ldo: u.ldo, col0, Np, epoch, S },
      overrides: { ROUND: 1, ACC: f.accumulate ? 1 : 0, SWIGLU: f.swiglu ? 1 : 0 }, workgroups: grid(gpu, M * (f.swiglu ? N / 2 : N), 256),
    });
    col0 += N;
  }
  // Recorded dispatches keep reading them in order; the pool may hand them out again.
  for (const t of temps) t.dispose();
}
