// The library's matrix-vector path (decode's products) as bandwidth: the two shapes that dominate decode (the
// fused gate/Q/K/V projection and lm_head), and with --sweep-gemv the decode layer's four projections (and,
// quantized, lm_head), fused as the model runs them, over every matrix-vector kernel and workgroup shape (what
// gemv.ts's and qlinear.ts's defaults are chosen from).
// The weights cycle through copies totalling more than the L2, as the model's layers do.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { matmul } from '../../src/kernels/matmul/matmul.ts';
import { matmulF16 } from '../../src/kernels/matmul/matmul-f16.ts';
import { uplFit, type GemvKernel, type GemvShape } from '../../src/kernels/matmul/gemv.ts';
import { linear } from '../../src/hrm/linear.ts';
import { quantizedBytesPerValue } from '../../src/hrm/layout.ts';
import { weightTensors } from '../../src/hrm/weights.ts';
import type { Settings } from '../harness/settings.ts';
import { timeAround, timeCalls } from '../timing/calls.ts';
import { bandwidth, randomMatrix, randomX, type BandwidthFigure } from './figures.ts';
import { qSweepShapes } from '../../testkit/kernels/gemv-shapes.ts';

/**
 * One decode projection (fusions as the model runs them) at one matrix-vector kernel and workgroup shape: where the
 * adapter has timestamps the GPU us per call of one pass of back-to-back calls (passCalls), else the wall us per
 * call.
 */
export interface SweepPoint {
  layer: string; kernel: GemvKernel; wg: number; rows: number; groups: number | null; bytes: number;
  wallUs: number | null; passUs: number | null; GBps: number;
}

/** Pass samples per sweep point (medians). */
const SWEEP_ROUNDS = 5;

/**
 * x[1, cols] @ W[rows, cols]^T with bf16 W through the library's matrix-vector path: matmul with f32 x and output,
 * or (xDtype 'f16', devices with shader-f16) matmulF16 with f16 x and output. Bytes = the weights + x + out.
 * Cycles through enough copies of W to exceed `cacheBust` bytes, as the model's layers do.
 */
export async function gemv(
  gpu: Gpu, rows: number, cols: number, s: Settings, streamGBps: number | null, xDtype: 'f32' | 'f16' = 'f32',
): Promise<BandwidthFigure> {
  const wBytes = rows * cols * 2;
  const copies = Math.max(1, Math.min(64, Math.ceil(s.cacheBust / wBytes)));
  const ws = Array.from({ length: copies },
    (_, i) => randomMatrix(gpu, rows, cols, s.seed * 7919 + i * 104729, `gemv.w${i}`).chunks);
  // fillRandom writes f32 / bf16 only; one row of f16 x is small enough to upload.
  const x = xDtype === 'f16'
    ? Tensor.from(gpu, Float32Array.from({ length: cols }, (_, k) => Math.sin(s.seed + k)), [1, cols], 'f16',
      'bench.x16')
    : randomX(gpu, 1, cols, s.seed);
  const call = xDtype === 'f16' ? (w: Tensor[]) => matmulF16(x, w) : (w: Tensor[]) => matmul(x, w);
  let i = 0;
  try {
    const t = await timeCalls(gpu, () => call(ws[i++ % copies]).dispose(), s);
    const io = xDtype === 'f16' ? 2 : 4;
    const name = `bf16 GEMV ${rows}x${cols}${xDtype === 'f16' ? ', f16 x' : ''}`;
    const fig = bandwidth(name, wBytes + (cols + rows) * io, t, streamGBps);
    return { ...fig, name: `${fig.name} (${copies} cop${copies > 1 ? 'ies' : 'y'})` };
  } finally {
    x.dispose();
    for (const w of ws) for (const c of w) c.dispose();
  }
}

/**
 * The decode layer's four projections with the model's fusions (norm into gqkv and gate_up, SwiGLU, residual into
 * o and down), one x row, over kernels and workgroup shapes: in bf16, then on 4- and 8-bit weights with lm_head
 * (qSweepShapes). GPU time per call in one pass of 200 back-to-back calls, barriers included, as a replayed step
 * pays it (passCalls; wall time only without timestamps: recording a call costs JavaScript more than the smaller
 * kernels take). 'vec4' (the K loop) at 32..256 lanes x 2 or 4 rows; 'upl' and 'upl-sg' (loads up front; the
 * latter reduced on subgroups, where the adapter has them) at the lanes that split a row's units evenly, x 2, 4 or
 * 8 rows as its registers allow; 'wide' (sweepShapes).
 */
