// One way to get a GPUDevice in a browser page, in Deno and in Node (npm `webgpu`, Dawn): the options, the adapter
// summary and the request. Its parts: Dawn's setup (dawn.ts), feature negotiation (features.ts) and the device
// watch that turns WebGPU's errors into typed ones (watch.ts).
import { NoWebGpuError } from '../errors.ts';
import { runtimeName, type Runtime } from './runtime.ts';
import { gpuEntries } from './dawn.ts';
import {
  featureStates, matrixConfigs, IN_PASS_TIMESTAMPS, SUBGROUP_MATRIX, WANTED_FEATURES, type FastFeature,
} from './features.ts';

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  runtime: Runtime;
  /** The adapter says it is a fallback adapter (WebGPU's `isFallbackAdapter`: a software implementation). */
  fallback: boolean;
  features: string[];
  limits: Record<string, number>;
  /**
   * Subgroup-matrix (cooperative matrix) configurations, 'f16>f32 16x16x16' = inputs>result MxNxK; [] without the
   * feature.
   */
  subgroupMatrix: string[];
  /** [min, max] subgroup size the adapter reports ([0, 0] when it does not say). */
  subgroupSizes: [number, number];
  /**
   * Dawn's robust buffer access as this library set it (Node: DeviceOptions.robustness); null where the runtime
   * decides.
   */
  robust: boolean | null;
  /**
   * Whether the device got each feature the fast paths use (shader-f16, subgroups, subgroup matrices), and why not:
   * the adapter does not offer it (with what unlocks it in this runtime), or a DeviceOptions flag turned it off.
   */
  fastFeatures: Record<FastFeature, OnOff>;
  /**
   * The kernels' fast paths on this device, and why each one that is off is off (a feature missing, a failed
   * self-check, a CPU driver). Filled in by `Gpu.create` after the device's self-checks (src/kernels/plan/paths.ts);
   * empty until then.
   */
  fastPaths: Record<string, OnOff>;
}

/** A feature or a path: on, or off and why. */
export interface OnOff { on: boolean; why?: string }

export interface DeviceOptions {
  /** Prefer a discrete GPU where there is a choice. Default 'high-performance'. */
  powerPreference?: GPUPowerPreference;
  /**
   * Ask for shader-f16 / subgroups / timestamp-query (with timestamps inside passes where offered) / subgroup
   * matrices when offered (default true each).
   */
  f16?: boolean;
  subgroups?: boolean;
  timestamps?: boolean;
  subgroupMatrix?: boolean;
  /**
   * Treat storage bindings above this many bytes as too large, below the adapter's own limit. Lets tests and
   * users exercise the tensor-splitting paths with small tensors.
   */
  bindingLimit?: number;
  /**
   * Dawn's robust buffer access under Node (npm `webgpu`). Default false: there every shader the device runs is
   * this library's, each keeping its accesses in bounds (tests/gpu/device.test.ts checks the model's bits with
   * and without), so Dawn's `disable_robustness` toggle is set, as native Dawn programs set it in release builds;
   * Tint's clamps and bounds tests around every access otherwise halve the tensor cores' speed (the prefill of
   * HRM-Text-1B on an H200: 96 ms with them, 61 without; bench/results/README.md). true keeps them.
   * Browsers and Deno decide for themselves (Chrome: --enable-dawn-features=disable_robustness).
   */
  robustness?: boolean;
  /** Kernel paths this Gpu takes where there is a choice (src/kernels/plan/options.ts); default the measured best. */
  kernels?: KernelOptions;
  /** Where the Gpu's warnings go (a fast path it gave up at run time); default console.warn. */
  warn?: (message: string) => void;
}

/**
 * A Gpu's kernel-path options. Empty here: src/kernels/plan/options.ts, the planner that reads them, declares the
 * fields
 * (declaration merging), so that this layer names no kernel.
 */
export interface KernelOptions {}

const WANTED_LIMITS = [
  'maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupsPerDimension', 'maxStorageBuffersPerShaderStage', 'maxUniformBufferBindingSize',
  'maxBindGroups', 'maxBindingsPerBindGroup',
] as const;

export { runtimeInfo, runtimeName, type Runtime, type RuntimeInfo } from './runtime.ts';


/** Request an adapter and a device with the adapter's own maxima for buffer/binding limits. */
export async function requestDevice(
  opts: DeviceOptions = {},
): Promise<{ device: GPUDevice; adapter: GPUAdapter; summary: AdapterSummary }> {
  let adapter: GPUAdapter | null = null;
  const entries = await gpuEntries(opts.robustness === true);
  for (const attempt of entries.attempts) {
    adapter = await attempt();
    if (adapter) break;
  }
  if (!adapter) throw new NoWebGpuError('device',
    'no WebGPU adapter found (no GPU driver; on Linux install a Vulkan driver, e.g. `apt-get install chromium` '
    + 'for SwiftShader)');
  const off: Record<string, boolean | undefined> = {
    'shader-f16': opts.f16, subgroups: opts.subgroups, 'timestamp-query': opts.timestamps,
    [IN_PASS_TIMESTAMPS]: opts.timestamps, [SUBGROUP_MATRIX]: opts.subgroupMatrix,
  };
  const want = new Set<string>(WANTED_FEATURES.filter((f) => off[f] !== false));
  const features = [...adapter.features].filter((f) => want.has(f)) as GPUFeatureName[];
  const requiredLimits: Record<string, number> = {};
  for (const k of WANTED_LIMITS) {
    const v = (adapter.limits as unknown as Record<string, number>)[k];
    if (typeof v === 'number') requiredLimits[k] = v;
  }
  const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits, label: 'hrm-webgpu' });
  const info = (adapter.info ?? {}) as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  const limits: Record<string, number> = {};
  for (const k of WANTED_LIMITS) limits[k] = (device.limits as unknown as Record<string, number>)[k];
  const summary: AdapterSummary = {
    vendor: info.vendor ?? '', architecture: info.architecture ?? '', device: info.device ?? '',
    description: info.description ?? '', runtime: runtimeName(),
    fallback: Boolean(info.isFallbackAdapter ??
      (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter), features: [...device.features].sort(), limits,
    subgroupMatrix: device.features.has(SUBGROUP_MATRIX) ? matrixConfigs(info) : [],
    subgroupSizes: [info.subgroupMinSize ?? 0, info.subgroupMaxSize ?? 0], robust: entries.robust,
    fastFeatures: featureStates(new Set(adapter.features), new Set(device.features), opts, runtimeName()),
    fastPaths: {},
  };
  return { device, adapter, summary };
}

/**
 * A CPU implementation of WebGPU (SwiftShader, llvmpipe/lavapipe, WARP, a fallback adapter): correct, but slow
 * enough that kernels pick barrier-free variants and apps should say so.
 */
export function isSoftwareAdapter(s: AdapterSummary): boolean {
  return s.fallback ||
    /swiftshader|llvmpipe|lavapipe|basic render|warp|software/i
      .test(`${s.vendor} ${s.architecture} ${s.device} ${s.description}`);
}
