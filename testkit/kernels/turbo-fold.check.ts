// TurboQuant decode attention's folded merge (turbo_one.wgsl: the last chunk of a head to finish merges the others')
// over many calls back to back in one batch, runnable without vitest so that the GPU machine checks it where it
// matters (bench/runners/parity.ts), as qsdpa_fold.check.ts does for the quantized caches: every batched call must
// give the bits of the same call alone, each of those must agree with the general path (ropeQ, dequantizeTurboPair,
// sdpa) within 1e-5 of its largest output (random rows: scores of a few units, turbo-one.test.ts's tolerance there),
// and the counters must be back at 0 after. Each call appends the cache's own row for its position again (the same
// codes), so the cache is the same for every call. tests/kernels/turbo/turbo-fold.test.ts runs it small.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { ropeQ } from '../../src/kernels/attention/kvcache.ts';
import { sdpa } from '../../src/kernels/attention/sdpa.ts';
import { dequantizeTurboPair, turboKV, turboRopeAppend } from '../../src/kernels/turbo/turbo.ts';
import { turboAppendAttend } from '../../src/kernels/turbo/turbo-one.ts';
import type { TurboType } from '../../src/kernels/turbo/format.ts';
import type { TurboKV } from '../../src/kernels/attention/types.ts';
import { tallyBatch } from './sdpa-fold.check.ts';
import { randn } from '../helpers/seeded.ts';
import type { ParityCase } from '../hrm/parity.check.ts';

export interface TurboFoldStress {
  heads: number;
  dim: number;
  /** Cache capacity (its chunks of 32 keys are the workgroups per head). */
  cap: number;
  /** Keys attended, one call each per layer and repetition. */
  lens: number[];
  /** K and V types of each layer's cache. */
  types: Array<[TurboType, TurboType]>;
  /** Times every (layer, length) call is recorded, all before any output is read. */
  reps: number;
}

/** HRM-Text-1B's decode attention over TurboQuant caches: 12 heads of 128, a 4096-position cache. */
export const TURBO_FOLD_1B: TurboFoldStress = {
  heads: 12, dim: 128, cap: 4096, lens: [1, 31, 32, 33, 63, 64, 65, 513, 641, 2047, 4096],
  types: [['turbo3', 'turbo3'], ['turbo4', 'turbo4'], ['turbo4', 'turbo3']], reps: 16,
};

interface Call { k: TurboKV; v: TurboKV; n: number; row: Tensor }

/** Batched calls differing from the same call alone (bound 0), calls off the general path, and the counters left. */
export async function checkTurboFold(gpu: Gpu, s: TurboFoldStress): Promise<ParityCase[]> {
  const { heads: H, dim: D, cap } = s;
  const w = 4 * H * D, scale = 1 / Math.sqrt(D);
  const x = randn(3, cap * w, 1);
  const all = Tensor.from(gpu, x, [cap, w], 'f32', 'tfold.gqkv');
  const heads = { heads: H, headDim: D, base: 10000, round: 'none' as const };
  const layers = s.types.map(([kt, vt], i) => {
    const o = { heads: H, capacity: cap, headDim: D };
    const side = (type: TurboType, name: string) => turboKV(gpu, { ...o, type, label: `tfold.${name}${i}` });
    const [k, v] = [side(kt, 'k'), side(vt, 'v')];
    turboRopeAppend(all, k, v, { ...heads, offset: 0 });
    return { k, v };
  });
  const rows = s.lens.map((n) => Tensor.from(gpu, x.subarray((n - 1) * w, n * w), [1, w], 'f32', 'tfold.row'));
  const calls: Call[] = layers.flatMap((l) => s.lens.map((n, i) => ({ ...l, n, row: rows[i] })));
  const one = (c: Call) => turboAppendAttend(c.row, c.k, c.v, { ...heads, offset: c.n - 1, scale })!;
  const general = (c: Call) => {
    const q = ropeQ(c.row, { ...heads, offset: c.n - 1 });
    const [dk, dv] = dequantizeTurboPair(c.k, c.v, { len: c.n });
    const at = { kvLen: c.n, offset: c.n - 1, mask: { kind: 'causal' as const } };
    const out = sdpa(q, dk, dv, { ...at, scale, round: 'none', gate: c.row });
    for (const t of [q, dk.data, dv.data]) t.dispose();
    return out;
  };
  const alone: Float32Array[] = [];
  let off = 0;
  for (const c of calls) {
    const [a, g] = [await one(c).readF32(), await general(c).readF32()];
    const tol = 1e-5 * Math.max(...g.map(Math.abs));
    if (a.some((y, i) => !(Math.abs(y - g[i]) <= tol))) off++;
    alone.push(a);
  }
  const got: Tensor[] = [];
  for (let r = 0; r < s.reps; r++) for (const c of calls) got.push(one(c));
  const { bad, left } = await tallyBatch(gpu, got, alone, H);
  for (const t of [all, ...rows, ...layers.flatMap((l) => [l.k.codes, l.v.codes])]) t.dispose();
  const types = s.types.map((t) => t.join('/')).join(', ');
  const what = `${H} heads of ${D}, cap ${cap}, kvLen ${s.lens.join('/')}, K/V ${types} x ${s.reps}`;
  return [
    { name: `turbo decode attention, folded merge in a batch vs alone: calls differing of ${got.length} (${what})`,
      value: bad, bound: 0, ok: bad === 0 },
    { name: `turbo decode attention vs the general path: calls beyond 1e-5 of the largest output of ${calls.length}`,
      value: off, bound: 0, ok: off === 0 },
    { name: 'turbo decode attention, folded merge: counters left non-zero', value: left, bound: 0, ok: left === 0 },
  ];
}
