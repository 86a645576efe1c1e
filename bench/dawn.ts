// Node only: open Dawn with timestamp quantization off, then let the library's Gpu.create find it as
// navigator.gpu. Dawn rounds GPU timestamps down to 2^16 ns (65.5 us) by default, which turns the per-dispatch
// timings of a decode step (most dispatches take 3-60 us on an H200) into 0 or 65.5 us. The toggle
// `disable-dawn-features=timestamp_quantization` restores nanoseconds. The adapter search mirrors
// src/tensor/device.ts (the system's Vulkan driver, then Chromium's SwiftShader).
import { runtimeName } from '../src/tensor/device.ts';

const SWIFTSHADER = '/usr/lib/chromium/vk_swiftshader_icd.json';
/** Dawn instances must outlive their adapters (a collected instance crashes Dawn): keep them all. */
const instances: unknown[] = [];

/** Returns how timestamps will be taken, or undefined when this is not Node (or navigator.gpu already exists). */
export async function exactDawnTimestamps(): Promise<string | undefined> {
  const g = globalThis as { navigator?: { gpu?: unknown } };
  if (runtimeName() !== 'node' || g.navigator?.gpu) return undefined;
  const spec = 'webgpu';
  const mod = (await import(/* @vite-ignore */ spec)) as { create(flags: string[]): GPU; globals: object };
  Object.assign(globalThis, mod.globals);
  const flags = ['disable-dawn-features=timestamp_quantization'];
  const env = (globalThis as unknown as { process: { env: Record<string, string | undefined> } }).process.env;
  const open = async (): Promise<GPU | null> => {
    const gpu = mod.create(flags);
    instances.push(gpu);
    return (await gpu.requestAdapter({ powerPreference: 'high-performance' })) ? gpu : null;
  };
  let gpu = await open();
  if (!gpu && !env.VK_ICD_FILENAMES) {
    const fs = (await import(/* @vite-ignore */ 'node:' + 'fs')) as typeof import('node:fs');
    if (fs.existsSync(SWIFTSHADER)) {
      env.VK_ICD_FILENAMES = SWIFTSHADER;
      gpu = await open();
    }
  }
  if (!gpu) return undefined; // the library will report that there is no adapter
  if (g.navigator) g.navigator.gpu = gpu;
  else Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  return 'timestamp-query, Dawn toggle disable-dawn-features=timestamp_quantization (ns resolution)';
}
