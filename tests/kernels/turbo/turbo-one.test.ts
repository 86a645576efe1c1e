// turbo_one (decode attention read from two TurboQuant sides) against the float64 reference and the general path
// (turboRopeAppend, ropeQ, dequantizeTurboPair, sdpa): the step's key and value coded bit for bit as the general
// append; outputs within TOL of float64 attention over the coded rows (odd kvLen around a chunk and past 256, head
// dims 64, 128 and 192, zero rows, huge norms, f32 and bf16); the float64 identity the kernel rests on.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectSameStructure, recordDispatches } from '../../helpers/dispatches.ts';
import { countersLeft } from '../../../testkit/kernels/sdpa-fold.check.ts';
import { attend64, codedRotated, rotateHead64, unrotateHead64 } from '../../helpers/turbo-attn.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import type { TurboKV } from '../../../src/kernels/attention/types.ts';
import { ropeK, ropeQ, takeV } from '../../../src/kernels/attention/kvcache.ts';
import { sdpa } from '../../../src/kernels/attention/sdpa.ts';
import { dequantizeTurboPair, turboKV, turboRopeAppend } from '../../../src/kernels/turbo/turbo.ts';
import { turboAppendAttend } from '../../../src/kernels/turbo/turbo-one.ts';
import { turboPadded, type TurboType } from '../../../src/kernels/turbo/format.ts';

const H = 2, BASE = 10000;

/**
 * The tolerance, relative to the largest value magnitude: f32 sums in another order move a score by a few ulps of
 * its size (hence the 1 + |s| factor: a score of 1e3 moved by 1e-4 moves its weight by 1e-4) and an output by a
 * few ulps (measured: below 1.5e-7 on lavapipe); bf16 activations add the output's rounding (half an ulp, 2^-9)
 * and, on the general path only, the decoded keys' and values' (the kernel reads the codes unrounded).
 */
function tolerance(round: Round, maxScore: number): number {
  return 1e-6 * (1 + maxScore) + (round === 'bf16' ? 2 ** -8 : 0);
}

interface Case { kt: TurboType; vt: TurboType; dim: number; kvLen: number; round: Round; rows?: 'zero' | 'huge' }

/** gqkv rows [kvLen, 4 H dim] (gate | q | k | v) with the case's special rows; gate logits 30 (a gate of 1). */
function rows(c: Case): Float32Array {
  const w = H * c.dim;
  const x = randn(c.kvLen * 7 + c.dim, c.kvLen * 4 * w, 1);
  for (let s = 0; s < c.kvLen; s++) {
    const row = x.subarray(s * 4 * w, (s + 1) * 4 * w);
    row.fill(30, 0, w);
    if (c.rows === 'zero') {
      if (s % 3 === 0) row.fill(0, 2 * w, 3 * w);                       // keys of every head
      if (s % 4 === 1) row.fill(0, 3 * w, 4 * w);                       // values
      if (s === c.kvLen - 1) row.fill(0, w, w + c.dim);                  // head 0's query
    }
    if (c.rows === 'huge') {
      if (s % 5 === 0) for (let i = 2 * w; i < 3 * w; i++) row[i] *= 100;
      if (s % 7 === 2) for (let i = 3 * w; i < 4 * w; i++) row[i] *= 300;
    }
  }
  return x;
}

function sides(gpu: Gpu, c: Case, cap: number, tag: string): [TurboKV, TurboKV] {
  const o = { heads: H, capacity: cap, headDim: c.dim };
  return [turboKV(gpu, { ...o, type: c.kt, label: `${tag}.k` }), turboKV(gpu, { ...o, type: c.vt, label: `${tag}.v` })];
}

/** The fused step, the general step (and both caches' codes), and float64 attention, per head. */
async function run(c: Case) {
  const gpu = await getGpu();
  const cap = c.kvLen + 2, w = 4 * H * c.dim, last = c.kvLen - 1;
  const x = rows(c);
  const heads = { heads: H, headDim: c.dim, base: BASE, round: c.round };
  const scale = 1 / Math.sqrt(c.dim);
  const all = Tensor.from(gpu, x, [c.kvLen, w], 'f32', 'gqkv');
  const prefix = last > 0 ? Tensor.from(gpu, x.subarray(0, last * w), [last, w], 'f32', 'prefix') : null;
  const row = Tensor.from(gpu, x.subarray(last * w), [1, w], 'f32', 'row');
  const [k, v] = sides(gpu, c, cap, 'one');
  const [k2, v2] = sides(gpu, c, cap, 'gen');
  for (const [a, b] of [[k, v], [k2, v2]]) if (prefix) turboRopeAppend(prefix, a, b, { ...heads, offset: 0 });
  const fused = turboAppendAttend(row, k, v, { ...heads, offset: last, scale })!;
  turboRopeAppend(row, k2, v2, { ...heads, offset: last });
  const q = ropeQ(row, { ...heads, offset: last });
  const [dk, dv] = dequantizeTurboPair(k2, v2, { len: c.kvLen, round: c.round });
  const at = { kvLen: c.kvLen, offset: last, mask: { kind: 'causal' as const } };
  const general = sdpa(q, dk, dv, { ...at, scale, round: c.round, gate: row });
  const ins = [ropeQ, ropeK, takeV].map((f) => f(all, { ...heads, offset: 0 }));
  const [qa, ka, va] = await Promise.all(ins.map((t) => t.read()));
  const used = async (t: Tensor) => {
    const a = new Uint32Array(await t.read()), per = a.length / (H * cap);
    return [0, 1].flatMap((h) => Array.from(a.subarray(h * cap * per, (h * cap + c.kvLen) * per)));
  };
  const codes = {
    fused: [await used(k.codes), await used(v.codes)], general: [await used(k2.codes), await used(v2.codes)],
  };
  const out = { fused: Array.from(await fused.read()), general: Array.from(await general.read()) };
  const temps = [all, prefix, row, fused, q, dk.data, dv.data, general, ...ins];
  for (const t of [...temps, k.codes, v.codes, k2.codes, v2.codes]) t?.dispose();
  const head = (a: ArrayLike<number>, h: number, s: number) => {
    const at0 = (h * c.kvLen + s) * c.dim;
    return Array.from(a).slice(at0, at0 + c.dim);
  };
  const back = (t: TurboType, r: number[]) => unrotateHead64(codedRotated(t, r, c.dim)).slice(0, c.dim);
  const want = [0, 1].map((h) => {
    const js = Array.from({ length: c.kvLen }, (_, j) => j);
    const [ks, vs] = [js.map((j) => back(c.kt, head(ka, h, j))), js.map((j) => back(c.vt, head(va, h, j)))];
    return attend64(head(qa, h, last), ks, vs, scale);
  });
  return { codes, out, want };
}

