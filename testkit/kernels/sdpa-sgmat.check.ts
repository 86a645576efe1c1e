// Prefill attention's tensor-core path (attention/sdpa-mm.ts sdpaMmF16) against its f32 path (the same sdpa_mm
// passes with f32 products: the reference and fallback), runnable without vitest: sdpa-mm-f16.test.ts runs it in CI
// with the products emulated, bench --check-sgmat on the H200 through the tensor cores.
// Criterion, per case: every output within 1 bf16 ulp of the f32 path's plus 2^-20 max|v| (both round to bf16; the
// weights, good to ~2^-22, and the summation orders move an output by a small fraction of an ulp except near zero,
// where cancelling terms leave an output far smaller than the values it sums), >= 99.9 % within 1 ulp alone (the
// kernel rule), and the call flagged exactly when an operand is not a bf16 value (its outputs are then the f32
// path's, computed in another order); values out of f16's range are scaled into it with their row.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { halfUlp, roundBf16 } from '../../src/tensor/dtype.ts';
import { maskBinding } from '../../src/kernels/attention/mask.ts';
import { placeholder } from '../../src/kernels/common/placeholder.ts';
import { sdpaMm, sdpaMmF16, type F16Product, type SdpaMmArgs } from '../../src/kernels/attention/sdpa-mm.ts';
import { batchedSgmat } from '../../src/kernels/matmul/matmul-sgmat.ts';
import { sgmatCallFlag } from '../../src/kernels/matmul/sgmat-weights.ts';
import type { AttnMask } from '../../src/kernels/attention/types.ts';
import type { MaskRef } from '../../src/kernels/attention/sdpa.ref.ts';
import { randn } from '../helpers/seeded.ts';

export interface SdpaF16Case {
  name: string; outputs: number; worstUlp: number; flagged: boolean; failure: string | null;
}
export interface SdpaF16Report { cases: SdpaF16Case[]; passed: number; failed: number; ms: number }

interface Shape {
  name: string; heads: number; seq: number; dim: number; cap: number; kvLen: number; offset: number; mask: MaskRef;
  gate: boolean;
  /**
   * Writes odd values into q, k or v; `flagged`: whether the f16 path must refuse them (then f32 computes the
   * call).
   */
  spoil?: (q: Float32Array, k: Float32Array, v: Float32Array) => void;
  flagged?: boolean;
}

function deviceMask(gpu: Gpu, m: MaskRef, seq: number, kvLen: number): AttnMask {
  if (m.kind === 'prefix') return { kind: 'prefix',
    tokenTypes: Tensor.from(gpu, Uint32Array.from(m.tokenTypes), [m.tokenTypes.length], 'u32', 'tt') };
  if (m.kind === 'explicit') return { kind: 'explicit',
    mask: Tensor.from(gpu, Uint32Array.from(m.mask), [seq, kvLen], 'u32', 'mask') };
  return m;
}

