import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { gateLogits, randn, rng } from '../helpers/seeded.ts';
import { expectClose } from '../helpers/close.ts';
import { expectUlp } from '../helpers/attn-parity.ts';
import { fixture } from '../helpers/fixtures.ts';
import { expectBitExact } from '../helpers/quant-check.ts';
import { runs, sweep } from '../helpers/sweep.ts';
import { expectSameStructure, recordDispatches, type DispatchRecord } from '../helpers/dispatches.ts';
import { Tensor } from '../../src/gpu/tensor.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { DTypeError, InputError, ShapeError } from '../../src/errors.ts';
import { roundBf16, roundF16 } from '../../src/gpu/dtype.ts';
import { sdpa, type SdpaOptions } from '../../src/kernels/attention/sdpa.ts';
import { counters } from '../../src/kernels/common/counters.ts';
import { sdpaRef, type MaskRef } from '../../src/kernels/attention/sdpa.ref.ts';
import { sigmoidGate } from '../../src/kernels/ops/ops.ts';
import type { AttnMask, FullKV } from '../../src/kernels/attention/types.ts';
import type { Round } from '../../src/kernels/common/codes.ts';

const PATHS = ['prefill', 'decode', 'matmul'] as const;

function full(gpu: Gpu, values: Float32Array, shape: number[], dtype: 'f32' | 'bf16', label: string): FullKV {
  return { kind: 'full', data: Tensor.from(gpu, values, shape, dtype, label) };
}

/** The device mask for a host mask. */
function deviceMask(gpu: Gpu, m: MaskRef, seq: number, kvLen: number): AttnMask {
  if (m.kind === 'prefix') return { kind: 'prefix', tokenTypes: Tensor.from(gpu, Uint32Array.from(m.tokenTypes), [m.tokenTypes.length], 'u32', 'tt') };
  if (m.kind === 'explicit') return { kind: 'explicit', mask: Tensor.from(gpu, Uint32Array.from(m.mask), [seq, kvLen], 'u32', 'mask') };
  return m;
}

/** [1, H, L, D] (MLX layout) -> [L, H*D] (sdpa's output layout). */
function toRows(x: ArrayLike<number>, H: number, L: number, D: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let h = 0; h < H; h++) for (let l = 0; l < L; l++) for (let d = 0; d < D; d++) out[(l * H + h) * D + d] = x[(h * L + l) * D + d];
  return out;
}

interface Case { heads: number; seq: number; dim: number; cap: number; kvLen: number; offset: number; mask: MaskRef; seed: number; qScale?: number }

/**
 * Runs sdpa on random data for one case and returns the output with its f64 reference. kv: 'f32' cache of f32 values,
 * 'bf16' packed cache, 'bf16-values' f32 cache holding the same bf16 values.
 */
async function run(gpu: Gpu, c: Case, extra: Partial<SdpaOptions> = {}, kv: 'f32' | 'bf16' | 'bf16-values' = 'f32'): Promise<{ got: Float32Array; ref: Float64Array }> {
  const { heads: H, seq: S, dim: D, cap } = c;
  const q = randn(c.seed, H * S * D, c.qScale ?? 2);
  let k = randn(c.seed + 1, H * cap * D), v = randn(c.seed + 2, H * cap * D);
  if (kv !== 'f32') { k = k.map(roundBf16); v = v.map(roundBf16); }
  const kvDtype = kv === 'bf16' ? 'bf16' : 'f32';
  // Positions past kvLen are never read: NaN there would show in the output if they were.
  for (let h = 0; h < H; h++) { k.fill(NaN, (h * cap + c.kvLen) * D, (h + 1) * cap * D); v.fill(NaN, (h * cap + c.kvLen) * D, (h + 1) * cap * D); }
  const scale = 1 / Math.sqrt(D);
  const qt = Tensor.from(gpu, q, [H, S, D], 'f32', 'q'), kt = full(gpu, k, [H, cap, D], kvDtype, 'k'), vt = full(gpu, v, [H, cap, D], kvDtype, 'v');
  const o: SdpaOptions = { kvLen: c.kvLen, offset: c.offset, mask: deviceMask(gpu, c.mask, S, c.kvLen), scale, ...extra };
  const got = await sdpa(qt, kt, vt, o).read() as Float32Array;
  // Path 'one' runs both forms of its merge: folded into the split (the default) and as a dispatch of its own.
  if (o.path === 'one' && !o.merge) expectBitExact(got, await sdpa(qt, kt, vt, { ...o, merge: 'separate' }).read(), `kvLen ${c.kvLen}: folded vs separate merge`);
  return { got, ref: sdpaRef(q, k, v, { heads: H, seq: S, dim: D, cap, kvLen: c.kvLen, offset: c.offset, mask: c.mask, scale }) };
}

