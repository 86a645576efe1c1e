// The TurboQuant kernels (turbo.wgsl) against the fork's own blocks and the float64 reference: the append codes
// every fixture row bit for bit (head dims 128 and 64 as two heads, at an offset), the decode gives the fork's
// values bit for bit (and rounded to bf16 once for bf16 activations), and bad shapes are refused by name.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { turboFixtures, type TurboFixtureRow } from '../../helpers/turbo-fixtures.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { InputError, ShapeError } from '../../../src/errors.ts';
import { roundBf16 } from '../../../src/tensor/dtype.ts';
import { TURBO_BLOCK_BYTES, TURBO_TYPES, turboBlockWords, type TurboType } from '../../../src/kernels/turbo/format.ts';
import type { TurboKV } from '../../../src/kernels/attention/types.ts';
import {
  appendTurbo, dequantizeTurbo, dequantizeTurboPair, turboKV, turboRopeAppend,
} from '../../../src/kernels/turbo/turbo.ts';
import { ropeK, takeV } from '../../../src/kernels/attention/kvcache.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { decodeHead } from '../../../src/kernels/turbo/turbo.ref.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const OFFSET = 2;

/** Rows laid out [heads, S, dim] (row r: head r % heads, position r / heads), coded at OFFSET. */
async function codeRows(t: TurboType, rows: TurboFixtureRow[], heads: number) {
  const gpu = await getGpu();
  const dim = rows[0].dim, seq = rows.length / heads, cap = seq + OFFSET + 1;
  const x = new Float32Array(rows.length * dim);
  rows.forEach((r, i) => x.set(r.x, ((i % heads) * seq + Math.floor(i / heads)) * dim));
  const side = turboKV(gpu, { heads, capacity: cap, headDim: dim, type: t, label: `t.${t}` });
  const src = Tensor.from(gpu, x, [heads, seq, dim], 'f32', 'src');
  appendTurbo(src, side, { offset: OFFSET });
  const words = side.codes.shape[2];
  const bytes = new Uint8Array(new Uint32Array(await side.codes.read()).buffer);
  const at = (i: number) => ((i % heads) * cap + OFFSET + Math.floor(i / heads)) * words * 4;
  const decoded = dequantizeTurbo(side, { len: OFFSET + seq });
  const y = await decoded.data.read();
  const values = (i: number) => y.slice(at(i) / words / 4 * dim, at(i) / words / 4 * dim + dim);
  src.dispose();
  decoded.data.dispose();
  side.codes.dispose();
  const end = (i: number) => at(i) + TURBO_BLOCK_BYTES[t];
  const pad = (i: number) => bytes.slice(end(i), at(i) + words * 4);
  return { block: (i: number) => bytes.slice(at(i), end(i)), pad, values };
}

