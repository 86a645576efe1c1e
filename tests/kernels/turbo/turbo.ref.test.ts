// The float64 TurboQuant reference against the fork's own blocks (no GPU), and the algebra the turbo cache's
// attention rests on: the rotation is orthogonal, so rotating the query once scores the rotated keys as the
// keys decoded back would be scored.
import { describe, expect, it } from 'vitest';
import { turboFixtures } from '../../helpers/turbo-fixtures.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { TURBO_TYPES } from '../../../src/kernels/turbo/format.ts';
import {
  decodeHead, decodeRotated, encodeHead, turboRotate, turboUnrotate,
} from '../../../src/kernels/turbo/turbo.ref.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('TurboQuant reference', () => {
  const { commit, rows } = turboFixtures();

  it(`codes every fixture row as the fork ${commit.slice(0, 9)} does, bit for bit`, () => {
    expect(rows.length).toBe(59);
    for (const r of rows) {
      for (const t of TURBO_TYPES) {
        const blocks = encodeHead(t, r.x, r.dim);
        expect(blocks.length, r.name).toBe(1);
        expect(hex(blocks[0]), `${r.name} ${t}`).toBe(hex(r.blocks[t]));
      }
    }
  });

  it('decodes as the fork does: rotated values bit for bit, through the inverse WHT bit for bit', () => {
    const full = rows.filter((r) => r.values);
    expect(full.length).toBe(11);
    for (const r of full) {
      for (const t of TURBO_TYPES) {
        expect(decodeRotated(t, r.blocks[t]), `${r.name} ${t} rotated`).toEqual(Array.from(r.rotated![t]));
        expect(decodeHead(t, [r.blocks[t]], 128), `${r.name} ${t} values`).toEqual(Array.from(r.values![t]));
      }
    }
  });

  it('keeps the edge cases the fork keeps: zero rows decode to zero, norms past f16 to inf', () => {
    const byName = new Map(rows.map((r) => [r.name, r]));
    for (const t of TURBO_TYPES) {
      expect(decodeHead(t, [byName.get('zero128')!.blocks[t]], 128).every((v) => v === 0)).toBe(true);
      const huge = decodeHead(t, [byName.get('huge128')!.blocks[t]], 128);
      expect(huge.some((v) => !Number.isFinite(v)), `${t} huge`).toBe(true);
      // A norm near f16's top stays finite, and the decoded row keeps the input's norm within the codebook's error.
      const large = byName.get('large128')!;
      const y = decodeHead(t, [large.blocks[t]], 128);
      const n = (v: ArrayLike<number>) => Math.hypot(...Array.from(v));
      expect(Math.abs(n(y) / n(large.x) - 1), `${t} large norm`).toBeLessThan(2e-3);
    }
  });

  it('scores rotated keys against the query rotated once as the decoded keys against the query (float64)', () => {
    const q = Array.from(randn(41, 128, 1));
    const k = Array.from(randn(42, 128, 1));
    const rq = [...q];
    turboRotate(rq);
    for (const t of TURBO_TYPES) {
      const block = encodeHead(t, k, 128)[0];
      const rk = decodeRotated(t, block);
      const back = [...rk];
      turboUnrotate(back);
      const dot = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i], 0);
      // Both sides carry the f32 rounding of the butterflies: agreement to f32's precision of the terms.
      expect(Math.abs(dot(rq, rk) - dot(q, back)), t).toBeLessThan(1e-5 * Math.hypot(...q) * Math.hypot(...rk));
    }
  });
});