// f32 vs f64: scores are D-term f32 dot products (error ~ D * 2^-24 * |q||k| ~ 1e-6 here), softmax weights and the
// weighted sum of |v| <= 1 add a few 2^-24 relative: outputs (|out| <= 1) within 4e-6 absolute.
const F32_TOL = 4e-6;

describe('sdpa vs MLX (ops.safetensors)', () => {
  const cases = [
    { key: 'l1.s37.full', L: 1, S: 37, causal: false },
    { key: 'l9.s20.full', L: 9, S: 20, causal: false },
    { key: 'l9.s20.causal', L: 9, S: 20, causal: true },
    { key: 'l9.s9.causal', L: 9, S: 9, causal: true },
  ];
  for (const dt of ['f32', 'bf16', 'f16'] as const) {
    for (const c of cases) {
      it(`sdpa.${dt}.${c.key} on both paths`, async () => {
        const gpu = await getGpu();
        const ops = await fixture('ops.safetensors');
        const name = `sdpa.${dt}.${c.key}`;
        const [q, k, v, want] = await Promise.all(['q', 'k', 'v', 'out'].map((t) => ops.array(`${name}.${t}`)));
        const H = 4, D = 128;
        const kvDtype = dt === 'bf16' ? 'bf16' : 'f32';   // f16 K/V ride as f32 holding f16 values (no shader-f16 here)
        // Capacity beyond kvLen: only the first kvLen positions may be read (the tail is garbage).
        const cap = c.S + 3;
        const pad = (x: ArrayLike<number>) => {
          const out = new Float32Array(H * cap * D).fill(NaN);
          for (let h = 0; h < H; h++) out.set(Array.from(x).slice(h * c.S * D, (h + 1) * c.S * D), h * cap * D);
          return out;
        };
        const kt = full(gpu, pad(k), [H, cap, D], kvDtype, 'k'), vt = full(gpu, pad(v), [H, cap, D], kvDtype, 'v');
        const qt = Tensor.from(gpu, q, [H, c.L, D], 'f32', 'q');
        const wantRows = toRows(want, H, c.L, D);
        for (const path of PATHS) {
          const got = await sdpa(qt, kt, vt, {
            kvLen: c.S, offset: c.S - c.L, mask: { kind: c.causal ? 'causal' : 'none' }, scale: 1 / Math.sqrt(D),
            round: dt === 'f32' ? 'none' : dt, path,
          }).read();
          // f32: MLX's order of summation differs from ours; both are within ~1e-6 of exact (|out| < 1).
          if (dt === 'f32') expectClose(got, wantRows, 2e-6, 0, `${name} ${path}`);
          else expectUlp(got, wantRows, dt, `${name} ${path}`);
        }
      });
    }
  }
});

