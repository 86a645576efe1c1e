// quant/affine.inc.wgsl's div_rn, the correctly rounded f32 quotient every quantizer divides with (WGSL's `/` may
// be 2.5 ulp off, and levels often sit on exact halves): its bits against Math.fround(a / b), which is correctly
// rounded for f32 operands (a double quotient rounded to f32 has no double-rounding error for division). Cases:
// quotients next to a rounding midpoint (where a quotient guess a unit off would flip the result), the quantizers'
// own divisors (2^bits - 1, scales, levels), subnormal operands, signs, exact quotients, and results near f32's
// largest; results below the normal range are left to `/` and not checked here.
import { describe, expect, test } from 'vitest';
import { readFileSync } from 'node:fs';
import { getGpu } from '../../helpers/gpu.ts';
import { rng } from '../../../testkit/helpers/seeded.ts';

const AFFINE = readFileSync(new URL('../../../src/kernels/quant/affine.inc.wgsl', import.meta.url), 'utf8');
const SHADER = `${AFFINE}
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> q: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < arrayLength(&q)) { q[g.x] = bitcast<u32>(div_rn(a[g.x], b[g.x])); }
}`;

const f32 = (x: number) => Math.fround(x);
const bits = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0];
const fromBits = (u: number) => new Float32Array(new Uint32Array([u >>> 0]).buffer)[0];

/** Operand pairs: [a, b], both f32 values. */
function cases(): Array<[number, number]> {
  const r = rng(7);
  const out: Array<[number, number]> = [];
  const sig = () => 1 + Math.floor(r() * 2 ** 23) / 2 ** 23;
  const pm = () => (r() < 0.5 ? -1 : 1);
  // Anywhere in the normal range.
  for (let i = 0; i < 4000; i++) out.push([f32(pm() * sig() * 2 ** Math.floor(r() * 120 - 60)),
    f32(pm() * sig() * 2 ** Math.floor(r() * 120 - 60))]);
  // Quotients within an ulp's fraction of a midpoint: a = b * (m + 1/2 + tiny) ulps, rounded to f32.
  for (let i = 0; i < 4000; i++) {
    const b = f32(sig() * 2 ** Math.floor(r() * 20 - 10));
    const m = 2 ** 23 + Math.floor(r() * 2 ** 23);
    out.push([f32(b * ((m + 0.5 + (r() - 0.5) * 1e-3) / 2 ** 23)), b]);
  }
  // The quantizers' divisions: ranges by 2^bits - 1, values minus a bias by a scale, an edge by its level.
  for (const n of [3, 7, 15, 31, 63, 255]) {
    for (let i = 0; i < 300; i++) {
      const range = f32(r() * 8 * 2 ** Math.floor(r() * 10 - 5));
      const scale = f32(range / n);
      out.push([range, n], [f32((r() * n) * scale), scale], [f32(-range * r()), f32(Math.round(r() * n) || 1)]);
      out.push([f32((Math.floor(r() * n) + 0.5) * scale), scale]);   // levels on (rounded) halves
    }
  }
  // Subnormal operands, exact quotients, results near f32's largest.
  for (let i = 0; i < 200; i++) {
    const sub = () => fromBits(1 + Math.floor(r() * 0x7fffff));   // a nonzero subnormal
    out.push([sub(), f32(sig() * 2 ** -140)], [f32(sig() * 2 ** -100), sub()]);
    const q = Math.floor(r() * 4096) + 1, b = f32(sig());
    out.push([f32(q * b), b], [f32(3.4e38 * r()), f32(0.5 + r())]);
  }
  out.push([0, 3], [-0, 7], [1, 3], [2, 3], [1e-7, 15], [-1e-7, 255]);
  return out;
}

describe('div_rn', () => {
  test('is the correctly rounded f32 quotient', async () => {
    const gpu = await getGpu();
    const d = gpu.device;
    const pairs = cases();
    const n = pairs.length;
    const buf = (data: Float32Array<ArrayBuffer> | null, usage: number) => {
      const b = d.createBuffer({ size: 4 * n, usage });
      if (data) d.queue.writeBuffer(b, 0, data);
      return b;
    };
    const a = buf(Float32Array.from(pairs, (p) => p[0]), GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
    const b = buf(Float32Array.from(pairs, (p) => p[1]), GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
    const q = buf(null, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    const read = buf(null, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    const pipeline = d.createComputePipeline({ layout: 'auto',
      compute: { module: d.createShaderModule({ code: SHADER }), entryPoint: 'main' } });
    const enc = d.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0,
      d.createBindGroup({ layout: pipeline.getBindGroupLayout(0),
      entries: [a, b, q].map((buffer, binding) => ({ binding, resource: { buffer } })) }));
    pass.dispatchWorkgroups(Math.ceil(n / 64));
    pass.end();
    enc.copyBufferToBuffer(q, 0, read, 0, 4 * n);
    d.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const got = new Uint32Array(read.getMappedRange().slice(0));
    read.unmap();
    for (const x of [a, b, q, read]) x.destroy();
    let checked = 0;
    const wrong: string[] = [];
    pairs.forEach(([x, y], i) => {
      const want = f32(x / y);
      if (want !== 0 && Math.abs(want) < 2 ** -126) return;   // below the normal range: `/`
      checked++;
      if (got[i] !== bits(want)) wrong.push(`${x} / ${y}: got ${fromBits(got[i])}, want ${want}`);
    });
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(checked).toBeGreaterThan(n * 0.9);
  });
});
