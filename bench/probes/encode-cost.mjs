// What one dispatch costs JavaScript and Dawn to encode and submit, by call pattern and bind group size: the price a
// replayed decode step pays per dispatch (src/gpu/capture.ts replay: setPipeline where it changes, setBindGroup,
// dispatchWorkgroups). `node bench/probes/encode-cost.mjs` (webgpu from node_modules; on the H200 after bench/h200.sh's
// enter.sh); one JSON line per pattern: microseconds per dispatch to encode (pass calls, end, finish) and to submit.
// Dispatches of 1 workgroup doing nothing measurable; medians of 25 batches of 800 after 5 warm-up batches.
const { create, globals } = await import('webgpu');
Object.assign(globalThis, globals);
const gpu = create(['enable-dawn-features=allow_unsafe_apis']);
globalThis.encodeCostDawn = gpu;   // a Dawn instance collected before its device crashes Dawn
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) throw new Error('[encode-cost] no WebGPU adapter');
const device = await adapter.requestDevice({
  requiredLimits: { maxStorageBuffersPerShaderStage: Math.min(16, adapter.limits.maxStorageBuffersPerShaderStage) },
});
const N = 800;
const median = (a) => a.sort((x, y) => x - y)[a.length >> 1];

/**
 * Per-dispatch calls of each pattern: the replay's (pipelines alternating), without setPipeline, fewer arguments,
 * dispatch alone.
 */
const PATTERNS = {
  'setPipeline + setBindGroup + dispatch(x, y, z)': (pass, p, bg) => {
    pass.setPipeline(p); pass.setBindGroup(0, bg); pass.dispatchWorkgroups(1, 1, 1);
  },
  'setBindGroup + dispatch(x, y, z)': (pass, _p, bg) => { pass.setBindGroup(0, bg); pass.dispatchWorkgroups(1, 1, 1); },
  'setPipeline + setBindGroup + dispatch(x)': (pass, p, bg) => {
    pass.setPipeline(p); pass.setBindGroup(0, bg); pass.dispatchWorkgroups(1);
  },
  'dispatch(x) only': (pass) => { pass.dispatchWorkgroups(1); },
};

for (const storage of [1, 4, 8, 12]) {
  const decl = Array.from({ length: storage },
    (_, i) => `@group(0) @binding(${i + 1}) var<storage, read_write> b${i}: array<f32>;`).join('\n');
  const body = Array.from({ length: storage }, (_, i) => `b${i}[0] += f32(p.a);`).join(' ');
  const code = `struct P { a: u32 }\n@group(0) @binding(0) var<uniform> p: P;\n${decl}\n` +
    '@compute @workgroup_size(64)\n' +
    `fn main(@builtin(global_invocation_id) g: vec3u) { if (g.x == 0u) { ${body} } }`;
  const module = device.createShaderModule({ code });
  const pipes = [0, 1].map(() =>
    device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } }));
  const bufs = Array.from({ length: 32 }, () => device.createBuffer({ size: 4096, usage: GPUBufferUsage.STORAGE }));
  const uniforms = device.createBuffer({ size: 256 * N, usage: GPUBufferUsage.UNIFORM });
  for (const [name, call] of Object.entries(PATTERNS)) {
    const same = !name.startsWith('setPipeline');
    const bgs = Array.from({ length: N }, (_, i) => device.createBindGroup({
      layout: pipes[same ? 0 : i % 2].getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: uniforms, offset: 256 * i, size: 16 } },
        ...Array.from({ length: storage },
          (_, j) => ({ binding: j + 1, resource: { buffer: bufs[(i * 3 + j * 7) % 32] } }))],
    }));
    const enc = [], sub = [];
    for (let rep = 0; rep < 30; rep++) {
      const t0 = performance.now();
      const e = device.createCommandEncoder();
      const pass = e.beginComputePass();
      if (same) { pass.setPipeline(pipes[0]); pass.setBindGroup(0, bgs[0]); }
      for (let i = 0; i < N; i++) call(pass, pipes[i % 2], bgs[i]);
      pass.end();
      const cb = e.finish();
      const t1 = performance.now();
      device.queue.submit([cb]);
      const t2 = performance.now();
      await device.queue.onSubmittedWorkDone();
      if (rep >= 5) { enc.push(t1 - t0); sub.push(t2 - t1); }
    }
    const us = (ms) => +(median(ms) / N * 1000).toFixed(3);
    console.log(JSON.stringify({ pattern: name, bindings: storage + 1, encodeUs: us(enc), submitUs: us(sub) }));
  }
}
process.exit(0);
