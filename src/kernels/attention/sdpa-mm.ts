// Prefill attention as two batched matmuls (sdpa_mm.wgsl): on a GPU, sdpa_prefill's loop over keys per query block
// ran at under 1 TFLOP/s (2.2 ms a layer at 512 tokens on an H200, most of a prefill), while the tiled matmul
// runs at ~15. sdpa() takes this path for prefill where it fits (sdpaMmFits) and keeps sdpa_prefill as the
// reference and the path of CPU drivers; the results agree up to f32 summation order.
// In bf16 mode on a device with tensor cores (subgroup matrices and the staged kernel) the two products run there
// instead (sdpa_mm_f16.wgsl gives the numerics) where the Gpu's planner says so (kernels/plan/attention.ts; the option
// DeviceOptions.kernels.attentionTensorCores: false keeps the f32 products: reference, benchmarks).
import { Kernel, grid, padTo } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { halfUlp } from '../../tensor/dtype.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { stateKey } from '../../gpu/registry.ts';
import { placeholder } from '../common/placeholder.ts';
import { batchedMatmul } from '../matmul/matmul.ts';
import { batchedSgmat } from '../matmul/matmul-sgmat.ts';
import { batchedSgmatUnavailable } from '../matmul/sgmat-caps.ts';
import { sgmatCallFlag } from '../matmul/sgmat-weights.ts';
import { SGMAT_KERNELS } from '../matmul/sgmat-schedule.ts';
import { MASK_CODE, ROUND_CODE, type Round } from '../common/codes.ts';
import type { AttnMask } from './types.ts';

const KV = new Kernel('attention/sdpa_mm.wgsl', 'kv_f32');
const SOFTMAX = new Kernel('attention/sdpa_mm.wgsl', 'softmax_rows');
const FINISH = new Kernel('attention/sdpa_mm.wgsl', 'finish');
const QKV_F16 = new Kernel('attention/sdpa_mm_f16.wgsl', 'qkv_f16');
const SOFTMAX_F16 = new Kernel('attention/sdpa_mm_f16.wgsl', 'softmax_f16');
const FINISH_F16 = new Kernel('attention/sdpa_mm_f16.wgsl', 'finish_f16');

/** Largest score matrix (all heads, f32) this path allocates; longer prompts take sdpa_prefill. */
const MAX_SCORE_BYTES = 256 * 2 ** 20;
/** Keys are padded to this multiple (the matmul tiles'). */
const PAD = 64;
/**
 * qkv_f16's workgroups (sdpa_mm_f16.wgsl): RPW rows of q and K, or VD dims of V; a row of at most MAX_DK
 * (LANES * EPT).
 */
const QKV = { RPW: 8, VD: 8, MAX_DK: 256 };

export interface SdpaMmArgs {
  heads: number; seq: number; dim: number; kvLen: number; offset: number; scale: number;
  kvBf16: boolean; mask: AttnMask; maskBuf: Tensor; gate: Tensor; gateStride: number;
  store: { ROUND: number; GATE: number };
  /** The products on the tensor cores (sdpaMmF16), as the planner decided (tensorCoresFit and the device's verdict). */
  tensorCores: boolean;
}

/** Whether the score matrix of this call fits the path's budget and one binding. */
export function sdpaMmFits(gpu: { maxBinding: number }, heads: number, seq: number, kvLen: number): boolean {
  const bytes = heads * seq * padTo(kvLen, PAD) * 4;
  return bytes <= Math.min(MAX_SCORE_BYTES, gpu.maxBinding);
}

/** Devices whose tensor-core attention failed its self-check, and why. */
const SELF_CHECK = stateKey<string>('sdpa_mm.selfCheck');

/** Why bf16 prefill attention cannot take the tensor cores on this device, or null. */
export function attentionTensorCoresUnavailable(gpu: Gpu): string | null {
  return gpu.cpu ? 'a CPU driver' : batchedSgmatUnavailable(gpu) ?? gpu.state.peek(SELF_CHECK) ?? null;
}

type CallShape = { heads: number; seq: number; dim: number; kvLen: number; kvBf16: boolean; round?: Round };

/**
 * Whether the tensor-core products take this call (on a device that can: attentionTensorCoresUnavailable): bf16
 * rounding of a packed bf16 cache, with its padded scores [H, Sp, kvp] in one binding and head dims qkv_f16 takes.
 */