export async function gemvSweep(
  gpu: Gpu, hidden: number, inter: number, qkv: number, vocab: number, s: Settings,
): Promise<SweepPoint[]> {
  const layers = [
    { layer: 'gqkv (norm)', n: qkv, k: hidden, norm: true, swiglu: false, acc: false },
    { layer: 'o_proj (residual)', n: hidden, k: hidden, norm: false, swiglu: false, acc: true },
    { layer: 'gate_up (norm, swiglu)', n: 2 * inter, k: hidden, norm: true, swiglu: true, acc: false },
    // gate_up's rows without the SwiGLU pairing, and paired with the up half 8 rows further on: is the pairing
    // slower because gate row i and up row i sit an exact multiple of 4 MiB apart?
    { layer: 'gate_up rows (norm only)', n: 2 * inter, k: hidden, norm: true, swiglu: false, acc: false },
    { layer: 'gate_up + 16 rows (norm, swiglu)', n: 2 * inter + 16, k: hidden, norm: true, swiglu: true, acc: false },
    { layer: 'down_proj (residual)', n: hidden, k: inter, norm: false, swiglu: false, acc: true },
  ];
  const out: SweepPoint[] = [];
  // Quantized, lm_head too: its 65536 rows each read the whole x row, which at 4 bits is 8 times a row's levels.
  const lmHead = { layer: 'lm_head', n: vocab, k: hidden, norm: false, swiglu: false, acc: false };
  const quantized = [4, 8].flatMap((bits) =>
    [layers[0], layers[1], layers[2], layers[5], lmHead].map((L) => ({ ...L, bits })));
  for (const L of [...layers.map((l) => ({ ...l, bits: 16 })), ...quantized]) {
    // Bytes a call reads of the weights: bf16, or the packed levels and a bf16 scale and bias a group of 64.
    const quant = L.bits < 16 ? { bits: L.bits, groupSize: 64 } : undefined;
    const wBytes = L.n * L.k * (quant ? quantizedBytesPerValue(quant) : 2);
    const copies = Math.max(1, Math.min(64, Math.ceil(s.cacheBust / wBytes)));
    const ws = Array.from({ length: copies },
      (_, i) => randomMatrix(gpu, L.n, L.k, s.seed * 13 + i * 7, `sweep.w${i}`, quant));
    const x = randomX(gpu, 1, L.k, s.seed + 5);
    const acc = randomX(gpu, 1, L.n, s.seed + 6);
    try {
      const shapes = L.bits < 16 ? qSweepShapes(L.k, L.bits, L.swiglu, L.norm) : sweepShapes(L.k, gpu.subgroups);
      const calls = shapes.map((gemv) => {
        let i = 0;
        return () => {
          const y = linear(x, ws[i++ % copies], {
            norm: L.norm ? { eps: 1e-5 } : undefined, swiglu: L.swiglu, accumulate: L.acc ? acc : undefined, gemv,
            path: 'gemv', round: quant ? 'bf16' : undefined,
          });
          if (!L.acc) y.dispose();
        };
      });
      const times = await timeAround(gpu, calls, s, SWEEP_ROUNDS);
      for (const [j, gemv] of shapes.entries()) {
        const { passUs, wallUs } = times[j];
        out.push({
          layer: `${L.bits < 16 ? `q${L.bits} ` : ''}${L.layer} ${L.n}x${L.k}`, kernel: gemv.kernel ?? 'vec4',
          wg: gemv.wg, rows: gemv.rows,
          groups: gemv.groups ?? null, bytes: wBytes, wallUs, passUs, GBps: wBytes / (passUs ?? wallUs!) / 1e3,
        });
      }
    } finally {
      x.dispose();
      acc.dispose();
      for (const w of ws) for (const t of weightTensors(w)) t.dispose();
    }
  }
  return out;
}

/**
 * The sweep's matrix-vector kernels and shapes for rows of K bf16 weights ('upl-sg' where the adapter has
 * subgroups; 'wide' at 16..64 lanes a row x 2..8 row groups x 1..4 rows a group, as its registers allow).
 */
function sweepShapes(K: number, subgroups: boolean): GemvShape[] {
  const shapes: GemvShape[] = [];
  const upl: GemvKernel[] = subgroups ? ['upl', 'upl-sg'] : ['upl'];
  for (const wg of [32, 64, 128]) {
    for (const rows of [2, 4]) shapes.push({ kernel: 'vec4', wg, rows });
    for (const rows of [2, 4, 8]) {
      const f = uplFit(K, 'bf16', wg, rows);
      if (f.exact && f.fits) for (const kernel of upl) shapes.push({ kernel, wg, rows });
    }
  }
  for (const wg of [16, 32, 64]) {
    for (const groups of [2, 4, 8]) {
      for (const per of [1, 2, 4]) {
        const f = uplFit(K, 'bf16', wg, per);
        const ok = wg * groups <= 256 && groups * per >= 2 && f.exact && f.fits;
        if (ok) shapes.push({ kernel: 'wide', wg, groups, rows: groups * per });
      }
    }
  }
  return shapes;
}
