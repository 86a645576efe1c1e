// One way to get a GPUDevice in a browser page, in Deno and in Node (npm `webgpu`, Dawn). The Node binding is
// imported only when there is no navigator.gpu, through a specifier bundlers leave alone, so browser bundles
// never see it. Also owns the error plumbing: validation / out-of-memory / internal errors become typed errors.
import { DeviceLostError, GpuOutOfMemoryError, GpuValidationError, HrmError, NoWebGpuError } from '../errors.ts';
import { runtimeName, type Runtime } from './runtime.ts';

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
  /** Subgroup-matrix (cooperative matrix) configurations, 'f16>f32 16x16x16' = inputs>result MxNxK; [] without the feature. */
  subgroupMatrix: string[];
  /** [min, max] subgroup size the adapter reports ([0, 0] when it does not say). */
  subgroupSizes: [number, number];
  /** Dawn's robust buffer access as this library set it (Node: DeviceOptions.robustness); null where the runtime decides. */
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
}

/**
 * A Gpu's kernel-path options. Empty here: src/kernels/plan/options.ts, the planner that reads them, declares the fields
 * (declaration merging), so that this layer names no kernel.
 */
export interface KernelOptions {}

const SUBGROUP_MATRIX = 'chromium-experimental-subgroup-matrix';
/** Timestamps between the dispatches of one pass (Chrome's Dawn; not in npm `webgpu`, whose passes lack writeTimestamp). */
export const IN_PASS_TIMESTAMPS = 'chromium-experimental-timestamp-query-inside-passes';
const WANTED_FEATURES = ['shader-f16', 'subgroups', 'timestamp-query', IN_PASS_TIMESTAMPS, SUBGROUP_MATRIX] as const;

/** Whether `device` writes timestamps inside passes: the feature, and passes that have writeTimestamp. */
export function stampsInPasses(device: GPUDevice): boolean {
  if (!device.features.has('timestamp-query') || !device.features.has(IN_PASS_TIMESTAMPS as GPUFeatureName)) return false;
  const pass = device.createCommandEncoder({ label: 'probe' }).beginComputePass();
  const ok = typeof (pass as unknown as { writeTimestamp?: unknown }).writeTimestamp === 'function';
  pass.end();   // the encoder is dropped unfinished
  return ok;
}
/** The optional features fast paths run on (timestamp-query only times them). */
export type FastFeature = 'shader-f16' | 'subgroups' | 'chromium-experimental-subgroup-matrix';
export const FAST_FEATURES: readonly FastFeature[] = ['shader-f16', 'subgroups', SUBGROUP_MATRIX];
/** The DeviceOptions flag that turns each feature off. */
const FEATURE_OPTION: Record<FastFeature, 'f16' | 'subgroups' | 'subgroupMatrix'> = {
  'shader-f16': 'f16', subgroups: 'subgroups', [SUBGROUP_MATRIX]: 'subgroupMatrix',
};
/** What unlocks a feature an adapter does not offer, per runtime (where it depends on more than the hardware). */
const UNLOCK: Record<FastFeature, Partial<Record<Runtime, string>>> = {
  'shader-f16': {
    browser: 'on NVIDIA, Chrome needs --enable-dawn-features=vulkan_enable_f16_on_nvidia',
    node: 'this library sets Dawn\'s vulkan_enable_f16_on_nvidia: the GPU or its driver lacks 16-bit shader floats',
  },
  subgroups: { browser: 'Chrome offers it from version 134 where the GPU has subgroup operations' },
  [SUBGROUP_MATRIX]: {
    browser: 'Chrome needs --enable-unsafe-webgpu (Dawn\'s allow_unsafe_apis) and a GPU with cooperative matrices',
    node: 'this library sets Dawn\'s allow_unsafe_apis: the GPU or its Vulkan driver has no cooperative matrices',
    deno: 'wgpu does not implement it',
  },
};

/** Whether a device got each fast-path feature: the adapter's offer, the device's grant, the options that asked. */
export function featureStates(
  offered: ReadonlySet<string>, granted: ReadonlySet<string>, opts: DeviceOptions, runtime: Runtime,
): Record<FastFeature, OnOff> {
  const out = {} as Record<FastFeature, OnOff>;
  for (const f of FAST_FEATURES) {
    const hint = UNLOCK[f][runtime];
    const option = FEATURE_OPTION[f];
    out[f] = granted.has(f) ? { on: true }
      : opts[option] === false ? { on: false, why: `disabled by option (DeviceOptions.${option}: false)` }
      : !offered.has(f) ? { on: false, why: `the adapter does not offer it${hint ? ` (${hint})` : ''}` }
      : { on: false, why: 'the adapter offers it but the device did not enable it' };
  }
  return out;
}
const WANTED_LIMITS = [
  'maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupsPerDimension', 'maxStorageBuffersPerShaderStage', 'maxUniformBufferBindingSize',
  'maxBindGroups', 'maxBindingsPerBindGroup',
] as const;