export function tensorCoresFit(gpu: Gpu, a: CallShape): boolean {
  const T = SGMAT_KERNELS.staged;
  const bytes = a.heads * padTo(a.seq, T.M) * padTo(a.kvLen, T.N) * 4;
  return a.kvBf16 && a.round === 'bf16' && bytes <= gpu.maxBinding && padTo(a.dim, T.kStep) <= QKV.MAX_DK;
}

/**
 * Before a device is used (plan/prepare.ts runs it, after the tensor-core matmul's own check): one causal call of 2
 * heads x 33 queries
 * (head dim 64) on bf16 data must agree with the f32 products within 1 bf16 ulp + 2^-20 (the criterion of
 * testkit/kernels/sdpa-sgmat.check.ts); otherwise the f32 products stay the path on this device, with the reason.
 */
export async function selfCheckAttentionTensorCores(gpu: Gpu): Promise<void> {
  if (attentionTensorCoresUnavailable(gpu) !== null) return;
  const H = 2, S = 33, D = 64;
  const bf = (n: number, a: number, b: number) => Float32Array.from({ length: n },
    (_, i) => ((i * a) % b - (b >> 1)) / 16);
  const q = Tensor.from(gpu, bf(H * S * D, 7, 23), [H, S, D], 'f32', 'attention.check.q');
  const k = Tensor.from(gpu, bf(H * S * D, 5, 19), [H, S, D], 'bf16', 'attention.check.k');
  const v = Tensor.from(gpu, bf(H * S * D, 3, 17), [H, S, D], 'bf16', 'attention.check.v');
  const outs = [0, 1].map(() => Tensor.empty(gpu, [S, H * D], 'f32', 'attention.check.out'));
  const mask: AttnMask = { kind: 'causal' };
  const maskBuf = placeholder(gpu, 'no_mask', 'u32');
  const args: SdpaMmArgs = {
    heads: H, seq: S, dim: D, kvLen: S, offset: 0, scale: 0.125, kvBf16: true, mask, maskBuf,
    gate: placeholder(gpu, 'no_gate', 'f32'), gateStride: 0, store: { ROUND: ROUND_CODE.bf16, GATE: 0 },
    tensorCores: false,
  };
  try {
    sdpaMm(q, k, v, outs[0], args);
    sdpaMmF16(q, k, v, outs[1], args);
    const [want, got] = [await outs[0].read(), await outs[1].read()];
    const bad = want.findIndex((w, i) => !(Math.abs(got[i] - w) <= halfUlp(w, 'bf16') + 2 ** -20));
    if (bad >= 0) gpu.state.set(SELF_CHECK,
      `failed its self-check on this device (output ${bad}: ${got[bad]} against the f32 path's ${want[bad]})`);
  } catch (e) {
    gpu.state.set(SELF_CHECK, `failed its self-check on this device (${e instanceof Error ? e.message : String(e)})`);
  } finally {
    for (const t of [q, k, v, ...outs]) t.dispose();
  }
}

/** out [S, H*D] = gated(r(softmax(scale * q K^T + mask) V)) for q [H, S, D] and cache sides kd, vd [H, cap, D]. */
export function sdpaMm(q: Tensor, kd: Tensor, vd: Tensor, out: Tensor, a: SdpaMmArgs): void {
  if (a.tensorCores) return sdpaMmF16(q, kd, vd, out, a);
  const gpu = q.gpu;
  const { heads: H, seq: S, dim: D, kvLen } = a;
  const kvp = padTo(kvLen, PAD);
  const kc = Tensor.empty(gpu, [H, kvp, D], 'f32', 'sdpa_mm.k');
  const vc = Tensor.empty(gpu, [H, kvp, D], 'f32', 'sdpa_mm.v');
  const s = Tensor.empty(gpu, [H, S, kvp], 'f32', 'sdpa_mm.s');
  const l = Tensor.empty(gpu, [H, S], 'f32', 'sdpa_mm.l');
  const uniforms = { seq: S, heads: H, kv_len: kvLen, kvp, cap: kd.shape[1], offset: a.offset, scale: a.scale,
    gate_stride: a.gateStride, hd: D };
  const overrides = { KV_BF16: a.kvBf16 ? 1 : 0, MASK: MASK_CODE[a.mask.kind], ...a.store };
  KV.dispatch(gpu,
    { bindings: { k: kd, v: vd, kc, vc }, uniforms, overrides, workgroups: grid(gpu, H * kvp * D, 256) });
  batchedMatmul(q, kc, s, { batch: H, M: S, N: kvp, K: D, layout: 'rows' });
  SOFTMAX.dispatch(gpu, { bindings: { s, l, mask: a.maskBuf }, uniforms, overrides, workgroups: [S, H] });
  batchedMatmul(s, vc, out, { batch: H, M: S, N: D, K: kvp, layout: 'cols', transposed: true });
  FINISH.dispatch(gpu,
    { bindings: { l, out, gate: a.gate }, uniforms, overrides, workgroups: grid(gpu, S * H * D, 256) });
  // Recorded dispatches keep reading them in order; the pool may hand them out again.
  for (const t of [kc, vc, s, l]) t.dispose();
}