describe('sdpa vs the f64 reference', () => {
  const base = { heads: 2, seq: 33, dim: 64, cap: 80, kvLen: 73, offset: 40 };
  const tokenTypes = Array.from({ length: 73 }, (_, j) => (j < 20 || (j >= 45 && j < 60) ? 1 : 0) as number);
  tokenTypes[7] = 0; tokenTypes[50] = 0;   // holes inside the bidirectional runs
  const r = rng(9);
  const explicit = Array.from({ length: 33 * 73 }, () => (r() < 0.6 ? 1 : 0) as number);
  const masks: MaskRef[] = [
    { kind: 'none' }, { kind: 'causal' }, { kind: 'prefix', tokenTypes }, { kind: 'explicit', mask: explicit },
  ];
  for (const mask of masks) {
    for (const path of PATHS) {
      it(`${mask.kind} mask under offset 40, S=33, kvLen=73, ${path} path`, async () => {
        const gpu = await getGpu();
        const { got, ref } = await run(gpu, { ...base, mask, seed: 11 }, { path });
        expectClose(got, ref, F32_TOL, 0, `${mask.kind} ${path}`);
      });
    }
  }

  it('a long cache (1100 keys) through the decode split, S=1 causal, and the same on the prefill path', async () => {
    const gpu = await getGpu();
    const c: Case = { heads: 2, seq: 1, dim: 64, cap: 1200, kvLen: 1100, offset: 1099, mask: { kind: 'causal' }, seed: 21, qScale: 4 };
    // chunks 5: 256 keys each; 1: one chunk; 3, 7: a short last chunk (7: and an empty one); 40: 64 keys each and
    // 22 empty chunks past kvLen.
    // The CPU driver takes one chunk, a short last chunk and an empty one (7), empty chunks past kvLen (40) and
    // two parts; HRM_EXHAUSTIVE=1 every chunking.
    const chunkings = [{ chunks: 5 }, { chunks: 1 }, { chunks: 3 }, { chunks: 7 }, { chunks: 40 }, { parts: 1 }, { parts: 2 }];
    const split = chunkings.filter((_, i) => runs([1, 3, 4, 6].includes(i)))
      .map((x) => ({ ...x, path: 'decode' as const }));
    for (const extra of [{}, ...split, { path: 'decode' as const }, { path: 'prefill' as const }]) {
      const { got, ref } = await run(gpu, c, extra);
      expectClose(got, ref, F32_TOL, 0, `long cache ${JSON.stringify(extra)}`);
    }
  });

  it('a long cache through the prefill path with many queries (S=33, causal at offset 1067)', async () => {
    const gpu = await getGpu();
    const { got, ref } = await run(gpu, { heads: 2, seq: 33, dim: 64, cap: 1100, kvLen: 1100, offset: 1067, mask: { kind: 'causal' }, seed: 31 });
    expectClose(got, ref, F32_TOL, 0, 'long prefill');
  });

  it('small S on the decode path with prefix and explicit masks, head dims 40 and 256', async () => {
    const gpu = await getGpu();
    const tt = [1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1];
    const ex = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 0];
    const cases: Case[] = [
      { heads: 3, seq: 3, dim: 40, cap: 11, kvLen: 11, offset: 8, mask: { kind: 'prefix', tokenTypes: tt }, seed: 41 },
      { heads: 2, seq: 2, dim: 40, cap: 12, kvLen: 11, offset: 9, mask: { kind: 'explicit', mask: ex }, seed: 42 },
      { heads: 1, seq: 5, dim: 256, cap: 40, kvLen: 37, offset: 32, mask: { kind: 'causal' }, seed: 43 },
    ];
    // The explicit mask on the decode path only (HRM_EXHAUSTIVE=1: on every path): the mask tests above take each
    // mask on each path, and each new head dim and mask is a pipeline a path.
    for (const [ci, c] of cases.entries()) {
      for (const path of PATHS.filter((pa) => runs(ci !== 1 || pa === 'decode'))) {
        const { got, ref } = await run(gpu, c, { path });
        expectClose(got, ref, F32_TOL, 0, `${c.mask.kind} D=${c.dim} ${path}`);
      }
    }
  });

  it('a packed bf16 cache gives exactly what an f32 cache holding the same values gives', async () => {
    const gpu = await getGpu();
    const c: Case = { heads: 2, seq: 7, dim: 64, cap: 300, kvLen: 290, offset: 283, mask: { kind: 'causal' }, seed: 51 };
    for (const path of PATHS) {
      const packed = await run(gpu, c, { path }, 'bf16');
      const wide = await run(gpu, c, { path }, 'bf16-values');
      // Unpacking a bf16 word is exact, so every later f32 operation sees identical inputs.
      expect([...packed.got]).toEqual([...wide.got]);
      expectClose(packed.got, packed.ref, F32_TOL, 0, `bf16 cache vs f64 ${path}`);
    }
  });

  it('rounds once in bf16 mode: the f32 result rounded', async () => {
    const gpu = await getGpu();
    const c: Case = { heads: 2, seq: 6, dim: 64, cap: 50, kvLen: 50, offset: 44, mask: { kind: 'causal' }, seed: 61 };
    for (const path of PATHS) {
      const exact = await run(gpu, c, { path });
      const rounded = await run(gpu, c, { path, round: 'bf16' });
      expect([...rounded.got]).toEqual([...exact.got].map(roundBf16));
    }
  });

  it('a query that sees no key outputs 0, not NaN (explicit all-false row, and kvLen 0)', async () => {
    const gpu = await getGpu();
    const S = 3, kvLen = 9;
    const m = Array.from({ length: S * kvLen }, (_, i) => (Math.floor(i / kvLen) === 1 ? 0 : (i % 2)));
    for (const path of PATHS) {
      const { got, ref } = await run(gpu, { heads: 2, seq: S, dim: 64, cap: 9, kvLen, offset: 6, mask: { kind: 'explicit', mask: m }, seed: 71 }, { path });
      expect(got.some(Number.isNaN)).toBe(false);
      for (let h = 0; h < 2; h++) for (let d = 0; d < 64; d++) expect(got[(1 * 2 + h) * 64 + d]).toBe(0);
      expectClose(got, ref, F32_TOL, 0, `masked row ${path}`);
      const empty = await run(gpu, { heads: 2, seq: 2, dim: 64, cap: 4, kvLen: 0, offset: 0, mask: { kind: 'none' }, seed: 72 }, { path });
      expect([...empty.got]).toEqual(new Array(2 * 2 * 64).fill(0));
    }
  });
});