export { runtimeInfo, runtimeName, type Runtime, type RuntimeInfo } from './runtime.ts';

const dawnInstances: GPU[] = [];
/** The Dawn toggle that keeps timestamp queries at nanosecond resolution (Node only). */
export const DAWN_EXACT_TIMESTAMPS = 'disable-dawn-features=timestamp_quantization';
/**
 * Dawn toggles that unlock features a real GPU has (Node only; in Chrome the same come from the command line,
 * --enable-unsafe-webgpu and --enable-dawn-features=...): allow_unsafe_apis exposes
 * chromium-experimental-subgroup-matrix (tensor cores through VK_KHR_cooperative_matrix), and
 * vulkan_enable_f16_on_nvidia exposes shader-f16, which Dawn blocks on NVIDIA by default. A Dawn without one of
 * them ignores it; adapters without the hardware simply do not offer the features.
 */
export const DAWN_FEATURE_TOGGLES = 'enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia';

/** The GPU entry point of this runtime: navigator.gpu, or Dawn's through npm `webgpu` under Node. */
async function gpuEntries(robust: boolean): Promise<{ attempts: Array<() => Promise<GPUAdapter | null>>; robust: boolean | null }> {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  if (nav?.gpu) {
    // Asked again after a pause: headless Chrome on the H200 answered null to a page's first request while its GPU
    // process came up ("A valid external Instance reference no longer exists"), and an adapter a moment later.
    const ask = (pauseMs: number) => async () => {
      if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
      return nav.gpu!.requestAdapter();
    };
    return { attempts: [ask(0), ask(1000), ask(3000)], robust: null };
  }
  if (runtimeName() !== 'node') throw new NoWebGpuError('device', 'this runtime has no navigator.gpu (WebGPU is off or unsupported)');
  const spec = 'webgpu';
  const mod = (await import(/* @vite-ignore */ spec)) as { create(o: string[]): GPU; globals: object };
  Object.assign(globalThis, mod.globals);
  const env = (globalThis as unknown as { process: { env: Record<string, string | undefined> } }).process.env;
  // First whatever Vulkan driver the system has (a real GPU, or a recent lavapipe); then SwiftShader, which
  // Debian's chromium package ships, for machines whose system driver Dawn cannot use.
  // Dawn instances are kept alive for the life of the process: letting a failed one be garbage-collected
  // crashes Dawn (std::system_error from a destructor thread).
  // Dawn rounds GPU timestamps to 65.5 us by default, which erases per-dispatch timings: ask for nanoseconds.
  // Unless DeviceOptions.robustness asks for it, Dawn's robustness is off (see there).
  const toggles = robust ? DAWN_FEATURE_TOGGLES : `${DAWN_FEATURE_TOGGLES},disable_robustness`;
  const instance = (): GPU => { const g = mod.create([DAWN_EXACT_TIMESTAMPS, toggles]); dawnInstances.push(g); return g; };
  const fs = (await import(/* @vite-ignore */ 'node:' + 'fs')) as typeof import('node:fs');
  const attempts: Array<() => Promise<GPUAdapter | null>> = [
    () => withoutNativeStderr(fs, () => instance().requestAdapter({ powerPreference: 'high-performance' })),
  ];
  const swiftshader = '/usr/lib/chromium/vk_swiftshader_icd.json';
  if (!env.VK_ICD_FILENAMES && fs.existsSync(swiftshader)) {
    // Only while Dawn loads the driver: child processes (a Deno test, a tool) keep the system's driver.
    attempts.push(async () => {
      env.VK_ICD_FILENAMES = swiftshader;
      try {
        return await withoutNativeStderr(fs, () => instance().requestAdapter());
      } finally {
        delete env.VK_ICD_FILENAMES;
      }
    });
  }
  return { attempts, robust };
}

