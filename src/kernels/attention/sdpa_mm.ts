// Prefill attention as two batched matmuls (sdpa_mm.wgsl): on a GPU, sdpa_prefill's loop over keys per query block
// ran at under 1 TFLOP/s (2.2 ms a layer at 512 tokens on an H200, most of a prefill), while the tiled matmul
// runs at ~15. sdpa() takes this path for prefill where it fits (sdpaMmFits) and keeps sdpa_prefill as the
// reference and the path of CPU drivers; the results agree up to f32 summation order.
import { Kernel, grid } from '../../tensor/kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { batchedMatmul } from '../matmul/matmul.ts';
import { MASK_CODE } from '../common/codes.ts';
import type { AttnMask } from './types.ts';

const KV = new Kernel('attention/sdpa_mm.wgsl', 'kv_f32');
const SOFTMAX = new Kernel('attention/sdpa_mm.wgsl', 'softmax_rows');
const FINISH = new Kernel('attention/sdpa_mm.wgsl', 'finish');

/** Largest score matrix (all heads, f32) this path allocates; longer prompts take sdpa_prefill. */
const MAX_SCORE_BYTES = 256 * 2 ** 20;
/** Keys are padded to this multiple (the matmul tiles'). */
const PAD = 64;

export interface SdpaMmArgs {
  heads: number; seq: number; dim: number; kvLen: number; offset: number; scale: number;
  kvBf16: boolean; mask: AttnMask; maskBuf: Tensor; gate: Tensor; gateStride: number; store: { ROUND: number; GATE: number };
}

/** Whether the score matrix of this call fits the path's budget and one binding. */
export function sdpaMmFits(gpu: { maxBinding: number }, heads: number, seq: number, kvLen: number): boolean {
  const bytes = heads * seq * Math.max(PAD, Math.ceil(kvLen / PAD) * PAD) * 4;
  return bytes <= Math.min(MAX_SCORE_BYTES, gpu.maxBinding);
}

/** out [S, H*D] = gated(r(softmax(scale * q K^T + mask) V)) for q [H, S, D] and cache sides kd, vd [H, cap, D]. */
export function sdpaMm(q: Tensor, kd: Tensor, vd: Tensor, out: Tensor, a: SdpaMmArgs): void {
  const gpu = q.gpu;
  const { heads: H, seq: S, dim: D, kvLen } = a;
  const kvp = Math.max(PAD, Math.ceil(kvLen / PAD) * PAD);
  const kc = Tensor.empty(gpu, [H, kvp, D], 'f32', 'sdpa_mm.k');
  const vc = Tensor.empty(gpu, [H, kvp, D], 'f32', 'sdpa_mm.v');
  const s = Tensor.empty(gpu, [H, S, kvp], 'f32', 'sdpa_mm.s');
  const l = Tensor.empty(gpu, [H, S], 'f32', 'sdpa_mm.l');
  const uniforms = { seq: S, heads: H, kv_len: kvLen, kvp, cap: kd.shape[1], offset: a.offset, scale: a.scale, gate_stride: a.gateStride, hd: D };
  const overrides = { KV_BF16: a.kvBf16 ? 1 : 0, MASK: MASK_CODE[a.mask.kind], ...a.store };
  KV.dispatch(gpu, { bindings: { k: kd, v: vd, kc, vc }, uniforms, overrides, workgroups: grid(gpu, H * kvp * D, 256) });
  batchedMatmul(q, kc, s, { batch: H, M: S, N: kvp, K: D, layout: 'rows' });
  SOFTMAX.dispatch(gpu, { bindings: { s, l, mask: a.maskBuf }, uniforms, overrides, workgroups: [S, H] });
  batchedMatmul(s, vc, out, { batch: H, M: S, N: D, K: kvp, layout: 'cols', transposed: true });
  FINISH.dispatch(gpu, { bindings: { l, out, gate: a.gate }, uniforms, overrides, workgroups: grid(gpu, S * H * D, 256) });
  // Recorded dispatches keep reading them in order; the pool may hand them out again.
  for (const t of [kc, vc, s, l]) t.dispose();
}