/** A gqkv-shaped gate source [S, 4*H*D] (the gate block is its first H*D columns). */
const gateSource = (gpu: Gpu, S: number, width: number, seed: number) => Tensor.from(gpu, gateLogits(seed, S * 4 * width), [S, 4 * width], 'f32', 'gqkv');

describe('sdpa gate (sigmoidGate fused into the output write)', () => {
  it('is sigmoidGate(gqkv, sdpa(...)) bit for bit on both paths and every rounding, with no extra dispatch', async () => {
    const gpu = await getGpu();
    // The third case (more queries) only with HRM_EXHAUSTIVE=1: the first two take each path in two roundings and
    // each rounding on two paths, and every (rounding, gate) is a pipeline a kernel.
    const cases: Case[] = sweep<Case>([
      { heads: 2, seq: 3, dim: 64, cap: 80, kvLen: 73, offset: 70, mask: { kind: 'causal' }, seed: 81 },
      { heads: 3, seq: 1, dim: 40, cap: 300, kvLen: 290, offset: 289, mask: { kind: 'none' }, seed: 82 },
      { heads: 2, seq: 9, dim: 64, cap: 20, kvLen: 20, offset: 11, mask: { kind: 'causal' }, seed: 83 },
    ], (_, i) => i < 2);
    for (const [ci, c] of cases.entries()) {
      const { heads: H, seq: S, dim: D, cap } = c;
      const q = Tensor.from(gpu, randn(c.seed, H * S * D, 2), [H, S, D], 'f32', 'q');
      const k = full(gpu, randn(c.seed + 1, H * cap * D), [H, cap, D], 'f32', 'k');
      const v = full(gpu, randn(c.seed + 2, H * cap * D), [H, cap, D], 'f32', 'v');
      const gate = gateSource(gpu, S, H * D, c.seed + 3);
      for (const [r, round] of (['none', 'bf16', 'f16'] as Round[]).entries()) {
        // Each case and each path in every rounding, one rounding a (case, path) pair (HRM_EXHAUSTIVE=1: all).
        for (const path of PATHS.filter((_, p) => runs((ci + p) % 3 === r))) {
          const o: SdpaOptions = { kvLen: c.kvLen, offset: c.offset, mask: c.mask as AttnMask, scale: 1 / Math.sqrt(D), round, path };
          const want = sigmoidGate(gate, sdpa(q, k, v, o), { round });
          const before = gpu.dispatchCount;
          const got = sdpa(q, k, v, { ...o, gate });
          expect(gpu.dispatchCount - before, `${path} S=${S}`).toBe({ decode: 2, prefill: 1, matmul: 5 }[path]);
          expectBitExact(await got.read(), await want.read(), `S=${S} ${round} ${path}`);
        }
      }
    }
  });

  it('rejects a gate that is not f32 [S, >= H*D]', async () => {
    const gpu = await getGpu();
    const q = Tensor.empty(gpu, [2, 3, 64], 'f32', 'q');
    const kv: FullKV = { kind: 'full', data: Tensor.empty(gpu, [2, 8, 64], 'f32', 'kv') };
    const o = { kvLen: 5, offset: 2, mask: { kind: 'causal' } as AttnMask, scale: 0.125 };
    expect(() => sdpa(q, kv, kv, { ...o, gate: Tensor.empty(gpu, [3, 100], 'f32', 'g') })).toThrow(/\[sdpa\] gate 'g' is \[3, 100\]; expected \[3, >= 128\]/);
    expect(() => sdpa(q, kv, kv, { ...o, gate: Tensor.empty(gpu, [2, 512], 'f32', 'g') })).toThrow(ShapeError);
    expect(() => sdpa(q, kv, kv, { ...o, gate: Tensor.empty(gpu, [3, 512], 'u32', 'g') })).toThrow(DTypeError);
  });
});

