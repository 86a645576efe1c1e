// Feature detection: which of shader-f16, subgroups and subgroup matrices a device got and why not (featureStates,
// from fake adapter feature sets), and which fast paths run on it and why each is off (fastPaths, from fake devices
// shaped as an H200 in Chrome, a GPU without tensor cores, a CPU driver); then the summary of this machine's device.
import { describe, expect, it } from 'vitest';
import { featureStates, FAST_FEATURES } from '../../src/gpu/features.ts';
import type { Runtime } from '../../src/gpu/runtime.ts';
import { fastPaths } from '../../src/kernels/plan/paths.ts';
import { DECODE_MLP } from '../../src/kernels/plan/matmul.ts';
import { PERSIST_STEP } from '../../src/kernels/plan/persist.ts';
import { Gpu } from '../../src/kernels/gpu.ts';
import { DeviceState } from '../../src/gpu/registry.ts';
import type { KernelOptions } from '../../src/kernels/plan/options.ts';

const SGMAT = 'chromium-experimental-subgroup-matrix';
const ALL = new Set<string>(FAST_FEATURES);

/**
 * A device as the fast paths read it: its features, subgroup sizes, matrix configurations, workgroup memory and
 * kernel options.
 */
interface Fake {
  cpu?: boolean; sizes?: [number, number]; shared?: number; offered?: Iterable<string>; runtime?: Runtime;
  kernels?: KernelOptions;
}

function fakeGpu(granted: Iterable<string>, o: Fake = {}) {
  const features = new Set(granted);
  return {
    cpu: o.cpu ?? false, f16: features.has('shader-f16'), subgroups: features.has('subgroups'),
    state: new DeviceState(), kernelOptions: o.kernels ?? {},
    device: { features, limits: { maxComputeWorkgroupStorageSize: o.shared ?? 65536 } },
    summary: {
      fastFeatures: featureStates(new Set(o.offered ?? features), features, {}, o.runtime ?? 'browser'),
      subgroupMatrix: features.has(SGMAT) ? ['f16>f32 16x16x16', 'f16>f16 16x16x16'] : [],
      subgroupSizes: o.sizes ?? [32, 32],
    },
  } as unknown as Gpu;
}

const PER_OP = "DeviceOptions.kernels.decodeStep is 'per-op' (the default until a GPU measures it)";
const whyOff = (paths: Record<string, { on: boolean; why?: string }>) =>
  Object.fromEntries(Object.entries(paths).map(([k, v]) => [k, v.on ? 'on' : v.why]));
const ABSENT = 'the adapter does not offer it';
const MERGED = 'decode attention merged in its split (one dispatch)';
const TURBO = 'decode attention over TurboQuant caches read from the codes';
const NOT_ENABLED = 'the adapter offers it but the device did not enable it';
const SEPARATE = "DeviceOptions.kernels.decodeMlp is 'separate'";