export async function checkSdpaF16(gpu: Gpu, product: F16Product = batchedSgmat): Promise<SdpaF16Report> {
  const t0 = performance.now();
  const prefix = (n: number, prompt: number) => Array.from({ length: n }, (_, j) => (j < prompt ? 1 : 0));
  const explicit = (S: number, L: number) => Array.from({ length: S * L }, (_, i) => ((i * 7) % 5 === 0 ? 0 : 1));
  // Masks and gates in four of their combinations (each a pipeline set the CPU driver compiles anew): prefix gated,
  // causal with and without, explicit without.
  const shapes: Shape[] = [
    { name: 'prompt block, gated, D 64', heads: 3, seq: 37, dim: 64, cap: 64, kvLen: 37, offset: 0,
      mask: { kind: 'prefix', tokenTypes: prefix(37, 30) }, gate: true },
    { name: '130 queries after 20, causal, D 128', heads: 2, seq: 130, dim: 128, cap: 200, kvLen: 150, offset: 20,
      mask: { kind: 'causal' }, gate: false },
    { name: 'D 96 (padded to 128), causal, gated', heads: 2, seq: 5, dim: 96, cap: 40, kvLen: 30, offset: 25,
      mask: { kind: 'causal' }, gate: true },
    { name: 'D 256 (eight elements a thread in qkv_f16), causal', heads: 2, seq: 20, dim: 256, cap: 24, kvLen: 24,
      offset: 4, mask: { kind: 'causal' }, gate: true },
    { name: 'explicit mask, D 128', heads: 1, seq: 9, dim: 128, cap: 20, kvLen: 20, offset: 11,
      mask: { kind: 'explicit', mask: explicit(9, 20) }, gate: false },
    { name: 'a key of 1e5 (over f16\'s range unscaled)', heads: 2, seq: 33, dim: 64, cap: 33, kvLen: 33, offset: 0,
      mask: { kind: 'causal' }, gate: true, spoil: (_q, k) => { k[64 * 5 + 3] = roundBf16(1e5); } },
    { name: 'a value of 2^-30 beside values near 1 (under f16\'s range unscaled)', heads: 2, seq: 33, dim: 64, cap: 33,
      kvLen: 33, offset: 0, mask: { kind: 'causal' }, gate: false, spoil: (_q, _k,
      v) => { v[64 * 40 + 1] = 2 ** -30; } },
    { name: 'a query row of values near 2^-40', heads: 1, seq: 20, dim: 128, cap: 20, kvLen: 20, offset: 0,
      mask: { kind: 'prefix',
      tokenTypes: prefix(20,
      20) }, gate: true, spoil: (q) => { for (let d = 0; d < 128; d++) q[128 * 3 + d] *= 2 ** -40; } },
    { name: 'a query value that is not bf16: flagged', heads: 2, seq: 20, dim: 64, cap: 24, kvLen: 24, offset: 4,
      mask: { kind: 'causal' }, gate: true, spoil: (q) => { q[64 * 7 + 9] = 0.1; }, flagged: true },
  ];
  const cases: SdpaF16Case[] = [];
  for (const [n, sh] of shapes.entries()) {
    const { heads: H, seq: S, dim: D, cap } = sh;
    const q = randn(100 + n, H * S * D, 2).map(roundBf16), k = randn(200 + n,
      H * cap * D).map(roundBf16), v = randn(300 + n, H * cap * D).map(roundBf16);
    sh.spoil?.(q, k, v);
    const gv = randn(400 + n, S * 4 * H * D, 3).map(roundBf16);
    const qt = Tensor.from(gpu, q, [H, S, D], 'f32', 'check.q');
    const kd = Tensor.from(gpu, k, [H, cap, D], 'bf16', 'check.k'), vd = Tensor.from(gpu, v, [H, cap, D], 'bf16',
      'check.v');
    const gate = Tensor.from(gpu, gv, [S, 4 * H * D], 'f32', 'check.gate');
    const mask = deviceMask(gpu, sh.mask, S, sh.kvLen);
    const scale = 1 / Math.sqrt(D);
    const owned = [qt, kd, vd, gate,
      ...(mask.kind === 'prefix' ? [mask.tokenTypes] : mask.kind === 'explicit' ? [mask.mask] : [])];
    let failure: string | null = null, worst = 0, flagged = false;
    try {
      const maskBuf = maskBinding('check', gpu, mask, { seq: S, kvLen: sh.kvLen, offset: sh.offset });
      const args: SdpaMmArgs = {
        heads: H, seq: S, dim: D, kvLen: sh.kvLen, offset: sh.offset, scale, kvBf16: true, mask, maskBuf,
        gate: sh.gate ? gate : placeholder(gpu, 'no_gate', 'f32'), gateStride: 4 * H * D, store: { ROUND: 1,
          GATE: sh.gate ? 1 : 0 },
        tensorCores: false,
      };
      // The f32 products (sdpa's path 'matmul' off the tensor cores), then the f16 ones.
      const r = Tensor.empty(gpu, [S, H * D], 'f32', 'check.want');
      sdpaMm(qt, kd, vd, r, args);
      const want = await r.read() as Float32Array;
      r.dispose();
      const out = Tensor.empty(gpu, [S, H * D], 'f32', 'check.out');
      sdpaMmF16(qt, kd, vd, out, args, product);
      const got = await out.read() as Float32Array;
      out.dispose();
      const { flag, epoch } = sgmatCallFlag(gpu);
      flagged = (await flag.read())[0] === epoch - 1;
      const slack = 2 ** -20 * v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
      let bad = 0, beyond1 = 0, first = -1;
      for (let i = 0; i < want.length; i++) {
        const diff = Math.abs(got[i] - want[i]), ulp = halfUlp(want[i], 'bf16');
        if (!(diff <= ulp + slack)) { bad++; if (first < 0) first = i; }
        if (!(diff <= ulp)) beyond1++;
        worst = Math.max(worst, Number.isNaN(diff) ? Infinity : diff / ulp);
      }
      if (bad) {
        failure = `${bad} of ${want.length} outputs beyond 1 bf16 ulp + ${slack.toExponential(2)} of the f32 path ` +
          `(first at ${first}: ${got[first]} against ${want[first]})`;
      } else if (beyond1 > want.length / 1000) {
        failure = `${beyond1} of ${want.length} outputs beyond 1 bf16 ulp (more than 0.1 %)`;
      } else if (flagged !== Boolean(sh.flagged)) failure = `the call was ${flagged ? '' : 'not '}flagged`;
    } catch (e) {
      failure = e instanceof Error ? e.message : String(e);
    } finally {
      for (const t of owned) t.dispose();
    }
    cases.push({ name: sh.name, outputs: S * H * D, worstUlp: worst, flagged, failure });
  }
  const failed = cases.filter((c) => c.failure).length;
  return { cases, passed: cases.length - failed, failed, ms: performance.now() - t0 };
}
