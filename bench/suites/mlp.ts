// A decode layer's MLP (--sweep-gemv): the two products the model runs by default (gate_up with norm and SwiGLU,
// then down with the residual, each at its tuned shape) against gemv_mlp's one dispatch over its units a
// workgroup, first-level group sizes and down's prefetch (matmul/gemv_mlp.ts), timed as the GEMV sweep times its
// shapes (timeAround).
import type { Gpu } from '../../src/gpu/gpu.ts';
import { matmul } from '../../src/kernels/matmul/matmul.ts';
import { mlpFold } from '../../src/kernels/matmul/gemv_mlp.ts';
import type { Settings } from '../harness/settings.ts';
import { timeAround } from '../timing/calls.ts';
import { randomMatrix, randomX } from './figures.ts';

/**
 * One MLP form: 'separate' (two products) or 'fold' at `units`, `group` (null: gemv_mlp's default) and `prefetch`
 * (down's units loaded with gate_up's).
 */
export interface MlpPoint {
  form: 'separate' | 'fold'; units: number | null; group: number | null; prefetch: boolean; bytes: number;
  wallUs: number | null; passUs: number | null; GBps: number;
}

const ROUNDS = 5;

/** The MLP of hidden size `hidden` and intermediate `inter` (bf16 weights, bf16 rounding) in every form. */
export async function mlpSweep(gpu: Gpu, hidden: number, inter: number, s: Settings): Promise<MlpPoint[]> {
  const bytes = 3 * hidden * inter * 2;
  const copies = Math.max(1, Math.min(64, Math.ceil(s.cacheBust / bytes)));
  const layers = Array.from({ length: copies }, (_, i) => ({
    gu: randomMatrix(gpu, 2 * inter, hidden, s.seed * 17 + i * 3, `mlp.gate_up${i}`).chunks,
    down: randomMatrix(gpu, hidden, inter, s.seed * 17 + i * 3 + 1, `mlp.down${i}`).chunks,
  }));
  const x = randomX(gpu, 1, hidden, s.seed + 9);
  const forms: Array<Pick<MlpPoint, 'form' | 'units' | 'group' | 'prefetch'>> = [
    { form: 'separate', units: null, group: null, prefetch: false },
  ];
  for (const units of [8, 16]) {
    for (const prefetch of [false, true]) {
      for (const group of [null, 8, 32]) forms.push({ form: 'fold', units, group, prefetch });
    }
  }
  const opts = { eps: 1e-5, round: 'bf16' as const };
  try {
    const calls = forms.map((p) => {
      let i = 0;
      return () => {
        const w = layers[i++ % copies];
        if (p.form === 'fold') {
          if (w.gu.length > 1 || w.down.length > 1) throw new Error('mlp sweep: weights larger than one binding');
          const fold = { ...opts, units: p.units!, group: p.group ?? undefined, prefetch: p.prefetch };
          if (!mlpFold(x, w.gu[0], w.down[0], fold)) {
            throw new Error(`mlp sweep: gemv_mlp cannot take units ${p.units} at ${hidden} x ${inter}`);
          }
          return;
        }
        const a = matmul(x, w.gu, { round: opts.round, norm: { eps: opts.eps }, swiglu: true, path: 'gemv' });
        matmul(a, w.down, { round: opts.round, accumulate: x, path: 'gemv' });
        a.dispose();
      };
    });
    const times = await timeAround(gpu, calls, s, ROUNDS);
    return forms.map((p, j) => {
      const { passUs, wallUs } = times[j];
      return { ...p, bytes, wallUs, passUs, GBps: bytes / (passUs ?? wallUs!) / 1e3 };
    });
  } finally {
    x.dispose();
    for (const l of layers) for (const t of [...l.gu, ...l.down]) t.dispose();
  }
}