describe('feature detection', () => {
  it('says whether the device got each feature, and why not', () => {
    const on = { on: true };
    expect(featureStates(ALL, ALL, {}, 'browser')).toEqual({ 'shader-f16': on, subgroups: on, [SGMAT]: on });
    const none = featureStates(new Set(), new Set(), {}, 'browser');
    const f16 = `${ABSENT} (on NVIDIA, Chrome needs --enable-dawn-features=vulkan_enable_f16_on_nvidia)`;
    expect(none['shader-f16']).toEqual({ on: false, why: f16 });
    const unsafe = 'Chrome needs --enable-unsafe-webgpu (Dawn\'s allow_unsafe_apis) and a GPU with cooperative '
      + 'matrices';
    expect(none[SGMAT].why).toBe(`${ABSENT} (${unsafe})`);
    expect(featureStates(new Set(), new Set(), {}, 'deno')[SGMAT].why).toBe(`${ABSENT} (wgpu does not implement it)`);
    expect(featureStates(new Set(), new Set(), {}, 'unknown').subgroups.why).toBe(ABSENT);
    const off = featureStates(ALL, new Set([SGMAT]), { f16: false, subgroups: false }, 'node');
    expect(off['shader-f16'].why).toBe('disabled by option (DeviceOptions.f16: false)');
    expect(off.subgroups.why).toBe('disabled by option (DeviceOptions.subgroups: false)');
    expect(off[SGMAT]).toEqual({ on: true });
    expect(featureStates(ALL, new Set(), {}, 'node').subgroups.why).toBe(NOT_ENABLED);
  });

  it('names the fast paths each device takes, and why each one is off', () => {
    // Every path on, but the persistent decode step: per op until a GPU has measured it (issue 39).
    const all = fastPaths(fakeGpu(ALL, { kernels: { decodeMlp: 'fold' } }));
    expect(Object.keys(all).filter((k) => !all[k].on)).toEqual([PERSIST_STEP]);
    expect(all[PERSIST_STEP].why).toBe(PER_OP);
    expect(fastPaths(fakeGpu(ALL))[DECODE_MLP]).toEqual({ on: false,
      why: "DeviceOptions.kernels.decodeMlp is 'separate'" });
    expect(whyOff(fastPaths(fakeGpu(['shader-f16', 'subgroups'], { offered: ALL, runtime: 'node' })))).toEqual({
      'matrix-vector reductions on subgroups': 'on',
      'prefill matmuls on tensor cores (bf16)': `no ${SGMAT}: ${NOT_ENABLED}`,
      'staged tensor-core kernel (128x128 tiles)': `no ${SGMAT}: ${NOT_ENABLED}`,
      'prefill attention on tensor cores (bf16)': `no ${SGMAT}: ${NOT_ENABLED}`,
      [MERGED]: 'on', [DECODE_MLP]: SEPARATE, [TURBO]: 'on', [PERSIST_STEP]: PER_OP,
    });
    // The tensor cores' kernels want subgroups of exactly 32 and 36 KiB of workgroup memory for the staged tiles.
    const intel = whyOff(fastPaths(fakeGpu(ALL, { sizes: [8, 32] })));
    const sizes = 'subgroup size 8-32; the kernel lays out its tiles for exactly 32';
    expect(intel['prefill matmuls on tensor cores (bf16)']).toBe(sizes);
    expect(whyOff(fastPaths(fakeGpu(ALL, { shared: 16384 })))).toEqual({
      'matrix-vector reductions on subgroups': 'on', 'prefill matmuls on tensor cores (bf16)': 'on',
      'staged tensor-core kernel (128x128 tiles)': '16384 bytes of workgroup memory, 36864 needed',
      'prefill attention on tensor cores (bf16)': '16384 bytes of workgroup memory, 36864 needed',
      [MERGED]: 'on', [DECODE_MLP]: SEPARATE, [TURBO]: 'on', [PERSIST_STEP]: PER_OP,
    });
    // The Gpu's kernel options turn paths off, and say so.
    const kernels: KernelOptions = {
      sgmat: { kernel: 'direct' }, attentionTensorCores: false, decodeMerge: 'separate', turboDecode: 'general',
    };
    expect(whyOff(fastPaths(fakeGpu(ALL, { kernels })))).toEqual({
      'matrix-vector reductions on subgroups': 'on', 'prefill matmuls on tensor cores (bf16)': 'on',
      'staged tensor-core kernel (128x128 tiles)': "DeviceOptions.kernels.sgmat.kernel is 'direct'",
      'prefill attention on tensor cores (bf16)': 'DeviceOptions.kernels.attentionTensorCores is false',
      [MERGED]: "DeviceOptions.kernels.decodeMerge is 'separate'", [DECODE_MLP]: SEPARATE,
      [TURBO]: "DeviceOptions.kernels.turboDecode is 'general'", [PERSIST_STEP]: PER_OP,
    });
    const cpu = whyOff(fastPaths(fakeGpu(['shader-f16', 'subgroups'], { cpu: true })));
    const cpuWhy = 'a CPU driver (the kernels take barrier-free variants there)';
    expect(cpu['matrix-vector reductions on subgroups']).toBe(cpuWhy);
    expect(cpu['prefill matmuls on tensor cores (bf16)']).toMatch(`no ${SGMAT}: ${ABSENT}`);
  });

  it('this machine\'s device carries both in its summary, the options\' reasons included', async () => {
    const gpu = await Gpu.create({ f16: false });
    try {
      const s = gpu.summary;
      for (const f of FAST_FEATURES) expect(s.fastFeatures[f].on).toBe(s.features.includes(f));
      expect(s.fastFeatures['shader-f16']).toEqual({ on: false, why: 'disabled by option (DeviceOptions.f16: false)' });
      expect(s.fastPaths).toEqual(fastPaths(gpu));
      const tensorCores = s.fastPaths['prefill matmuls on tensor cores (bf16)'].why;
      expect(tensorCores).toMatch(/^no (chromium-experimental-subgroup-matrix|shader-f16): /);
      expect(JSON.parse(JSON.stringify(s)).fastPaths).toEqual(s.fastPaths);
    } finally {
      gpu.destroy();
    }
  });
});