describe('sdpa decode structure', () => {
  it('depends on the capacity only (kvLen and offset are uniform values), correct at kvLen 1, mid and capacity', async () => {
    const gpu = await getGpu();
    for (const [H, S, D, cap, dtype] of [[2, 1, 64, 1200, 'f32'], [3, 3, 40, 300, 'bf16'], [16, 1, 128, 70, 'f32']] as const) {
      const q = randn(91, H * S * D, 2);
      const k = randn(92, H * cap * D).map(roundBf16), v = randn(93, H * cap * D).map(roundBf16);
      const qt = Tensor.from(gpu, q, [H, S, D], 'f32', 'q');
      const kt = full(gpu, k, [H, cap, D], dtype, 'k'), vt = full(gpu, v, [H, cap, D], dtype, 'v');
      const gate = gateSource(gpu, S, H * D, 94);
      for (const mask of [{ kind: 'none' }, { kind: 'causal' }] as const) {
        const records: DispatchRecord[][] = [];
        for (const kvLen of [S, Math.floor(cap / 2) + 1, cap]) {
          const what = `H=${H} S=${S} cap ${cap} ${dtype} ${mask.kind} kvLen ${kvLen}`;
          const o: SdpaOptions = { kvLen, offset: kvLen - S, mask, scale: 1 / Math.sqrt(D), path: 'decode' };
          let gated: Tensor | undefined;
          records.push(recordDispatches(() => { gated = sdpa(qt, kt, vt, { ...o, gate }); }));
          const out = sdpa(qt, kt, vt, o);
          expectClose(await out.read(), sdpaRef(q, k, v, { heads: H, seq: S, dim: D, cap, kvLen, offset: kvLen - S, mask, scale: o.scale }), F32_TOL, 0, what);
          expectBitExact(await gated!.read(), await sigmoidGate(gate, out).read(), `${what} gated`);
        }
        expect(records[0].map((r) => r.kernel)).toEqual(['attention/sdpa_decode.wgsl#sdpa_split', 'attention/sdpa_decode.wgsl#sdpa_combine']);
        expectSameStructure(records[0], records[1], ['kv_len', 'offset'], `H=${H} S=${S} ${mask.kind}: kvLen ${S} vs mid`);
        expectSameStructure(records[0], records[2], ['kv_len', 'offset'], `H=${H} S=${S} ${mask.kind}: kvLen ${S} vs capacity`);
      }
    }
  });
});