/** Batched f16 products in K slices, as batchedSgmat computes them (tests stand in for it without tensor cores). */
export type F16Product = typeof batchedSgmat;

/**
 * sdpaMm's products on the tensor cores (sdpa_mm_f16.wgsl): the same five dispatches, f16 operands. `product`
 * stands in for the tensor cores in tests on devices without them.
 */
export function sdpaMmF16(q: Tensor, kd: Tensor, vd: Tensor, out: Tensor, a: SdpaMmArgs,
  product: F16Product = batchedSgmat): void {
  const gpu = q.gpu;
  const { heads: H, seq: S, dim: D, kvLen } = a;
  // Padded to the staged kernel's tiles: queries (M), keys and head dims (N), head dims as K (its block).
  const T = SGMAT_KERNELS.staged;
  const sp = padTo(S, T.M), kvp = padTo(kvLen, T.N), dk = padTo(D, T.kStep), dn = padTo(D, T.N);
  const qh = Tensor.empty(gpu, [H, sp, dk], 'f16', 'sdpa_mm.q16');
  const kh = Tensor.empty(gpu, [H, kvp, dk], 'f16', 'sdpa_mm.k16');
  const vt = Tensor.empty(gpu, [H, dn, 2 * kvp], 'f16', 'sdpa_mm.vt16');
  const s = Tensor.empty(gpu, [H, sp, kvp], 'f32', 'sdpa_mm.s');
  const ph = Tensor.empty(gpu, [H, sp, 2 * kvp], 'f16', 'sdpa_mm.p16');
  const l = Tensor.empty(gpu, [H, sp], 'f32', 'sdpa_mm.l');
  // P V has few output tiles (a head's are Sp / 128 x Dn / 128) and a long K (2 kvp): split K so that its
  // workgroups fill the GPU (~264 staged workgroups on an H200), at least 2 blocks of 64 a slice.
  const nsl = Math.max(1,
    Math.min(8, Math.ceil(264 / (H * (sp / T.M) * (dn / T.N))), Math.floor((2 * kvp) / (2 * T.kStep))));
  const o = Tensor.empty(gpu, [H, nsl, sp, dn], 'f32', 'sdpa_mm.o');
  const ex = Tensor.empty(gpu, [H * (sp + kvp + dn)], 'i32', 'sdpa_mm.row_scales');
  const qkvGroups = Math.ceil((H * (sp + kvp)) / QKV.RPW) + (H * dn) / QKV.VD;
  const { flag, epoch } = sgmatCallFlag(gpu);
  const uniforms = { seq: S, heads: H, kv_len: kvLen, kvp, cap: kd.shape[1], offset: a.offset, scale: a.scale,
    gate_stride: a.gateStride, hd: D, sp, dk, dn, epoch, nsl };
  const overrides = { KV_BF16: 1, MASK: MASK_CODE[a.mask.kind], ...a.store };
  QKV_F16.dispatch(gpu,
    { bindings: { q, k: kd, v: vd, qh, kh, vt, flag, ex }, uniforms, overrides, workgroups: grid(gpu, qkvGroups, 1) });
  product(qh, kh, s, { batch: H, Mp: sp, Np: kvp, Kp: dk, slices: 1 }, 'sdpa_mm.qk_sgmat');
  SOFTMAX_F16.dispatch(gpu,
    { bindings: { q, k: kd, flag, s, ph, l, mask: a.maskBuf, ex }, uniforms, overrides, workgroups: [S, H] });
  product(ph, vt, o, { batch: H, Mp: sp, Np: dn, Kp: 2 * kvp, slices: nsl }, 'sdpa_mm.pv_sgmat');
  FINISH_F16.dispatch(gpu,
    { bindings: { v: vd, flag, s, l, o, out, gate: a.gate, ex }, uniforms, overrides,
    workgroups: grid(gpu, S * H * D, 256) });
  // Recorded dispatches keep reading them in order; the pool may hand them out again.
  for (const t of [qh, kh, vt, s, ph, l, o, ex]) t.dispose();
}
