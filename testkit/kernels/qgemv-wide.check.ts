// qgemv_wide (row groups sharing one x read and one norm) against qgemv4 at the same lanes, runnable without vitest
// so that the GPU machine checks it where its registers and loads are laid out by another compiler (bench/parity.ts,
// in bench/h200.sh): at HRM-Text-1B's decode projections on 4- and 8-bit weights, every shape `--sweep-gemv` times
// must give qgemv4's bits. tests/kernels/qlinear/qlinear.test.ts runs it small.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { roundBf16 } from '../../src/tensor/dtype.ts';
import type { GemvShape } from '../../src/kernels/matmul/gemv.ts';
import { qlinear } from '../../src/kernels/qlinear/qlinear.ts';
import { quantizeRef } from '../../src/kernels/quant/quant.ref.ts';
import { qSweepShapes } from './gemv-shapes.ts';
import { uploadQuant } from '../helpers/quant-weight.ts';
import { randn } from '../helpers/seeded.ts';
import type { ParityCase } from '../hrm/parity.check.ts';

/** A projection as the decode step runs it: N rows of K values, its fusions, the weights' bits. */
export interface WideCase {
  name: string; N: number; K: number; bits: 4 | 8; norm: boolean; swiglu: boolean; acc: boolean;
}

/** HRM-Text-1B's decode layer projections on 4- and 8-bit weights (lm_head's rows differ only in number). */
export const WIDE_1B: WideCase[] = ([4, 8] as const).flatMap((bits) => [
  { name: 'gqkv', N: 6144, K: 1536, bits, norm: true, swiglu: false, acc: false },
  { name: 'o_proj', N: 1536, K: 1536, bits, norm: false, swiglu: false, acc: true },
  { name: 'gate_up', N: 8192, K: 1536, bits, norm: true, swiglu: true, acc: false },
  { name: 'down_proj', N: 1536, K: 4096, bits, norm: false, swiglu: false, acc: true },
]);

/** Per case, the outputs of every wide shape differing from qgemv4's at the same lanes (bound 0). */
export async function checkQGemvWide(gpu: Gpu, cases: readonly WideCase[]): Promise<ParityCase[]> {
  const out: ParityCase[] = [];
  for (const c of cases) {
    const w = randn(c.N + c.K, c.N * c.K, 1 / Math.sqrt(c.K)).map(roundBf16);
    const r = quantizeRef(w, c.N, c.K, { bits: c.bits, groupSize: 64, round: 'bf16' });
    const q = uploadQuant(gpu, r, c.K, c.bits, 64, 'bf16', [0, c.N]);
    const x = Tensor.from(gpu, randn(c.K, c.K, 3).map(roundBf16), [1, c.K], 'f32', 'wide.x');
    const accv = randn(c.N, c.N, 2).map(roundBf16);
    const run = async (gemv: GemvShape) => {
      const acc = c.acc ? Tensor.from(gpu, accv, [1, c.N], 'f32', 'wide.acc') : undefined;
      const y = qlinear(x, q,
        { round: 'bf16', path: 'gemv', gemv, norm: c.norm ? { eps: 1e-6 } : undefined, swiglu: c.swiglu,
        accumulate: acc });
      const v = await y.read();
      y.dispose();
      return v;
    };
    const shapes = qSweepShapes(c.K, c.bits, c.swiglu, c.norm).filter((s) => s.kernel?.startsWith('wide'));
    const base = new Map<number, Float32Array>();
    let differing = 0;
    for (const gemv of shapes) {
      if (!base.has(gemv.wg)) base.set(gemv.wg, await run({ wg: gemv.wg, rows: 2 }) as Float32Array);
      const want = base.get(gemv.wg)!, got = await run(gemv);
      differing += got.filter((v, i) => !Object.is(v, want[i])).length;
    }
    for (const t of [...q.q, ...q.scales, ...q.biases, x]) t.dispose();
    out.push({
      name: `qgemv_wide vs qgemv4 at its lanes: outputs differing, ${c.name} ${c.N}x${c.K} ${c.bits}-bit ` +
        `(${shapes.length} shapes)`,
      value: differing, bound: 0, ok: differing === 0 && shapes.length > 0,
    });
  }
  return out;
}
