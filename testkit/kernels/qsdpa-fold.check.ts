// Quantized-cache decode attention's folded values merge (qsdpa_one.wgsl's qone_out: the last chunk of a head to
// finish adds the other chunks' sums) over many calls back to back in one batch, runnable without vitest so that the
// GPU machine checks it where it matters (bench/parity.ts): as for sdpa-fold.check.ts, WGSL orders storage writes
// between the workgroups of one dispatch only across dispatches. The merge's order is fixed, so every call in the
// batch must give the bits of the same call run alone; each of those must agree with qsdpa's passes (the reference
// path) as qsdpa-one.test.ts asserts in f32 (2e-6 relative); and the counters must be back at 0 after.
// tests/kernels/attention/qsdpa-fold.test.ts runs it small.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { qsdpa, type QsdpaOptions } from '../../src/kernels/attention/qsdpa.ts';
import { tallyBatch } from './sdpa-fold.check.ts';
import type { QuantKV } from '../../src/kernels/attention/types.ts';
import { gateLogits, randn, rng } from '../helpers/seeded.ts';
import type { ParityCase } from '../hrm/parity.check.ts';

export interface QuantFoldStress {
  heads: number;
  dim: number;
  /** Cache capacity (its chunks of 32 * 256 / dim keys are the workgroups per head). */
  cap: number;
  /** Keys attended, one call each per layer and repetition. */
  lens: number[];
  /** K and V bits of each layer's cache (decode's layer calls). */
  bits: Array<[number, number]>;
  /** Times every (layer, length) call is recorded, all before any output is read. */
  reps: number;
}

/** HRM-Text-1B's decode attention over quantized caches: 12 heads of 128, a 4096-position cache. */
export const QUANT_FOLD_1B: QuantFoldStress = {
  heads: 12, dim: 128, cap: 4096, lens: [1, 31, 32, 33, 63, 64, 65, 513, 641, 2047, 4096], bits: [[4, 4], [8, 8],
    [8, 4], [4, 2]], reps: 16,
};

/** A cache side of random levels, scales and biases. */
function side(gpu: Gpu, s: QuantFoldStress, bits: number, seed: number): QuantKV {
  const r = rng(seed);
  const rows = s.heads * s.cap, groups = s.dim / 64;
  const many = (n: number, f: () => number) => Float32Array.from({ length: n }, f);
  return {
    kind: 'quant', bits,
    q: Tensor.from(gpu, Uint32Array.from({ length: (rows * s.dim * bits) / 32 }, () => Math.floor(r() * 2 ** 32)),
      [s.heads, s.cap, (s.dim * bits) / 32], 'u32', 'qfold.q'),
    scales: Tensor.from(gpu, many(rows * groups, () => 0.02 + 0.08 * r()), [s.heads, s.cap, groups], 'f32',
      'qfold.scales'),
    biases: Tensor.from(gpu, many(rows * groups, () => -1.5 * r()), [s.heads, s.cap, groups], 'f32', 'qfold.biases'),
  };
}

/** Batched calls differing from the same call alone (bound 0), calls off the passes, and the counters left. */
export async function checkQuantFold(gpu: Gpu, s: QuantFoldStress): Promise<ParityCase[]> {
  const { heads: H, dim: D } = s;
  const q = Tensor.from(gpu, randn(1, H * D, 2), [H, 1, D], 'f32', 'qfold.q');
  const gate = Tensor.from(gpu, gateLogits(2, 4 * H * D), [1, 4 * H * D], 'f32', 'qfold.gate');
  const layers = s.bits.map(([kb, vb], i) => ({ k: side(gpu, s, kb, 10 + 2 * i), v: side(gpu, s, vb, 11 + 2 * i) }));
  const opts = (kvLen: number, path: 'one' | 'passes'): QsdpaOptions => ({
    kvLen, offset: kvLen - 1, mask: { kind: 'causal' }, scale: 1 / Math.sqrt(D), round: 'none', gate, path,
  });
  const calls = layers.flatMap(({ k, v }) => s.lens.map((n) => ({ k, v, n })));
  const read = (c: (typeof calls)[number], path: 'one' | 'passes') => qsdpa(q, c.k, c.v, opts(c.n, path)).readF32();
  const alone: Float32Array[] = [];
  let off = 0;
  for (const c of calls) {
    const [one, passes] = [await read(c, 'one'), await read(c, 'passes')];
    if (one.some((x, i) => !(Math.abs(x - passes[i]) <= 2e-6 * (1 + Math.abs(passes[i]))))) off++;
    alone.push(one);
  }
  const got: Tensor[] = [];
  for (let r = 0; r < s.reps; r++) for (const c of calls) got.push(qsdpa(q, c.k, c.v, opts(c.n, 'one')));
  const { bad, left } = await tallyBatch(gpu, got, alone, H);
  for (const t of [q, gate,
    ...layers.flatMap((l) => [l.k, l.v]).flatMap((kv) => [kv.q, kv.scales, kv.biases])]) t.dispose();
  const bits = s.bits.map((b) => b.join('/')).join(', ');
  const what = `${H} heads of ${D}, cap ${s.cap}, kvLen ${s.lens.join('/')}, K/V bits ${bits} x ${s.reps}`;
  return [
    { name: 'quantized decode attention, folded values merge in a batch vs alone: calls differing of ' +
      `${got.length} (${what})`, value: bad, bound: 0, ok: bad === 0 },
    { name: 'quantized decode attention, folded values merge vs qsdpa\'s passes: calls beyond 2e-6 relative of ' +
      `${calls.length}`, value: off, bound: 0, ok: off === 0 },
    { name: 'quantized decode attention, folded values merge: counters left non-zero', value: left, bound: 0,
      ok: left === 0 },
  ];
}
