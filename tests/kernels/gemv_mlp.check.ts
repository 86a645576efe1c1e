// gemv_mlp (the decode MLP in one dispatch) many calls back to back in one batch against each call run alone,
// runnable without vitest so that the GPU machine checks it where it matters (bench/parity.ts, in bench/h200.sh):
// its last workgroups add partial sums the others wrote in the same dispatch, an ordering WGSL promises only across
// dispatches. Every batched call must give its lone run's bits (the order of its sums is fixed by the shapes), one
// call must be within two bf16 ulps of the float64 composition of its ops, and the counts must be back at 0.
// tests/kernels/gemv_mlp.test.ts runs it small.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/gpu/tensor.ts';
import { roundBf16 } from '../../src/gpu/dtype.ts';
import { mlpFold } from '../../src/kernels/matmul/gemv_mlp.ts';
import { matmulFusedRef, matmulRef } from '../../src/kernels/matmul/matmul.ref.ts';
import { addRef } from '../../src/kernels/ops/ops.ref.ts';
import { randn } from '../helpers/seeded.ts';
import { ulpStats } from '../helpers/half-ulp.ts';
import { tallyBatch } from './sdpa_fold.check.ts';
import type { ParityCase } from '../hrm/parity.check.ts';

export interface MlpStress {
  /** Hidden and intermediate sizes. */
  K: number;
  I: number;
  /** Distinct bf16 weight pairs (decode's layers). */
  layers: number;
  /** Times every layer's call is recorded, all before any output is read. */
  reps: number;
}

/** HRM-Text-1B's MLP in the bf16 mode: 512 blocks of 8 units, 23 groups. */
export const MLP_1B: MlpStress = { K: 1536, I: 4096, layers: 4, reps: 16 };

const EPS = 1e-6;

/** Batched calls differing in any bit from their lone run (bound 0), the float64 check, the counts left. */
export async function checkMlpFold(gpu: Gpu, s: MlpStress): Promise<ParityCase[]> {
  const { K, I } = s;
  const xv = randn(1, K, 3).map(roundBf16);
  const layers = Array.from({ length: s.layers }, (_, l) => {
    const guv = randn(10 + 2 * l, 2 * I * K, 1 / Math.sqrt(K)).map(roundBf16);
    const dv = randn(11 + 2 * l, K * I, 2 / Math.sqrt(I)).map(roundBf16);
    return { guv, dv, gu: Tensor.from(gpu, guv, [2 * I, K], 'bf16', 'mlp.gate_up'), down: Tensor.from(gpu, dv, [K, I], 'bf16', 'mlp.down') };
  });
  const call = (l: number): Tensor => {
    const x = Tensor.from(gpu, xv, [1, K], 'f32', 'mlp.x');
    if (!mlpFold(x, layers[l].gu, layers[l].down, { eps: EPS, round: 'bf16' })) throw new Error(`gemv_mlp cannot take K ${K}, I ${I}`);
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
  const a = matmulFusedRef(xv, layers[0].guv, 1, 2 * I, K, { round: 'bf16', norm: EPS, swiglu: true });
  const ref = addRef(xv, matmulRef(a, layers[0].dv, 1, K, I, 'bf16'), 'bf16');
  const ulps = ulpStats('bf16', want[0] as Float32Array, ref);
  for (const l of layers) { l.gu.dispose(); l.down.dispose(); }
  const what = `K ${K}, I ${I}, ${s.layers} layers x ${s.reps}`;
  return [
    { name: `decode MLP in one dispatch vs alone: calls differing of ${got.length} (${what})`, value: bad, bound: 0, ok: bad === 0 },
    { name: `decode MLP in one dispatch vs float64: worst bf16 ulps (${what})`, value: ulps.worst, bound: 2, ok: ulps.worst <= 2 },
    { name: 'decode MLP in one dispatch: counters left non-zero', value: left, bound: 0, ok: left === 0 },
  ];
}
