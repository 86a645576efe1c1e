// Feature negotiation: the optional WebGPU features a device asks for (shader-f16, subgroups, timestamps, subgroup
// matrices), whether it got each fast-path feature and why not (what unlocks it per runtime, or the option that turned
// it off), and the adapter's subgroup-matrix configurations. device.ts requests the device with them.
import type { DeviceOptions, OnOff } from './device.ts';
import type { Runtime } from './runtime.ts';

export const SUBGROUP_MATRIX = 'chromium-experimental-subgroup-matrix';
/**
 * Timestamps between the dispatches of one pass (Chrome's Dawn; not in npm `webgpu`, whose passes lack
 * writeTimestamp).
 */
export const IN_PASS_TIMESTAMPS = 'chromium-experimental-timestamp-query-inside-passes';
export const WANTED_FEATURES = ['shader-f16', 'subgroups', 'timestamp-query', IN_PASS_TIMESTAMPS,
  SUBGROUP_MATRIX] as const;

/** Whether `device` writes timestamps inside passes: the feature, and passes that have writeTimestamp. */
export function stampsInPasses(device: GPUDevice): boolean {
  if (!device.features.has('timestamp-query') ||
    !device.features.has(IN_PASS_TIMESTAMPS as GPUFeatureName)) return false;
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

/** The adapter's subgroup-matrix configurations as 'f16>f32 16x16x16' (component>result MxNxK). */
export function matrixConfigs(info: GPUAdapterInfo): string[] {
  type MatrixConfig = { componentType: string; resultComponentType: string; M: number; N: number; K: number };
  const configs = (info as { subgroupMatrixConfigs?: MatrixConfig[] }).subgroupMatrixConfigs ?? [];
  return configs.map((c) => `${c.componentType}>${c.resultComponentType} ${c.M}x${c.N}x${c.K}`);
}