/**
 * Runs `start` (a requestAdapter call) with file descriptor 2 pointed at /dev/null, and gives it back before
 * awaiting: Dawn reads the adapter's limits synchronously inside the call, and on drivers that offer more dynamic
 * buffers than it supports (lavapipe, RADV: 1000000 and 500000) prints two lines with fprintf(stderr), before
 * any device or limit is requested ("maxDynamic...BuffersPerPipelineLayout artificially reduced"), which no
 * option of Dawn or the binding turns off. Those lines would be the first thing every command prints. Only where
 * fd 2 is a pipe or a terminal (Linux: /proc/self/fd reopens it as the same pipe or tty), as Node has no dup(). A
 * socket (a Node parent's default stdio) cannot be reopened, and a regular file would lose the offset it shares
 * with stdout (`> log 2>&1`): there Dawn's lines stay.
 */
function withoutNativeStderr<T>(fs: typeof import('node:fs'), start: () => Promise<T>): Promise<T> {
  let saved = -1;
  try {
    const st = fs.fstatSync(2);
    // 0 and 1 open too, so that 2 is the lowest descriptor free once closed, which open() then takes.
    fs.fstatSync(0);
    fs.fstatSync(1);
    if (st.isFIFO() || st.isCharacterDevice()) saved = fs.openSync('/proc/self/fd/2', fs.constants.O_WRONLY);
  } catch { /* no /proc (macOS, Windows) or a standard descriptor closed: Dawn's lines stay */ }
  if (saved < 0) return start();
  const { O_WRONLY } = fs.constants;
  fs.closeSync(2);
  let nul = -1;
  try {
    nul = fs.openSync('/dev/null', O_WRONLY);
    return start();
  } finally {
    if (nul >= 0) fs.closeSync(nul);
    fs.openSync(`/proc/self/fd/${saved}`, O_WRONLY); // takes 2 again: the lowest free descriptor
    fs.closeSync(saved);
  }
}

/** Request an adapter and a device with the adapter's own maxima for buffer/binding limits. */
export async function requestDevice(opts: DeviceOptions = {}): Promise<{ device: GPUDevice; adapter: GPUAdapter; summary: AdapterSummary }> {
  let adapter: GPUAdapter | null = null;
  const entries = await gpuEntries(opts.robustness === true);
  for (const attempt of entries.attempts) {
    adapter = await attempt();
    if (adapter) break;
  }
  if (!adapter) throw new NoWebGpuError('device', 'no WebGPU adapter found (no GPU driver; on Linux install a Vulkan driver, e.g. `apt-get install chromium` for SwiftShader)');
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
    fallback: Boolean(info.isFallbackAdapter ?? (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter), features: [...device.features].sort(), limits,
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
  return s.fallback || /swiftshader|llvmpipe|lavapipe|basic render|warp|software/i.test(`${s.vendor} ${s.architecture} ${s.device} ${s.description}`);
}

/** The adapter's subgroup-matrix configurations as 'f16>f32 16x16x16' (component>result MxNxK). */
function matrixConfigs(info: GPUAdapterInfo): string[] {
  const configs = (info as { subgroupMatrixConfigs?: Array<{ componentType: string; resultComponentType: string; M: number; N: number; K: number }> }).subgroupMatrixConfigs ?? [];
  return configs.map((c) => `${c.componentType}>${c.resultComponentType} ${c.M}x${c.N}x${c.K}`);
}

/** Turns a GPUError popped from an error scope into the matching typed error. */
export function toTypedError(op: string, err: GPUError): HrmError {
  const kind = err.constructor?.name ?? '';
  if (kind.includes('OutOfMemory')) return new GpuOutOfMemoryError(op, `out of GPU memory: ${err.message}`);
  if (kind.includes('Internal')) return new GpuValidationError(op, `internal GPU error: ${err.message}`);
  return new GpuValidationError(op, `WebGPU validation failed: ${err.message}`);
}

/** Watches the device: remembers loss and errors nobody captured, so the next call can report them. */
export class DeviceWatch {
  lost: GPUDeviceLostInfo | null = null;
  uncaptured: GPUError | null = null;

  constructor(device: GPUDevice) {
    device.lost.then((info) => { this.lost = info; });
    device.addEventListener?.('uncapturederror', (e: Event) => { this.uncaptured ??= (e as GPUUncapturedErrorEvent).error; });
  }

  /** Throw if the device is gone or an uncaptured error is pending. */
  check(op: string): void {
    if (this.lost) {
      throw new DeviceLostError(op, `the GPU device was lost (${this.lost.reason}: ${this.lost.message}); reload or create a new device`);
    }
    if (this.uncaptured) {
      const e = this.uncaptured;
      this.uncaptured = null;
      throw toTypedError(op, e);
    }
  }
}