/** The largest |got - want| over the heads, relative to each head's largest value, and the tolerance. */
function error(got: number[], want: ReturnType<typeof attend64>[], c: Case): { err: number; tol: number } {
  let err = 0, tol = Infinity;
  want.forEach((w, h) => {
    const scaleV = Math.max(w.maxValue, 1e-30);
    for (let d = 0; d < c.dim; d++) err = Math.max(err, Math.abs(got[h * c.dim + d] - w.out[d]) / scaleV);
    tol = Math.min(tol, tolerance(c.round, w.maxScore));
  });
  return { err, tol };
}

const CASES: Case[] = [
  ...[1, 31, 33, 257].map((kvLen) => ({ kt: 'turbo3', vt: 'turbo3', dim: 128, kvLen, round: 'none' }) as Case),
  { kt: 'turbo4', vt: 'turbo3', dim: 64, kvLen: 33, round: 'none' },
  { kt: 'turbo2', vt: 'turbo2', dim: 192, kvLen: 33, round: 'none' },   // two groups a head, the second padded
  { kt: 'turbo3', vt: 'turbo3', dim: 128, kvLen: 31, round: 'none', rows: 'zero' },
  { kt: 'turbo3', vt: 'turbo3', dim: 128, kvLen: 33, round: 'none', rows: 'huge' },
  { kt: 'turbo3', vt: 'turbo4', dim: 64, kvLen: 40, round: 'bf16' },
];

describe('turbo_one', () => {
  for (const c of CASES) {
    const rowsNote = c.rows ? `, ${c.rows} rows` : '';
    const name = `K ${c.kt} V ${c.vt}, head dim ${c.dim}, kvLen ${c.kvLen}, ${c.round}${rowsNote}`;
    it(`${name}: appends as the general path, attends within the tolerance of float64`, async () => {
      const { codes, out, want } = await run(c);
      expect(codes.fused).toEqual(codes.general);
      const fused = error(out.fused, want, c), general = error(out.general, want, c);
      expect(out.fused.every(Number.isFinite)).toBe(true);
      expect(fused.err).toBeLessThanOrEqual(fused.tol);
      expect(general.err).toBeLessThanOrEqual(general.tol);
    });
  }

  it('records the same dispatches at every position but kv_len (a captured step replays); counters at 0', async () => {
    const gpu = await getGpu();
    const c: Case = { kt: 'turbo3', vt: 'turbo3', dim: 128, kvLen: 40, round: 'none' };
    const [k, v] = sides(gpu, c, 40, 'replay');
    const x = rows(c), w = 4 * H * c.dim;
    const heads = { heads: H, headDim: c.dim, base: BASE, round: c.round, scale: 0.125 };
    const prefix = Tensor.from(gpu, x.subarray(0, 39 * w), [39, w], 'f32', 'prefix');
    turboRopeAppend(prefix, k, v, { ...heads, offset: 0 });
    const outs: Tensor[] = [];
    const step = (at: number) => recordDispatches(() => {
      const row = Tensor.from(gpu, x.subarray(at * w, (at + 1) * w), [1, w], 'f32', 'row');
      outs.push(turboAppendAttend(row, k, v, { ...heads, offset: at })!, row);
    });
    const [a, b] = [step(3), step(39)];
    expect(a.map((d) => d.kernel)).toEqual(['turbo/turbo_one.wgsl#turbo_one']);
    expectSameStructure(a, b, ['kv_len'], 'turbo_one');
    await outs[2].read();
    expect(await countersLeft(gpu, H)).toBe(0);
    for (const t of [...outs, prefix, k.codes, v.codes]) t.dispose();
  });

  it('float64: scores from the rotated query equal the scores of the keys rotated back (head dim 64, padded)', () => {
    for (const t of ['turbo2', 'turbo3', 'turbo4'] as const) {
      for (let j = 0; j < 8; j++) {
        const dim = 64, q = Array.from(randn(400 + j, dim, 1)), k = Array.from(randn(500 + j, dim, j === 0 ? 0 : 3));
        const rot = codedRotated(t, k, dim);
        const qPad = [...q, ...new Array(turboPadded(dim) - dim).fill(0)];
        const byQuery = rotateHead64(qPad).reduce((a, x, d) => a + x * rot[d], 0);
        const byKeys = unrotateHead64(rot).reduce((a, x, d) => a + x * qPad[d], 0);
        expect(Math.abs(byQuery - byKeys)).toBeLessThanOrEqual(1e-12 * (1 + Math.abs(byKeys)));
      }
    }
  });
});
