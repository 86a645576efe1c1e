// Prefill attention's tensor-core path (attention/sdpa-mm.ts sdpaMmF16: sdpa_mm_f16.wgsl's passes around two
// batched f16 products) on any device with shader-f16. The products come from a plain kernel written here with the
// tensor cores' contract (f32 sums of exact f16 products), so the conversions, the padding, the f16 weights' scale,
// masks, gates and both f32 fallbacks are checked in CI; the tensor cores themselves run the same cases on the H200
// (sdpa-sgmat.check.ts through bench --check-sgmat).
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { checkSdpaF16 } from '../../../testkit/kernels/sdpa-sgmat.check.ts';
import { attentionTensorCoresUnavailable, type F16Product } from '../../../src/kernels/attention/sdpa-mm.ts';
import { batchedSgmatUnavailable } from '../../../src/kernels/matmul/sgmat-caps.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { roundBf16 } from '../../../src/tensor/dtype.ts';
import { placeholder } from '../../../src/kernels/common/placeholder.ts';
import { sdpaMmF16 } from '../../../src/kernels/attention/sdpa-mm.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { f16RowExponent } from '../../helpers/f16-rows.ts';

const PRODUCT = `enable f16;
struct P { mp: u32, np: u32, kp: u32, ks: u32, nsl: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> a: array<f16>;
@group(0) @binding(2) var<storage, read> b: array<f16>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x >= p.np) { return; }
  let batch = g.z / p.nsl;
  let k0 = (g.z % p.nsl) * p.ks;
  var acc = 0.0;
  for (var k = k0; k < min(p.kp, k0 + p.ks); k++) {
    acc += f32(a[(batch * p.mp + g.y) * p.kp + k]) * f32(b[(batch * p.np + g.x) * p.kp + k]);
  }
  c[(g.z * p.mp + g.y) * p.np + g.x] = acc;
}`;

/**
 * The products as plain f32 sums of f16 products in the K slices asked for, recorded into the open batch like any
 * kernel.
 */
function plainProduct(gpu: Gpu): F16Product {
  const pipeline = gpu.device.createComputePipeline({ layout: 'auto',
    compute: { module: gpu.device.createShaderModule({ code: PRODUCT }), entryPoint: 'main' } });
  return (a, b, c, u, label) => {
    const params = gpu.device.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    gpu.device.queue.writeBuffer(params, 0,
      new Uint32Array([u.Mp, u.Np, u.Kp, 64 * Math.ceil(u.Kp / 64 / u.slices), u.slices, 0, 0, 0]));
    const bindGroup = gpu.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: params } },
        ...[a, b, c].map((t, i) => ({ binding: i + 1, resource: t.binding(label) }))],
    });
    gpu.dispatch({ pipeline, bindGroup, key: label,
      workgroups: [Math.ceil(u.Np / 64), u.Mp, u.batch * u.slices], label });
  };
}

