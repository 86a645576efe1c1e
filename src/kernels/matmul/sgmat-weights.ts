// The tensor-core matmul's f16 operands: the f16 copy of each weight it reads, kept with the weight in the device's
// state, the per-call copies of views and transient weights, and the per-device flag and stats of values the f16
// path cannot take (matmul-sgmat.ts dispatches the products; attention/sdpa-mm.ts shares the flag).
import { grid, Kernel, padTo } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { stateKey } from '../../gpu/registry.ts';
import { PAD } from './sgmat-caps.ts';

const TO_F16 = new Kernel('matmul/sgmat_prep.wgsl', 'to_f16');

/**
 * Per device: stats[0] counts the rows (of x or of a weight chunk) holding a value the f16 path cannot take, over
 * every call (wrapping at 2^32; tests read it); flag[0] holds the epoch of the last call that had one. Each call
 * takes a new epoch, so the flag is never cleared: clearing it needs a dispatch or a buffer write, and a write
 * into an open batch splits its pass.
 */
const STATS = stateKey<SgmatState>('matmul_sgmat.stats');
/** `clear`: a flag that stays 0, the weight flag of copies made for one call (their values flag the call's own). */
interface SgmatState { stats: Tensor; flag: Tensor; clear: Tensor; epoch: number }

export function sgmatState(gpu: Gpu): SgmatState {
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

export function nextEpoch(gpu: Gpu): number {
  const s = sgmatState(gpu);
  return (s.epoch = s.epoch >= 0xffffffff ? 1 : s.epoch + 1);
}

/** The device's stats tensor (see sgmatState): tests zero-difference it around a call. */
export function sgmatStats(gpu: Gpu): Tensor {
  return sgmatState(gpu).stats;
}

/**
 * A weight's rows as to_f16 writes them (f16 [Np, Kp], exponents [Np]) and its flag (1: the f16 path cannot take
 * it).
 */
export interface HalfWeight { wh: Tensor; sw: Tensor; bad: Tensor }

/**
 * The f16 copy of each weight tensor the tensor cores have read, kept with it (attached: disposed when it is), by
 * the first row of each span that fits one binding (partsOf): a prefill would otherwise convert every weight
 * again in every layer call (a quarter of the matmul's dispatches). It costs the weight's size again in GPU memory,
 * on adapters that take this path only. Views of a buffer are converted per call instead.
 */
const HALVES = stateKey<WeakMap<Tensor, Map<number, HalfWeight>>>('matmul_sgmat.halves');
const halves = (gpu: Gpu) => gpu.state.get(HALVES, () => new WeakMap<Tensor, Map<number, HalfWeight>>());

export function toF16(src: Tensor, dst: Tensor, scale: Tensor, flag: Tensor,
  u: { rows: number; padded: number; K: number; Kp: number; epoch: number; bf16: boolean; label: string }): void {
  const gpu = src.gpu;
  TO_F16.dispatch(gpu, {
    bindings: { src, dst, scale, flag, stats: sgmatState(gpu).stats }, label: u.label,
    uniforms: { rows: u.rows, rows_pad: u.padded, K: u.K, Kp: u.Kp, N: 0, ldo: 0, col0: 0, Np: 0,
      epoch: u.epoch, S: 0 },
    overrides: { SRC_BF16: u.bf16 ? 1 : 0 }, workgroups: grid(gpu, u.padded, 1),
  });
}

/**
 * Rows r0 .. r0 + rows of w as f16: the cached copy, or one made for this call (a view, or `transient` weights the
 * caller made for it), freed by `temps`. A call's own copy flags values the f16 path cannot take in the call's
 * flag: a flag of its own would need a buffer write per call, and a write into an open batch splits its pass and
 * stages through a new buffer (quantized prefill spent ~0.35 ms a product so, 20261205-014634Z).
 */
export function halfOf(w: Tensor, r0: number, rows: number, Kp: number,
  call: { temps: Tensor[]; epoch: number; transient: boolean }): HalfWeight {
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
