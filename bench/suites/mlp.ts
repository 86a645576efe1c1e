// A decode layer's MLP (--sweep-gemv) on bf16, 4- and 8-bit weights: the two products the model runs by default
// (gate_up with norm and SwiGLU, then down with the residual, each at its tuned shape) against the one dispatch
// (matmul/gemv-mlp.ts over its units a workgroup, first-level group sizes and down's prefetch;
// qlinear/qgemv-mlp.ts over its group sizes) and, on bf16 weights, the persistent kernel (persist/mlp.ts: one dispatch,
// a grid barrier between gate_up and down) at the largest grid its self-check passes and at one H100's SM count,
// timed as the GEMV sweep times its shapes (timeAround).
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { MlpOptions } from '../../src/kernels/matmul/gemv-mlp.ts';
import { linear, mlpFoldWeights } from '../../src/hrm/linear.ts';
import { quantizedBytesPerValue } from '../../src/hrm/layout.ts';
import { weightTensors } from '../../src/hrm/weights.ts';
import type { Settings } from '../harness/settings.ts';
import { timeAround } from '../timing/calls.ts';
import { DEFAULT_SPIN, GRID_CANDIDATES, largestGrid } from '../../src/kernels/persist/grid-check.ts';
import { persistentMlp, takeFlag } from '../../src/kernels/persist/mlp.ts';
import { randomMatrix, randomX } from './figures.ts';

/**
 * One MLP form on `weights`: 'separate' (two products), 'fold' at `units`, `group` (null: the kernel's default)
 * and `prefetch` (down's units loaded with gate_up's; the dense kernel's only), or 'persistent' at `grid`
 * workgroups.
 */
export interface MlpPoint {
  weights: 'bf16' | 'q4' | 'q8'; form: 'separate' | 'fold' | 'persistent'; units: number | null;
  group: number | null; prefetch: boolean; grid?: number; bytes: number; wallUs: number | null;
  passUs: number | null; GBps: number;
}

type Form = Pick<MlpPoint, 'form' | 'units' | 'group' | 'prefetch' | 'grid'>;

const ROUNDS = 5;
const GROUP = 64;

/** The forms timed on each kind of weight: the dense kernel over its knobs, the quantized one at two group sizes. */
function forms(quantized: boolean, grid: number): Form[] {
  const f: Form[] = [{ form: 'separate', units: null, group: null, prefetch: false }];
  const grids = grid > 132 ? [grid, 132] : grid > 0 ? [grid] : [];
  const persistent = (g: number): Form => ({ form: 'persistent', units: null, group: null, prefetch: false, grid: g });
  if (!quantized) f.push(...grids.map(persistent));
  for (const units of quantized ? [8] : [8, 16]) {
    for (const prefetch of quantized ? [false] : [false, true]) {
      for (const group of [null, 8, 32]) f.push({ form: 'fold', units, group, prefetch });
    }
  }
  return f;
}

/**
 * The MLP of hidden size `hidden` and intermediate `inter` (bf16 rounding) on bf16, 4- and 8-bit weights (group 64),
 * in every form.
 */
export async function mlpSweep(gpu: Gpu, hidden: number, inter: number, s: Settings): Promise<MlpPoint[]> {
  const out: MlpPoint[] = [];
  const { grid } = await largestGrid(gpu, GRID_CANDIDATES);
  for (const bits of [16, 4, 8]) {
    const quant = bits < 16 ? { bits, groupSize: GROUP } : undefined;
    const bytes = 3 * hidden * inter * (quant ? quantizedBytesPerValue(quant) : 2);
    const copies = Math.max(1, Math.min(64, Math.ceil(s.cacheBust / bytes)));
    const layers = Array.from({ length: copies }, (_, i) => ({
      gu: randomMatrix(gpu, 2 * inter, hidden, s.seed * 17 + i * 3, `mlp.gate_up${i}`, quant),
      down: randomMatrix(gpu, hidden, inter, s.seed * 17 + i * 3 + 1, `mlp.down${i}`, quant),
    }));
    const x = randomX(gpu, 1, hidden, s.seed + 9);
    const fs = forms(quant !== undefined, grid);
    try {
      const calls = fs.map((p) => {
        let i = 0;
        return () => {
          const w = layers[i++ % copies];
          if (p.form === 'separate') {
            const o = { round: 'bf16' as const, path: 'gemv' as const };
            const a = linear(x, w.gu, { ...o, norm: { eps: 1e-5 }, swiglu: true });
            linear(a, w.down, { ...o, accumulate: x });
            a.dispose();
          } else if (p.form === 'persistent') {
            const o = { eps: 1e-5, round: 'bf16' as const, grid: p.grid!, spin: DEFAULT_SPIN };
            if (!persistentMlp(x, w.gu.chunks[0], w.down.chunks[0], o)) {
              throw new Error(`mlp sweep: the persistent MLP does not take ${hidden} x ${inter}`);
            }
          } else if (!mlpFoldWeights(x, w.gu, w.down, fold(p))) {
            const at = `${hidden} x ${inter}, ${bits} bits`;
            throw new Error(`mlp sweep: no one-dispatch MLP ${JSON.stringify(p)} at ${at}`);
          }
        };
      });
      const times = await timeAround(gpu, calls, s, ROUNDS);
      if (await takeFlag(gpu)) throw new Error('mlp sweep: a grid barrier of the persistent MLP ran out of spins');
      const weights = bits === 4 ? 'q4' : bits === 8 ? 'q8' : 'bf16';
      for (const [j, p] of fs.entries()) {
        const { passUs, wallUs } = times[j];
        out.push({ weights, ...p, bytes, wallUs, passUs, GBps: bytes / (passUs ?? wallUs!) / 1e3 });
      }
    } finally {
      x.dispose();
      for (const l of layers) for (const t of [...weightTensors(l.gu), ...weightTensors(l.down)]) t.dispose();
    }
  }
  return out;
}

/** The one-dispatch MLP's options of form `p`. */
function fold(p: Form): MlpOptions {
  return { eps: 1e-5, round: 'bf16', group: p.group ?? undefined, units: p.units!, prefetch: p.prefetch };
}
