// Constant-trip loops written out for naga (kernels/unroll.ts): the text transform, what it leaves alone, and the
// same bits as pipeline constants for the kernels it was written for (gemv_wide's register arrays, the tiled
// matmul), unrolled on this CPU driver by force.
import { describe, expect, it } from 'vitest';
import { unrollConstantLoops } from '../../src/kernels/unroll.ts';
import { outputBits } from '../helpers/specialized-bits.ts';

const SRC = `const UPL: u32 = 3u;
const RPG: u32 = 2u;
const HALF: u32 = (UPL * RPG) / 4u;
fn f() {
  for (var r = 0u; r < RPG; r++) {
    for (var i = 0u; i < UPL; i++) { wv[i * RPG + r] = w4[r + i]; }
  }
  for (var j = 1; j < 3; j++) { q[j] = 0.0; }
  for (var h = 0u; h < HALF; h++) { s += f32(h); }
}`;

describe('unrollConstantLoops', () => {
  it('writes out nested loops with constant bounds, each copy binding its counter', () => {
    const out = unrollConstantLoops(SRC);
    expect(out).not.toMatch(/\bfor\b/);
    const copies = [...out.matchAll(/\{ let i = (\d)u; wv\[i \* RPG \+ r\] = w4\[r \+ i\]; \}/g)].map((m) => m[1]);
    expect(copies).toEqual(['0', '1', '2', '0', '1', '2']);
    expect(out).toContain('{ let r = 0u;');
    expect(out).toContain('{ let r = 1u;');
    // A counter without a suffix is an i32; (3 * 2) / 4 truncates to 1.
    expect(out).toContain('{ let j = 1i; q[j] = 0.0; } { let j = 2i; q[j] = 0.0; }');
    expect(out).toContain('{ let h = 0u; s += f32(h); }');
    expect(out).not.toContain('let h = 1u');
  });

  it('leaves loops it cannot prove constant or safe to copy', () => {
    const keep = [
      'for (var k = 0u; k < p.K; k++) { a += 1.0; }',                   // a runtime bound
      'for (var i = 0u; i < 4u; i++) { if (x) { break; } }',            // break
      'for (var i = 0u; i < 4u; i++) { if (x) { continue; } a += 1.0; }',
      'for (var i = 0u; i < 4u; i++) { i += 1u; }',                     // writes its counter
      'for (var i = 0u; i < 4u; i += 2u) { a += 1.0; }',                // another step
      'for (var i = 0u; i < 64u; i++) { a += 1.0; }',                   // too many trips
      'for (var i = 0u; i < N; i++) { a += 1.0; }',                     // an unknown name
    ];
    for (const loop of keep) expect(unrollConstantLoops(`fn f() {\n  ${loop}\n}`)).toBe(`fn f() {\n  ${loop}\n}`);
  });
});

describe('unrolled pipelines give the same bits as pipeline constants', () => {
  it('in Node (Dawn): gemv_wide and the tiled matmul', async () => {
    const plain = await outputBits(false, true, { tiled: true, model: false });
    const unrolled = await outputBits(true, true, { tiled: true, model: false, unroll: true });
    expect(plain.map((a) => a.length)).toEqual([64, 32, 70 * 130]);
    for (let i = 0; i < plain.length; i++) expect(unrolled[i], `output ${i}`).toEqual(plain[i]);
  }, 120_000);
});
