// gemv_mlp (the decode MLP in one dispatch) many calls back to back in one batch against each call run alone,
// runnable without vitest so that the GPU machine checks it where it matters (bench/parity.ts, in bench/h200.sh):
// its last workgroups add partial sums the others wrote in the same dispatch, an ordering WGSL promises only across
// dispatches. Every batched call must give its lone run's bits (the order of its sums is fixed by the shapes), one
// call must be within two bf16 ulps of the float64 composition of its ops, and the counts must be back at 0.
// tests/kernels/matmul/gemv-mlp.test.ts runs it small.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { roundBf16 } from '../../src/tensor/dtype.ts';
import { mlpFold } from '../../src/kernels/matmul/gemv-mlp.ts';
import { qmlpFold } from '../../src/kernels/qlinear/qgemv-mlp.ts';
import { qweightRef } from '../../src/kernels/qlinear/qlinear.ref.ts';
import { quantizeRef } from '../../src/kernels/quant/quant.ref.ts';
import { uploadQuant } from '../helpers/quant-weight.ts';
import { matmulFusedRef, matmulRef } from '../../src/kernels/matmul/matmul.ref.ts';
import { addRef } from '../../src/kernels/ops/ops.ref.ts';
import { randn } from '../helpers/seeded.ts';
import { ulpStats } from '../helpers/half-ulp.ts';
import { tallyBatch } from './sdpa-fold.check.ts';
import type { ParityCase } from '../hrm/parity.check.ts';

export interface MlpStress {
  /** Hidden and intermediate sizes. */
  K: number;
  I: number;
  /** Distinct weight pairs (decode's layers): bf16, or quantized to `bits` (4 or 8, group 64: qgemv_mlp). */
  layers: number;
  bits?: 4 | 8;
  /** Times every layer's call is recorded, all before any output is read. */
  reps: number;
}

/** HRM-Text-1B's MLP in the bf16 mode: 512 blocks of 8 units, 23 groups; on bf16 weights and on 4-bit ones. */
export const MLP_1B: MlpStress[] = [
  { K: 1536, I: 4096, layers: 4, reps: 16 }, { K: 1536, I: 4096, layers: 2, reps: 16, bits: 4 },
];

const EPS = 1e-6;
const GROUP = 64;

/** A [N, K] weight of `scale` for layer seed `seed`: bf16, or `bits`-quantized; its values as the kernel multiplies. */
function weight(gpu: Gpu, N: number, K: number, seed: number, scale: number, bits?: 4 | 8) {
  const v = randn(seed, N * K, scale).map(roundBf16);
  if (!bits) return { exact: v, dense: Tensor.from(gpu, v, [N, K], 'bf16', 'mlp.w'), tensors: [] as Tensor[] };
  const r = quantizeRef(v, N, K, { bits, groupSize: GROUP, round: 'bf16' });
  const q = uploadQuant(gpu, r, K, bits, GROUP, 'bf16', [0, N]);
  const exact = qweightRef({ ...r, N, K, bits, groupSize: GROUP }, 'exact');
  return { exact, q, tensors: [...q.q, ...q.scales, ...q.biases] };
}

/** Batched calls differing in any bit from their lone run (bound 0), the float64 check, the counts left. */
export async function checkMlpFold(gpu: Gpu, s: MlpStress): Promise<ParityCase[]> {
  const { K, I } = s;
  const xv = randn(1, K, 3).map(roundBf16);
  const layers = Array.from({ length: s.layers }, (_, l) => ({
    gu: weight(gpu, 2 * I, K, 10 + 2 * l, 1 / Math.sqrt(K), s.bits),
    down: weight(gpu, K, I, 11 + 2 * l, 2 / Math.sqrt(I), s.bits),
  }));
  const call = (l: number): Tensor => {
    const x = Tensor.from(gpu, xv, [1, K], 'f32', 'mlp.x');
    const { gu, down } = layers[l];
    const o = { eps: EPS, round: 'bf16' as const };
    const done = gu.q && down.q ? qmlpFold(x, gu.q, down.q, o) : mlpFold(x, gu.dense!, down.dense!, o);
    if (!done) throw new Error(`the decode MLP's one dispatch cannot take K ${K}, I ${I}`);
    return x;
  };
  const want = [];
  for (let l = 0; l < s.layers; l++) {
    const t = call(l);
    want.push(await t.read());
    t.dispose();
  }
  const got: Tensor[] = [];
  for (let r = 0; r < s.reps; r++) for (let l = 0; l < s.layers; l++) got.push(call(l));
  // Every count in the device's first buffer of them (its groups' and the last one's among them).
  const { bad, left } = await tallyBatch(gpu, got, want, 64);
  const a = matmulFusedRef(xv, layers[0].gu.exact, 1, 2 * I, K, { round: 'bf16', norm: EPS, swiglu: true });
  const ref = addRef(xv, matmulRef(a, layers[0].down.exact, 1, K, I, 'bf16'), 'bf16');
  const ulps = ulpStats('bf16', want[0] as Float32Array, ref);
  for (const w of layers.flatMap((l) => [l.gu, l.down])) {
    for (const t of [...w.tensors, ...(w.dense ? [w.dense] : [])]) t.dispose();
  }
  const what = `K ${K}, I ${I}, ${s.bits ? `${s.bits}-bit` : 'bf16'} weights, ${s.layers} layers x ${s.reps}`;
  return [
    {
      name: `decode MLP in one dispatch vs alone: calls differing of ${got.length} (${what})`, value: bad, bound: 0,
      ok: bad === 0,
    },
    {
      name: `decode MLP in one dispatch vs float64: worst bf16 ulps (${what})`, value: ulps.worst, bound: 2,
      ok: ulps.worst <= 2,
    },
    { name: `decode MLP in one dispatch: counters left non-zero (${what})`, value: left, bound: 0, ok: !left },
  ];
}
