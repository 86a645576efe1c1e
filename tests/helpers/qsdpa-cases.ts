// Cases of the quantized-cache attention tests (qsdpa.test.ts, qsdpa-one.test.ts): cache sides filled as a decode
// loop fills them, queries, masks, and the check against the float64 reference.
import { expect } from 'vitest';
import { getGpu } from './gpu.ts';
import { gateLogits, randn, rng } from '../../testkit/helpers/seeded.ts';
import { expectUlps } from './quant-check.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { AttnMask, QuantKV } from '../../src/kernels/attention/types.ts';
import type { Round } from '../../src/kernels/common/codes.ts';
import { appendQuantized, quantKV } from '../../src/kernels/attention/kvquant.ts';
import { qsdpa, type QsdpaOptions } from '../../src/kernels/attention/qsdpa.ts';
import type { Accumulate } from '../../src/kernels/quant/qmm.ts';
import { roundTo } from '../../src/kernels/quant/quant.ref.ts';
import { kvAccess, qsdpaRef, type QuantSideRef } from '../../src/kernels/attention/qsdpa.ref.ts';
import type { MaskRef } from '../../src/kernels/attention/sdpa.ref.ts';

export interface Case {
  heads: number; kvHeads: number; dim: number; seq: number; offset: number; cap: number;
  kBits: number; vBits: number; mask: MaskRef['kind']; round: Round; accumulate: Accumulate; chunkRows?: number;
  seed: number;
  /** qsdpa's path option (default: its own choice). */
  path?: QsdpaOptions['path'];
}
export const BASE: Case = { heads: 2, kvHeads: 2, dim: 64, seq: 5, offset: 7, cap: 16, kBits: 4, vBits: 4,
  mask: 'causal', round: 'none', accumulate: 'f32', seed: 1 };

/** Prefix-LM token types: positions 0..8 form the bidirectional block (some queries sit inside it). */
const tokenTypes = (kvLen: number) => Array.from({ length: kvLen }, (_, j) => (j < 9 ? 1 : 0));
/** A random explicit mask whose query 1 sees nothing (every score masked: MLX then averages all values). */
const explicitMask = (seq: number, kvLen: number, seed: number) => {
  const r = rng(seed);
  return Array.from({ length: seq * kvLen }, (_, i) => (Math.floor(i / kvLen) === 1 ? 0 : r() < 0.6 ? 1 : 0));
};

async function readSide(side: QuantKV): Promise<QuantSideRef> {
  return { bits: side.bits, q: await side.q.read(), scales: await side.scales.read(),
    biases: await side.biases.read() };
}

/**
 * A cache side holding `offset` earlier positions, then the S new ones appended at `offset` (as a decode loop
 * does).
 */
export function fill(gpu: Gpu, c: Case, bits: number, seed: number): QuantKV {
  const side = quantKV(gpu, { heads: c.kvHeads, capacity: c.cap, headDim: c.dim, bits });
  const put = (n: number, at: number, s: number) => {
    if (n === 0) return;
    const data = randn(s, c.kvHeads * n * c.dim, 1.5).map((v) => roundTo(c.round, v));
    appendQuantized(Tensor.from(gpu, data, [c.kvHeads, n, c.dim], 'f32', 'kv'), side, { offset: at, round: c.round });
  };
  put(c.offset, 0, seed);
  put(c.seq, c.offset, seed + 1);
  return side;
}

export interface Inputs { q: Tensor; qx: Float32Array; k: QuantKV; v: QuantKV; maskRef: MaskRef; opts: QsdpaOptions }

/** The cache sides, queries, mask and options of one case. */
export function inputs(gpu: Gpu, c: Case): Inputs {
  const kvLen = c.offset + c.seq;
  const k = fill(gpu, c, c.kBits, c.seed * 10), v = fill(gpu, c, c.vBits, c.seed * 10 + 5);
  const qx = randn(c.seed + 3, c.heads * c.seq * c.dim, 2).map((x) => roundTo(c.round, x));
  let mask: AttnMask, maskRef: MaskRef;
  if (c.mask === 'prefix') {
    const tt = tokenTypes(kvLen);
    mask = { kind: 'prefix', tokenTypes: Tensor.from(gpu, tt, [kvLen], 'u32', 'tt') };
    maskRef = { kind: 'prefix', tokenTypes: tt };
  } else if (c.mask === 'explicit') {
    const m = explicitMask(c.seq, kvLen, c.seed);
    mask = { kind: 'explicit', mask: Tensor.from(gpu, m, [c.seq, kvLen], 'u32', 'mask') };
    maskRef = { kind: 'explicit', mask: m };
  } else {
    mask = { kind: c.mask };
    maskRef = { kind: c.mask };
  }
  const opts: QsdpaOptions = {
    kvLen, offset: c.offset, mask, scale: 1 / Math.sqrt(c.dim), round: c.round, accumulate: c.accumulate,
    chunkRows: c.chunkRows, path: c.path,
  };
  return { q: Tensor.from(gpu, qx, [c.heads, c.seq, c.dim], 'f32', 'q'), qx, k, v, maskRef, opts };
}

export async function run(c: Case): Promise<{ got: Float32Array; want: Float64Array }> {
  const gpu = await getGpu();
  const { q, qx, k, v, maskRef, opts } = inputs(gpu, c);
  const { kvLen, scale } = opts;
  const out = qsdpa(q, k, v, opts);
  expect(out.shape).toEqual([c.seq, c.heads * c.dim]);
  const got = await out.readF32();
  const want = qsdpaRef(qx, kvAccess(await readSide(k), await readSide(v), c.cap, c.dim, c.round), {
    heads: c.heads, kvHeads: c.kvHeads, seq: c.seq, dim: c.dim, cap: c.cap, kvLen, offset: c.offset,
    mask: maskRef, scale, round: c.round, accumulate: c.accumulate,
  });
  return { got, want };
}

/**
 * f32: |got - ref| <= 1e-5 * (1 + |ref|): scores are f32 sums of <= 128 products (relative error ~1e-6), which moves
 * softmax weights by ~1e-6 relative; the output sums <= 1100 weighted values (|v| <= ~3). bf16/f16: the GPU's f32
 * sums may round a score or weight to the neighbouring dtype value where the reference's f64 sum does not, so
 * >= 99 % within one ulp of the rounded reference and none beyond 4 ulps.
 */
export async function check(c: Case): Promise<void> {
  const { got, want } = await run(c);
  const what = JSON.stringify(c);
  if (c.round === 'none') {
    for (let i = 0; i < want.length; i++) {
      if (!(Math.abs(got[i] - want[i]) <= 1e-5 * (1 +
        Math.abs(want[i])))) throw new Error(`${what}: first mismatch at ${i}: got ${got[i]}, want ${want[i]}`);
    }
  } else {
    expectUlps(c.round, got, Array.from(want, (x) => roundTo(c.round, x)), 0.99, 4, what);
  }
}

/** A gqkv-shaped gate source [S, 4*H*D] (the gate block is its first H*D columns). */
export const gateSource = (gpu: Gpu, S: number, width: number, seed: number) => Tensor.from(gpu,
  gateLogits(seed, S * 4 * width), [S, 4 * width], 'f32', 'gqkv');