describe('sdpa one-query path (sdpa_one: 32-key chunks, then a merge, folded or separate)', () => {
  // kvLen 1; 31, 32 and 33 around a chunk boundary; 700; 2000 (63 chunks, the last one partial). Head dim 32 in bf16
  // is 4 units a row: fewer than the 8 threads a key, and more thread groups than keys in the values' sum.
  // (HRM_EXHAUSTIVE=1 adds 700: many whole chunks, as 2000 has.)
  const lens = sweep([1, 31, 32, 33, 700, 2000], (n) => n !== 700);
  // Each (cache dtype, head dim) is three pipelines (folded split; split and merge) of tens of seconds of LLVM
  // under a cold cache and shared cores: the CPU driver takes head dim 32 in bf16 (4 units a row), 64 in f32 (the
  // pipelines of the rounding test below) and 256 in f32 (the widest); bf16 at 64 is the fold test's (HRM_EXHAUSTIVE=1:
  // both dtypes at every head dim).
  for (const [ki, kv] of (['f32', 'bf16'] as const).entries()) {
    for (const [H, D] of sweep([[2, 32], [3, 64], [2, 128], [1, 256]], (_, di) => (ki + di) % 2 === 1 && di !== 2)) {
      it(`${kv} cache, ${H} heads of ${D}: none and causal masks at kvLen ${lens.join(', ')} against f64`, async () => {
        const gpu = await getGpu();
        for (const [i, kvLen] of lens.entries()) {
          // The two masks by turns (HRM_EXHAUSTIVE=1: both at every length).
          const masks = [{ kind: 'none' }, { kind: 'causal' }] as const;
          for (const mask of masks.filter((_, m) => runs((i + ki) % 2 === m))) {
            const c: Case = { heads: H, seq: 1, dim: D, cap: 2000, kvLen, offset: kvLen - 1, mask, seed: 100 + kvLen, qScale: 4 };
            const { got, ref } = await run(gpu, c, { path: 'one' }, kv);
            expectClose(got, ref, F32_TOL, 0, `${kv} H=${H} D=${D} kvLen ${kvLen} ${mask.kind}`);
          }
        }
      });
    }
  }

  it('is the default for one query seeing every key: one dispatch (two with a separate merge), the same at every kvLen of a capacity', async () => {
    const gpu = await getGpu();
    const H = 2, D = 64;
    const kernels = { fold: ['one_split_fold'], separate: ['one_split', 'one_merge'] };
    for (const cap of [70, 4100]) {
      const q = Tensor.from(gpu, randn(1, H * D), [H, 1, D], 'f32', 'q');
      const kv = full(gpu, randn(2, H * cap * D), [H, cap, D], 'bf16', 'kv');
      for (const merge of [undefined, 'separate'] as const) {
        const records = [1, 33, cap].map((kvLen) => recordDispatches(() => sdpa(q, kv, kv, { kvLen, offset: kvLen - 1, mask: { kind: 'none' }, scale: 0.125, merge })));
        expect(records[0].map((r) => r.kernel)).toEqual(kernels[merge ?? 'fold'].map((e) => `attention/sdpa_one.wgsl#${e}`));
        expectSameStructure(records[0], records[1], ['kv_len', 'offset'], `cap ${cap} ${merge}: kvLen 1 vs 33`);
        expectSameStructure(records[0], records[2], ['kv_len', 'offset'], `cap ${cap} ${merge}: kvLen 1 vs capacity`);
      }
    }
  });

  it('folds the merge over 41 chunks in back-to-back calls of one batch (3 layers, kvLen 0 among them) and leaves the counters at 0', async () => {
    const gpu = await getGpu();
    const H = 3, D = 64, cap = 1300;
    const q = randn(141, H * D, 4);
    const qt = Tensor.from(gpu, q, [H, 1, D], 'f32', 'q');
    const layers = [0, 1, 2].map((i) => {
      const k = randn(142 + 2 * i, H * cap * D).map(roundBf16), v = randn(143 + 2 * i, H * cap * D).map(roundBf16);
      return { k, v, kt: full(gpu, k, [H, cap, D], 'bf16', 'k'), vt: full(gpu, v, [H, cap, D], 'bf16', 'v') };
    });
    const gate = gateSource(gpu, 1, H * D, 149);
    const calls = [[0, cap], [1, 0], [2, 33], [0, 1], [1, 32], [2, 31], [0, 0], [1, 700]] as const;
    // Every call recorded before any is read: they share the device's counters, one dispatch after the other.
    const outs = calls.map(([i, kvLen]) => {
      const o: SdpaOptions = { kvLen, offset: Math.max(0, kvLen - 1), mask: { kind: 'causal' }, scale: 1 / Math.sqrt(D), path: 'one' };
      const { kt, vt } = layers[i];
      return { fold: sdpa(qt, kt, vt, o), gated: sdpa(qt, kt, vt, { ...o, gate }), separate: sdpa(qt, kt, vt, { ...o, merge: 'separate' }), plain: o };
    });
    for (const [n, [i, kvLen]] of calls.entries()) {
      const what = `call ${n}: layer ${i} kvLen ${kvLen}`;
      const { k, v } = layers[i], x = outs[n];
      const got = await x.fold.read();
      expectClose(got, sdpaRef(q, k, v, { heads: H, seq: 1, dim: D, cap, kvLen, offset: x.plain.offset, mask: { kind: 'causal' }, scale: x.plain.scale }), F32_TOL, 0, what);
      expectBitExact(got, await x.separate.read(), `${what}: folded vs separate`);
      expectBitExact(await x.gated.read(), await sigmoidGate(gate, x.separate).read(), `${what}: gated`);
      if (kvLen === 0) expect([...got]).toEqual(new Array(H * D).fill(0));
    }
    expect([...new Uint32Array(await gpu.read(counters(gpu, H)))]).toEqual(new Array(counters(gpu, H).size / 4).fill(0));
  });

  // One test a rounding and gate: each is a pipeline of its own, a rounded fold up to a minute under a cold cache
  // with the cores shared, and no test may take a third of its timeout. A bf16 cache, as the fold test's: the
  // rounded ungated folds here are the gate test's references.
  const c: Case = { heads: 2, seq: 1, dim: 64, cap: 1300, kvLen: 1100, offset: 1099, mask: { kind: 'none' }, seed: 131 };
  for (const [round, roundTo] of [['bf16', roundBf16], ['f16', roundF16]] as const) {
    it(`rounds once: ${round} mode is the f32 result rounded`, async () => {
      const gpu = await getGpu();
      const exact = await run(gpu, c, { path: 'one' }, 'bf16');
      expect([...(await run(gpu, c, { path: 'one', round }, 'bf16')).got]).toEqual([...exact.got].map(roundTo));
    });
  }

  /** A bf16 cache of 1300 positions and a query, for the gate and refusal tests. */
  const inputs = (gpu: Gpu) => ({
    q: Tensor.from(gpu, randn(5, 2 * 64, 2), [2, 1, 64], 'f32', 'q'),
    k: full(gpu, randn(6, 2 * 1300 * 64), [2, 1300, 64], 'bf16', 'k'),
    v: full(gpu, randn(7, 2 * 1300 * 64), [2, 1300, 64], 'bf16', 'v'),
  });
  // The fold test above gates in f32; the CPU driver gates in bf16 (HRM_EXHAUSTIVE=1: every rounding here).
  for (const round of sweep(['none', 'bf16', 'f16'] as Round[], (r) => r === 'bf16')) {
    it(`gates bit for bit like sigmoidGate in ${round}`, async () => {
      const gpu = await getGpu();
      const { q, k, v } = inputs(gpu);
      const gate = gateSource(gpu, 1, 128, 8);
      const o: SdpaOptions = { kvLen: 1100, offset: 1099, mask: { kind: 'none' }, scale: 0.125, round, path: 'one' };
      expectBitExact(await sdpa(q, k, v, { ...o, gate }).read(), await sigmoidGate(gate, sdpa(q, k, v, o), { round }).read(), `gate ${round}`);
    });
  }

  it('kvLen 0 gives zeros; refuses what it cannot do', async () => {
    const gpu = await getGpu();
    const { q, k, v } = inputs(gpu);
    const empty = await run(gpu, { ...c, kvLen: 0, offset: 0 }, { path: 'one' });
    expect([...empty.got]).toEqual(new Array(2 * 64).fill(0));
    const o = { kvLen: 5, offset: 4, scale: 0.125, path: 'one' as const };
    expect(() => sdpa(Tensor.empty(gpu, [2, 2, 64], 'f32', 'q2'), k, v, { ...o, mask: { kind: 'none' } })).toThrow(/path 'one' needs one query \(got 2\)/);
    const tt = Tensor.from(gpu, [1, 1, 1, 1, 1], [5], 'u32', 'tt');
    expect(() => sdpa(q, k, v, { ...o, mask: { kind: 'prefix', tokenTypes: tt } })).toThrow(/mask prefix/);
    const k40 = full(gpu, randn(9, 2 * 8 * 40), [2, 8, 40], 'f32', 'k40');
    expect(() => sdpa(Tensor.empty(gpu, [2, 1, 40], 'f32', 'q40'), k40, k40, { ...o, mask: { kind: 'none' } })).toThrow(/head dim .* \(got 40\)/);
  });
});