describe('turbo kernels', () => {
  const { rows } = turboFixtures();

  for (const t of TURBO_TYPES) {
    it(`${t}: codes and decodes the fork's rows bit for bit (head dim 128, and 64 as two heads)`, async () => {
      for (const [dim, heads] of [[128, 1], [64, 2]]) {
        const set = rows.filter((r) => r.dim === dim).slice(0, 24);
        const got = await codeRows(t, set, heads);
        set.forEach((r, i) => {
          expect(hex(got.block(i)), `${r.name} block`).toBe(hex(r.blocks[t]));
          expect(got.pad(i).every((b) => b === 0), `${r.name} padding`).toBe(true);
          const want = r.values ? Array.from(r.values[t].slice(0, dim)) : decodeHead(t, [r.blocks[t]], dim);
          expect(Array.from(got.values(i)), `${r.name} values`).toEqual(want);
        });
      }
    });
  }

  it('decodes rounded to bf16 for bf16 activations (turbo3): the reference values rounded once', async () => {
    const gpu = await getGpu();
    const set = rows.filter((r) => r.dim === 128).slice(0, 8);
    const side = turboKV(gpu, { heads: 1, capacity: set.length, headDim: 128, type: 'turbo3', label: 'bf16' });
    const x = new Float32Array(set.length * 128);
    set.forEach((r, i) => x.set(r.x, i * 128));
    const src = Tensor.from(gpu, x, [1, set.length, 128], 'f32', 'src');
    appendTurbo(src, side, { offset: 0 });
    const decoded = dequantizeTurbo(side, { len: set.length, round: 'bf16' });
    const want = set.flatMap((r) => decodeHead('turbo3', [r.blocks.turbo3], 128).map(roundBf16));
    expect(Array.from(await decoded.data.read())).toEqual(want);
    for (const t of [src, decoded.data, side.codes]) t.dispose();
  });

  it('turboRopeAppend codes as ropeK / takeV + appendTurbo; a pair decodes as two calls (bf16)', async () => {
    const gpu = await getGpu();
    const [H, D, S, cap, offset] = [2, 64, 2, 4, 1];
    const o = { heads: H, headDim: D, base: 10000, offset, round: 'bf16' as const };
    const gqkv = Tensor.from(gpu, randn(5, S * 4 * H * D, 3), [S, 4 * H * D], 'f32', 'gqkv');
    // Zeroed codes, so that the positions neither writes compare equal too.
    const side = (type: TurboType): TurboKV => {
      const w = turboBlockWords(type);
      const codes = Tensor.from(gpu, new Uint32Array(H * cap * w), [H, cap, w], 'u32', type);
      return { kind: 'turbo', type, headDim: D, codes };
    };
    const [k1, v1, k2, v2] = [side('turbo4'), side('turbo2'), side('turbo4'), side('turbo2')];
    turboRopeAppend(gqkv, k1, v1, o);
    for (const [side, fresh] of [[k2, ropeK(gqkv, o)], [v2, takeV(gqkv, o)]] as const) {
      appendTurbo(fresh, side, { offset });
      fresh.dispose();
    }
    for (const [a, b] of [[k1, k2], [v1, v2]]) {
      expect(Array.from(await a.codes.read()), a.type).toEqual(Array.from(await b.codes.read()));
    }
    // Both sides decoded in one dispatch: each as dequantizeTurbo decodes it alone.
    const pair = dequantizeTurboPair(k1, v1, { len: cap, round: 'bf16' });
    const alone = [dequantizeTurbo(k2, { len: cap, round: 'bf16' }), dequantizeTurbo(v2, { len: cap, round: 'bf16' })];
    for (const i of [0, 1]) {
      expect(Array.from(await pair[i].data.read())).toEqual(Array.from(await alone[i].data.read()));
    }
    const decoded = [...pair, ...alone].map((s) => s.data);
    for (const t of [gqkv, k1.codes, v1.codes, k2.codes, v2.codes, ...decoded]) t.dispose();
  });

  it('refuses head dims that are not multiples of 64, and positions past the capacity, by name', async () => {
    const gpu = await getGpu();
    expect(() => turboKV(gpu, { heads: 1, capacity: 4, headDim: 96, type: 'turbo3' })).toThrow(InputError);
    expect(() => turboKV(gpu, { heads: 1, capacity: 4, headDim: 96, type: 'turbo3' })).toThrow(/head_dim 96/);
    const side = turboKV(gpu, { heads: 1, capacity: 4, headDim: 64, type: 'turbo2', label: 'small' });
    const src = Tensor.from(gpu, new Float32Array(3 * 64), [1, 3, 64], 'f32', 'src');
    expect(() => appendTurbo(src, side, { offset: 2 })).toThrow(ShapeError);
    expect(() => appendTurbo(src, side, { offset: 2 })).toThrow(/positions 2\.\.5 do not fit the cache capacity 4/);
    expect(() => dequantizeTurbo(side, { len: 5 })).toThrow(/len 5/);
    src.dispose();
    side.codes.dispose();
  });
});