describe('prefill attention on f16 products (the tensor-core path, products emulated)', async () => {
  const gpu = await getGpu();
  it('says why attention stays off the tensor cores', () => {
    const why = attentionTensorCoresUnavailable(gpu);
    if (gpu.cpu) expect(why).toBe('a CPU driver');
    else if (batchedSgmatUnavailable(gpu) !== null) expect(why).toBe(batchedSgmatUnavailable(gpu));
  });

  it('matches the f32 path within one bf16 ulp on odd shapes, masks and gates; out-of-range values take the f32 '
    + 'fallbacks', async (ctx) => {
    if (!gpu.f16) {
      console.log('sdpa_mm_f16: skipped, no shader-f16 on this adapter');
      ctx.skip();
    }
    const r = await checkSdpaF16(gpu, plainProduct(gpu));
    expect(r.cases.filter((c) => c.failure).map((c) => `${c.name}: ${c.failure}`)).toEqual([]);
    expect(r.cases.length).toBeGreaterThanOrEqual(6);
  });

  it('qkv_f16 writes q, K and V^T (twice) as f16 rows scaled by a power of two, zero padding over dirty buffers',
    async (ctx) => {
    if (!gpu.f16) ctx.skip();
    // D 96 pads to 128 (Dk and Dn), 50 keys to 128, 37 queries to 128; rows span 2^-60 .. 2^60, one is all zeros.
    const H = 3, S = 37, D = 96, cap = 70, kvLen = 50, Dk = 128, Dn = 128, Sp = 128, kvp = 128;
    const rowScaled = (seed: number, rows: number, len: number) => {
      const x = randn(seed, rows * len, 4);
      for (let r = 0; r < rows; r++) for (let c = 0; c < len; c++) x[r * len +
        c] = roundBf16(x[r * len + c] * 2 ** (((r * 37) % 121) - 60));
      return x;
    };
    const q = rowScaled(1, H * S, D), k = rowScaled(2, H * cap, D), v = randn(3, H * cap * D, 3).map(roundBf16);
    q.fill(0, 5 * D, 6 * D);
    for (let j = 0; j < cap; j++) v[(1 * cap + j) * D + 7] *= 2 ** 40;   // head 1, dim 7: a column far above the rest
    // Garbage in the pool at every size the call allocates, so unwritten padding would show.
    for (const bytes of [H * Sp * Dk * 2, H * Dn * 2 * kvp * 2]) {
      for (let i = 0; i < 3; i++) Tensor.from(gpu, new Uint32Array(bytes / 4).fill(0x3c003c00), [bytes / 4], 'u32',
        'dirty').dispose();
    }
    const qt = Tensor.from(gpu, q, [H, S, D], 'f32', 'q'), kd = Tensor.from(gpu, k, [H, cap, D], 'bf16',
      'k'), vd = Tensor.from(gpu, v, [H, cap, D], 'bf16', 'v');
    const out = Tensor.empty(gpu, [S, H * D], 'f32', 'out');
    const seen: Tensor[] = [];
    const plain = plainProduct(gpu);
    const product: F16Product = (a, b, c, u, label) => {
      for (const t of seen.length ? [b] : [a, b]) {
        const copy = Tensor.empty(gpu, [t.size], 'f16', `copy of ${t.label}`);
        gpu.copy(t.binding('copy'), copy.binding('copy'));
        seen.push(copy);
      }
      plain(a, b, c, u, label);
    };
    sdpaMmF16(qt, kd, vd, out, {
      heads: H, seq: S, dim: D, kvLen, offset: 13, scale: 0.1, kvBf16: true, mask: { kind: 'causal' },
      maskBuf: placeholder(gpu, 'no_mask', 'u32'),
      gate: placeholder(gpu, 'no_gate', 'f32'), gateStride: 0, store: { ROUND: 1, GATE: 0 }, tensorCores: true,
    }, product);
    const [qh, kh, vt] = await Promise.all(seen.map((t) => t.read() as Promise<Float32Array>));
    const scaledRow = (row: number[]) => {
      const s = 2 ** f16RowExponent(row);
      return row.map((x) => x * s);
    };
    const mismatch = (name: string, got: Float32Array, rows: number, len: number,
      at: (r: number, c: number) => number) => {
      for (let r = 0; r < rows; r++) {
        const want = scaledRow(Array.from({ length: len }, (_, c) => at(r, c)));
        for (let c = 0; c < len; c++) if (got[r * len +
          c] !== want[c]) return `${name} row ${r} column ${c}: ${got[r * len + c]}, want ${want[c]}`;
      }
      return null;
    };
    expect(mismatch('qh', qh, H * Sp, Dk,
      (r, c) => (r % Sp < S && c < D ? q[(Math.floor(r / Sp) * S + (r % Sp)) * D + c] : 0))).toBeNull();
    expect(mismatch('kh', kh, H * kvp, Dk,
      (r, c) => (r % kvp < kvLen && c < D ? k[(Math.floor(r / kvp) * cap + (r % kvp)) * D + c] : 0))).toBeNull();
    expect(mismatch('vt', vt, H * Dn, 2 * kvp,
      (r, c) => (c % kvp < kvLen && r % Dn < D ?
      v[(Math.floor(r / Dn) * cap + (c % kvp)) * D + (r % Dn)] : 0))).toBeNull();
    for (const t of [qt, kd, vd, out, ...seen]) t.dispose();
  });
});
