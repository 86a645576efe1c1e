// Dawn's setup under Node (npm `webgpu`): the adapter attempts of this runtime (navigator.gpu where there is one,
// else Dawn through a specifier bundlers leave alone, so browser bundles never see it), the toggles it is created
// with, SwiftShader as the fallback driver, and its two stderr lines kept off the terminal. device.ts requests the
// device from the adapter it gets.
import { NoWebGpuError } from '../errors.ts';
import { runtimeName } from './runtime.ts';

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
export async function gpuEntries(
  robust: boolean,
): Promise<{ attempts: Array<() => Promise<GPUAdapter | null>>; robust: boolean | null }> {
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
  if (runtimeName() !== 'node') throw new NoWebGpuError('device',
    'this runtime has no navigator.gpu (WebGPU is off or unsupported)');
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
  const instance = (): GPU => { const g = mod.create([DAWN_EXACT_TIMESTAMPS,
    toggles]); dawnInstances.push(g); return g; };
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
