// What the persistent MLP kernel (mlp.wgsl) takes, and its overrides: each product the per-op path would run on
// gemv_wide (whose sums the kernel reproduces), with that product's own lanes and units a lane (plan/gemv.ts).
import type { Tensor } from '../../tensor/tensor.ts';
import { DTYPE_CODE } from '../common/codes.ts';
import { uplFit, wideRows } from '../matmul/gemv.ts';
import { denseGemvShape } from '../plan/gemv.ts';
import { PERSIST_THREADS } from './grid-check.ts';

const MAXW = 32;

/** The attention's output projection the OPROJ variant runs first: x += w(attn), as matmul's `accumulate`. */
export interface OProj {
  /** The attention's gated output [1, H*D] f32. */
  attn: Tensor;
  /** o_proj's weight [K, H*D], dense, in gate_up's dtype. */
  w: Tensor;
}

/** The next layer's projection the NEXT variant runs last: out = w(rmsNorm(x)), as matmul's `norm`. */
export interface NextProj {
  /** The next layer's gqkv weight [N, K], dense, in gate_up's dtype. */
  w: Tensor;
  /** Its output [1, N] f32. */
  out: Tensor;
}

/**
 * The kernel's overrides for x [1, K], gateUp [2I, K], down [K, I], for the OPROJ variant oProj's attn [1, HD]
 * and w [K, HD], for the NEXT variant next's w [N, K] and out [1, N] (one dense weight each), or null where the
 * per-op path would not take gemv_wide for every product or where the kernel cannot run: x, attn or out not
 * 16-byte aligned, gate_up's per-op workgroup not of PERSIST_THREADS threads (gqkv's: more), the registers exceeded.
 */
export function persistMlpShape(x: Tensor, gateUp: Tensor, down: Tensor, oProj?: OProj,
  next?: NextProj): Record<string, number> | null {
  const K = x.shape[x.rank - 1];
  const I = gateUp.shape[0] / 2;
  const dtype = gateUp.dtype;
  if (x.dtype !== 'f32' || x.size !== K || down.dtype !== dtype || !(dtype in DTYPE_CODE)) return null;
  const one = { M: 1, dtype, wide: wideRows(x, gateUp, K) && wideRows(x, down, I) };
  const gu = denseGemvShape(x.gpu, { ...one, N: 2 * I, K, norm: true, swiglu: true });
  const dn = denseGemvShape(x.gpu, { ...one, N: K, K: I, norm: false, swiglu: false });
  if (gu.kernel !== 'wide' || dn.kernel !== 'wide' || gu.wg * gu.groups! !== PERSIST_THREADS) return null;
  const UPLU = uplFit(K, dtype, gu.wg, 1).upl;
  const UPLD = uplFit(I, dtype, dn.wg, 1).upl;
  const o = oProj ? oProjShape(x, oProj, dtype) : { WGO: 64, UPLO: 1 };
  const q = next ? nextShape(x, next, dtype) : { WGQ: 64, UPLQ: 1, TQ: PERSIST_THREADS };
  if (!o || !q) return null;
  const UPLM = oProj ? Math.max(UPLD, o.UPLO) : UPLD;
  const UPLN = next ? Math.max(UPLU, q.UPLQ) : UPLU;
  const RPG = [4, 2, 1].find((r) => r * Math.max(UPLN, UPLM) <= MAXW);
  if (RPG === undefined) return null;
  return { WDT: DTYPE_CODE[dtype as keyof typeof DTYPE_CODE], THREADS: PERSIST_THREADS, RPG, WGU: gu.wg, UPLU,
    WGD: dn.wg, UPLD, OPROJ: oProj ? 1 : 0, ...o, UPLM, NEXT: next ? 1 : 0, ...q, UPLN };
}

/** o_proj's lanes and units a lane where its per-op product on x's rows would be gemv_wide, else null. */
function oProjShape(x: Tensor, o: OProj, dtype: string): { WGO: number; UPLO: number } | null {
  const K = x.size;
  const HD = o.w.shape[o.w.rank - 1];
  if (o.attn.dtype !== 'f32' || o.attn.size !== HD || o.w.dtype !== dtype || o.w.shape[0] !== K) return null;
  const op = denseGemvShape(x.gpu, { M: 1, dtype, wide: wideRows(o.attn, o.w, HD), N: K, K: HD, norm: false,
    swiglu: false });
  return op.kernel === 'wide' ? { WGO: op.wg, UPLO: uplFit(HD, dtype, op.wg, 1).upl } : null;
}

/**
 * The next projection's lanes, units a lane and threads (its norm's tree) where its per-op product with the fused
 * norm on x's row would be gemv_wide of at most PERSIST_THREADS threads, else null.
 */
function nextShape(x: Tensor, q: NextProj, dtype: string): { WGQ: number; UPLQ: number; TQ: number } | null {
  const K = x.size;
  const N = q.w.shape[0];
  if (q.w.rank !== 2 || q.w.shape[1] !== K || q.w.dtype !== dtype || q.out.dtype !== 'f32' || q.out.size !== N ||
    q.out.offset % 16 !== 0) return null;
  const op = denseGemvShape(x.gpu, { M: 1, dtype, wide: wideRows(x, q.w, K), N, K, norm: true, swiglu: false });
  const TQ = op.wg * (op.groups ?? 0);
  return op.kernel === 'wide' && TQ > 0 && PERSIST_THREADS % TQ === 0
    ? { WGQ: op.wg, UPLQ: uplFit(K, dtype, op.wg, 1).upl, TQ } : null;
}
