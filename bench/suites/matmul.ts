// The prefill-shaped matmul in TFLOP/s (compute bound): f32, bf16 through the tiled kernel and, where the adapter
// has subgroup matrices, through the tensor cores; and the tensor-core path on the layer's four prefill products
// under every schedule of sgmat-schedule.ts (what each shape's default schedule is chosen from).
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { fillRandom } from '../../testkit/init/random.ts';
import { matmul, type MatmulOptions } from '../../src/kernels/matmul/matmul.ts';
import { sgmatUnavailable, stagedUnavailable } from '../../src/kernels/matmul/sgmat-caps.ts';
import type { SgmatKernel, SgmatSchedule } from '../../src/kernels/matmul/sgmat-schedule.ts';
import { add, siluMul } from '../../src/kernels/ops/ops.ts';
import type { Settings } from '../harness/settings.ts';
import { timeCalls } from '../timing/calls.ts';
import { flopsFigure, randomMatrix, randomX, type MatmulFigure } from './figures.ts';

/**
 * x[m, k] @ W[n, k]^T, bf16 W: 2mnk FLOP per call, in f32 mode (f32 x, tiled) and in bf16 mode (x holding bf16
 * values, output rounded to bf16) through the tiled kernel and, where the adapter offers them, subgroup matrices
 * (tensor cores, path 'sgmat').
 */
export async function matmulFlops(gpu: Gpu, m: number, n: number, k: number, s: Settings): Promise<MatmulFigure[]> {
  const w = randomMatrix(gpu, n, k, s.seed * 31, 'mm.w').chunks;
  const x = randomX(gpu, m, k, s.seed + 1);
  const xb = add(x, x, { round: 'bf16' });   // 2x is exact; the rounding makes every value a bf16 value
  const variants: Array<[string, () => Tensor]> = [
    ['f32', () => matmul(x, w)],
    ['bf16, tiled', () => matmul(xb, w, { round: 'bf16', path: 'tiled' })],
  ];
  if (sgmatUnavailable(gpu) === null) {
    variants.push(['bf16, subgroup matrices', () => matmul(xb, w, { round: 'bf16', path: 'sgmat' })]);
  }
  const out: MatmulFigure[] = [];
  try {
    for (const [mode, call] of variants) {
      const t = await timeCalls(gpu, () => call().dispose(), s);
      out.push(flopsFigure(`matmul ${m}x${k} @ ${n}x${k}^T (bf16 weights; ${mode})`, 2 * m * n * k, t));
    }
    return out;
  } finally {
    x.dispose();
    xb.dispose();
    for (const c of w) c.dispose();
  }
}

/**
 * The tensor-core matmul (path 'sgmat') on the model layer's four prefill products at `m` rows, with the model's
 * fusions (swiglu into gate_up, the residual into o_proj and down), under each schedule (sgmat-schedule.ts: the
 * direct kernel with operand prefetch off / on and the staged kernel, x split-K 1, 2, 4), and gate_up once more as
 * matmul then siluMul at the default schedule: which schedule each shape should default to. GPU time by timestamps
 * covers the whole call (x to f16, the product, the output pass). Empty where the adapter has no subgroup matrices.
 */
export async function sgmatSchedules(
  gpu: Gpu, m: number, hidden: number, inter: number, qkv: number, s: Settings,
): Promise<MatmulFigure[]> {
  if (sgmatUnavailable(gpu) !== null) return [];
  const owned: Tensor[] = [];
  /** x [m, k] holding bf16 values (2x is exact; the rounding makes every value a bf16 value). */
  const bfX = (k: number, seed: number): Tensor => {
    const r = randomX(gpu, m, k, seed), b = add(r, r, { round: 'bf16' });
    r.dispose();
    owned.push(b);
    return b;
  };
  const xh = bfX(hidden, s.seed + 5), xi = bfX(inter, s.seed + 6);
  const acc = Tensor.empty(gpu, [m, hidden], 'f32', 'bench.residual');
  fillRandom(acc, { seed: s.seed + 7, scale: 1 });
  owned.push(acc);
  type Shape = { name: string; x: Tensor; n: number; k: number; opts: MatmulOptions; fusion: string };
  const shapes: Shape[] = [
    { name: 'gqkv', x: xh, n: qkv, k: hidden, opts: {}, fusion: 'plain' },
    { name: 'o_proj', x: xh, n: hidden, k: hidden, opts: { accumulate: acc }, fusion: 'residual' },
    { name: 'gate_up', x: xh, n: 2 * inter, k: hidden, opts: { swiglu: true }, fusion: 'swiglu fused' },
    { name: 'down', x: xi, n: hidden, k: inter, opts: { accumulate: acc }, fusion: 'residual' },
  ];
  const quick = { samples: Math.min(s.samples, 3) };
  const out: MatmulFigure[] = [];
  try {
    for (const sh of shapes) {
      const w = randomMatrix(gpu, sh.n, sh.k, s.seed * 37 + sh.n + sh.k, `sched.${sh.name}`).chunks;
      owned.push(...w);
      const call = (sgmat: Partial<SgmatSchedule>) => () => {
        const r = matmul(sh.x, w, { round: 'bf16', path: 'sgmat', sgmat, ...sh.opts });
        if (r !== sh.opts.accumulate) r.dispose();
      };
      const label = `sgmat ${sh.name} ${m}x${sh.k} @ ${sh.n}x${sh.k}^T`;
      const forms: Array<{ kernel: SgmatKernel; pipe: boolean }> =
        [{ kernel: 'direct', pipe: false }, { kernel: 'direct', pipe: true }];
      if (stagedUnavailable(gpu) === null) forms.push({ kernel: 'staged', pipe: false });
      for (const { kernel, pipe } of forms) for (const splitK of [1, 2, 4] as const) {
        const form = kernel === 'staged' ? 'staged' : `direct, pipe ${pipe ? 'on' : 'off'}`;
        const t = await timeCalls(gpu, call({ kernel, pipe, splitK }), quick);
        out.push(flopsFigure(`${label} (${sh.fusion}; ${form}, split-K ${splitK})`, 2 * m * sh.n * sh.k, t));
      }
      if (sh.opts.swiglu) {
        // The form before the fusion: the product into [m, 2I], then siluMul.
        const composed = () => {
          const gu = matmul(sh.x, w, { round: 'bf16', path: 'sgmat' });
          siluMul(gu, { round: 'bf16' }).dispose();
          gu.dispose();
        };
        const t = await timeCalls(gpu, composed, quick);
        out.push(flopsFigure(`${label} (matmul then siluMul; default schedule)`, 2 * m * sh.n * sh.k, t));
      }
    }
    return out;
  } finally {
    for (const t of owned) t.dispose();
  }
}