describe('sdpa argument checks', () => {
  it('names the bad argument and the shapes', async () => {
    const gpu = await getGpu();
    const q = Tensor.empty(gpu, [2, 3, 64], 'f32', 'q');
    const kv = (shape: number[], dtype: 'f32' | 'bf16' = 'f32'): FullKV => ({ kind: 'full', data: Tensor.empty(gpu, shape, dtype, 'kv') });
    const o = { kvLen: 5, offset: 2, mask: { kind: 'causal' } as AttnMask, scale: 0.125 };
    expect(() => sdpa(q, kv([2, 8, 32]), kv([2, 8, 32]), o)).toThrow(/\[sdpa\] k 'kv' is \[2, 8, 32\]/);
    expect(() => sdpa(q, kv([2, 4, 64]), kv([2, 4, 64]), o)).toThrow(ShapeError);      // kvLen > capacity
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64], 'bf16'), o)).toThrow(DTypeError);
    expect(() => sdpa(Tensor.empty(gpu, [2, 3, 64], 'bf16', 'qb'), kv([2, 8, 64]), kv([2, 8, 64]), o)).toThrow(DTypeError);
    const tt = Tensor.empty(gpu, [4], 'u32', 'tt');
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]), { ...o, mask: { kind: 'prefix', tokenTypes: tt } })).toThrow(/tokenTypes/);
    const quant = { kind: 'quant', bits: 8, q: tt, scales: tt, biases: tt } as const;
    expect(() => sdpa(q, quant, quant, o)).toThrow(/quantized/);
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]), { ...o, chunks: 0 })).toThrow(/decode chunks 0 must be a positive integer/);
    // Plain-number arguments are the caller's input, not a shape.
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]), { ...o, chunks: 0 })).toThrow(InputError);
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]), { ...o, offset: -1 })).toThrow(/\[sdpa\] offset -1 must be an integer >= 0/);
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]), { ...o, scale: NaN })).toThrow(InputError);
    expect(() => sdpa(q, kv([2, 8, 64]), kv([2, 8, 64]), { ...o, merge: 'last' as never })).toThrow(/\[sdpa\] merge 'last' must be one of fold, separate/);
  });
});
