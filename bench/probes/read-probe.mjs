// Streaming-read bandwidth through Dawn (npm `webgpu`) on random data: how many workgroups and independent 16-byte
// loads per thread a plain read needs to reach the memory bandwidth, and a zero-filled buffer beside it.
// Copied from the project's shared tools (webgpu-read-probe.mjs, issue 30), lines wrapped to the repository's width;
// it now also prints `GBps`, the best random-data form, the ceiling bench's own stream read is held against.
// bench/h200.sh runs it on the fresh GPU before the bench (bundled by bench/pack.sh, with the pack's node and
// enter.sh) and passes its line to the bench as `--read-probe FILE` (kernels.readProbe); one JSON line.
// Seen on the H200, 2026-12-04: 4.2-4.4 TB/s in nearly every form (random data = zeros), 3.6 TB/s at 528 workgroups.
import { create, globals } from 'webgpu';
Object.assign(globalThis, globals);

const gpu = create(['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia,disable_robustness']);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
const device = await adapter.requestDevice({
  requiredFeatures: ['timestamp-query'].filter((f) => adapter.features.has(f)),
  requiredLimits: {
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    maxBufferSize: adapter.limits.maxBufferSize,
  },
});
const BIG = Number(process.env.PROBE_BIG ?? 2 ** 30);
const out = { adapter: adapter.info.description, maxBinding: adapter.limits.maxStorageBufferBindingSize };
const mk = (code) => device.createComputePipeline({
  layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' },
});
const rnd = device.createBuffer({ size: BIG, usage: GPUBufferUsage.STORAGE });
const zero = device.createBuffer({ size: BIG, usage: GPUBufferUsage.STORAGE });
const sink = device.createBuffer({ size: 1 << 20, usage: GPUBufferUsage.STORAGE });
// fill rnd with a hash of the index
const fill = mk(`@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let stride = nw.x * 256u; var i = g.x; let n = arrayLength(&a);
  loop {
    if (i >= n) { break; }
    var x = i * 747796405u + 2891336453u; x = ((x >> ((x >> 28u) + 4u)) ^ x) * 277803737u; a[i] = (x >> 22u) ^ x;
    i += stride;
  } }`);
{
  const e = device.createCommandEncoder(); const p = e.beginComputePass(); p.setPipeline(fill);
  p.setBindGroup(0, device.createBindGroup({
    layout: fill.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: rnd } }],
  }));
  p.dispatchWorkgroups(16384); p.end(); device.queue.submit([e.finish()]); await device.queue.onSubmittedWorkDone();
}
function reader(unroll, kind) {
  const loads = [...Array(unroll).keys()].map((k) => `let v${k} = a[i + ${k}u * stride];`).join(' ');
  const comb = [...Array(unroll).keys()].map((k) => `v${k}`).join(kind === 'xor' ? ' ^ ' : ' + ');
  const T = kind === 'xor' ? 'vec4<u32>' : 'vec4<f32>';
  return mk(`@group(0) @binding(0) var<storage, read> a: array<${T}>;
@group(0) @binding(1) var<storage, read_write> s: array<${T}>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let stride = nw.x * 256u; var acc = ${T}(); var i = g.x; let n = arrayLength(&a);
  loop {
    if (i + ${unroll - 1}u * stride >= n) { break; }
    ${loads} acc ${kind === 'xor' ? '^=' : '+='} ${comb}; i += ${unroll}u * stride;
  }
  loop { if (i >= n) { break; } acc ${kind === 'xor' ? '^=' : '+='} a[i]; i += stride; }
  if (acc.x == ${kind === 'xor' ? '0x12345678u' : '1234.5'}) { s[g.x % 65536u] = acc; } }`);
}
async function time(pipe, buf, groups) {
  const bg = device.createBindGroup({
    layout: pipe.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: buf } }, { binding: 1, resource: { buffer: sink } }],
  });
  const ts = [];
  for (let rep = 0; rep < 5; rep++) {
    const t0 = performance.now();
    const e = device.createCommandEncoder();
    for (let i = 0; i < 20; i++) {
      const p = e.beginComputePass(); p.setPipeline(pipe); p.setBindGroup(0, bg); p.dispatchWorkgroups(groups); p.end();
    }
    device.queue.submit([e.finish()]);
    await device.queue.onSubmittedWorkDone();
    ts.push((performance.now() - t0) / 20);
  }
  ts.shift();
  return +(BIG / (Math.min(...ts) / 1e3) / 1e9).toFixed(0);
}
out.read_GBps = {};
for (const kind of ['xor', 'add']) for (const unroll of [1, 4]) {
  const p = reader(unroll, kind);
  for (const groups of [528, 1056, 2112, 4224, 16896, 65535]) {
    out.read_GBps[`${kind} u${unroll} wg${groups} random`] = await time(p, rnd, groups);
  }
  out.read_GBps[`${kind} u${unroll} wg16896 zeros`] = await time(p, zero, 16896);
}
// The ceiling: the best form on random data (what bench's stream read loads), and which form it was.
const random = Object.entries(out.read_GBps).filter(([k]) => k.endsWith(' random'));
[out.best, out.GBps] = random.reduce((a, b) => (b[1] > a[1] ? b : a));
console.log(JSON.stringify(out));
process.exit(0);
