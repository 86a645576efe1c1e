// Decode attention's folded merge against its separate merge, many calls back to back in one batch, runnable without
// vitest so that the GPU machine checks it where it matters (bench/parity.ts, in bench/h200.sh): WGSL orders storage
// writes between the workgroups of one dispatch only across dispatches, so the last chunk of a head to finish reading
// the other chunks' results right is a property of the driver and the hardware. Every folded call must give the
// separate merge's bits, and the counters must be back at 0 after. tests/kernels/attention/sdpa-fold.test.ts runs it
// small.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { roundBf16 } from '../../src/tensor/dtype.ts';
import { sdpa, type SdpaOptions } from '../../src/kernels/attention/sdpa.ts';
import { counters } from '../../src/kernels/common/counters.ts';
import type { FullKV } from '../../src/kernels/attention/types.ts';
import { gateLogits, randn } from '../helpers/seeded.ts';
import type { ParityCase } from '../hrm/parity.check.ts';

export interface FoldStress {
  heads: number;
  dim: number;
  /** Cache capacity (its chunks of 32 keys are the workgroups per head). */
  cap: number;
  /** Keys attended, one call each per layer and repetition. */
  lens: number[];
  /** Distinct bf16 K/V caches (decode's layer calls). */
  layers: number;
  /** Times every (layer, length) call is recorded, all before any output is read. */
  reps: number;
}

/** HRM-Text-1B's decode attention: 12 heads of 128, a 4096-position bf16 cache, the bf16 mode's rounding and gate. */
export const FOLD_1B: FoldStress = { heads: 12, dim: 128, cap: 4096, lens: [1, 31, 32, 33, 513, 641, 2047, 4096],
  layers: 4, reps: 16 };

/** Folded-merge calls whose output differs from the separate merge's in any bit (bound 0), and the counters left. */
export async function checkFold(gpu: Gpu, s: FoldStress): Promise<ParityCase[]> {
  const { heads: H, dim: D, cap } = s;
  const side = (seed: number): FullKV => ({ kind: 'full',
    data: Tensor.from(gpu, randn(seed, H * cap * D).map(roundBf16), [H, cap, D], 'bf16', 'fold.kv') });
  const q = Tensor.from(gpu, randn(1, H * D, 4), [H, 1, D], 'f32', 'fold.q');
  const gate = Tensor.from(gpu, gateLogits(2, 4 * H * D), [1, 4 * H * D], 'f32', 'fold.gate');
  const layers = Array.from({ length: s.layers }, (_, i) => ({ k: side(10 + 2 * i), v: side(11 + 2 * i) }));
  const opts = (kvLen: number, merge: 'fold' | 'separate'): SdpaOptions => ({
    kvLen, offset: kvLen - 1, mask: { kind: 'causal' }, scale: 1 / Math.sqrt(D), round: 'bf16', gate, path: 'one',
    merge,
  });
  const calls = layers.flatMap(({ k, v }) => s.lens.map((n) => ({ k, v, n })));
  const want = await Promise.all(calls.map((c) => sdpa(q, c.k, c.v, opts(c.n, 'separate')).read()));
  const got: Tensor[] = [];
  for (let r = 0; r < s.reps; r++) for (const c of calls) got.push(sdpa(q, c.k, c.v, opts(c.n, 'fold')));
  const { bad, left } = await tallyBatch(gpu, got, want, H);
  for (const t of [q, gate, ...layers.flatMap((l) => [l.k.data, l.v.data])]) t.dispose();
  const what = `${H} heads of ${D}, cap ${cap}, kvLen ${s.lens.join('/')}, ${s.layers} layers x ${s.reps}`;
  return [
    { name: `decode attention, folded merge vs separate: calls differing of ${got.length} (${what})`, value: bad,
      bound: 0, ok: bad === 0 },
    { name: 'decode attention, folded merge: counters left non-zero', value: left, bound: 0, ok: left === 0 },
  ];
}

/**
 * Of `got` (outputs recorded back to back: repetitions of want's calls, in order), those differing in any bit from
 * their call's `want` (each freed once read), and how many of the first `heads` counters the folds left non-zero.
 */
export async function tallyBatch(gpu: Gpu, got: Tensor[], want: ArrayBufferView[],
  heads: number): Promise<{ bad: number; left: number }> {
  let bad = 0;
  for (const [i, t] of got.entries()) {
    const a = new Uint32Array((await t.read()).buffer), w = want[i % want.length], b = new Uint32Array(w.buffer,
      w.byteOffset, w.byteLength / 4);
    if (a.some((x, j) => x !== b[j])) bad++;
    t.dispose();
  }
  return { bad, left: await countersLeft(gpu, heads) };
}

/** How many of the device's first `n` counters a fold left non-zero (every fold sets its counts back to 0). */
export async function countersLeft(gpu: Gpu, n: number): Promise<number> {
  return new Uint32Array(await gpu.read(counters(gpu, n))).subarray(0, n).filter((x) => x !== 0).length;
}
