// The adapter table of the "This device" panel: what the model's worker runs on (vendor, features its device got
// or why not, fast paths, limits) and which kernels run for the loaded model at the chosen settings.
import { isSoftwareAdapter, type ActDtype, type KvStorage } from '../src/index.ts';
import { App, kvFromSelects } from './app.ts';
import { $, fillKv, fillTable } from './dom.ts';
import { fmtBytes } from './memory.ts';

/** Optional WebGPU features the kernels could use, as the worker's device got them (or why not). */
const GPU_FEATURES: ReadonlyArray<[string, string]> = [
  ['shader-f16', 'shader-f16'], ['subgroups', 'subgroups'], ['chromium-experimental-subgroup-matrix',
    'subgroup matrices'], ['timestamp-query', 'timestamp-query'],
];

/**
 * Which kernels run for the loaded model at the chosen settings: the weights' matmul, the attention, the numerics,
 * the optional features used (subgroups in the matrix-vector reduction; tensor cores for bf16 prefill matmuls,
 * where the page was started with Dawn's unsafe APIs and their self-check passed).
 */
function kernelPath(app: App): string {
  const lm = app.lm;
  const q = lm?.quant;
  const dtype = $<HTMLSelectElement>('dtype').value as ActDtype;
  let kv: KvStorage = { k: null, v: null };
  try { kv = kvFromSelects('kv-k', 'kv-v').spec; } catch { /* shown by the memory check */ }
  const weights = !lm ? 'no model loaded'
    : q ? `qlinear (${q.bits}-bit weights, group ${q.groupSize}, dequantized inside the kernel)`
      : `dense matmul (${lm.weightDtype} weights)`;
  const turbo = typeof kv.k === 'string' || typeof kv.v === 'string';
  const attention = turbo ? 'sdpa, the TurboQuant cache side decoded first (turbo_dequant)'
    : kv.k !== null &&
      kv.v !== null ? 'qsdpa_one over the quantized cache for each decoded token (qsdpa for longer blocks)'
      : kv.k !== null ||
        kv.v !== null ? 'sdpa, the quantized cache side dequantized first' : 'sdpa over the full-precision cache';
  const dev = app.device;
  const subgroups = dev && dev.adapter.features.includes('subgroups') && !isSoftwareAdapter(dev.adapter);
  const reduction = subgroups ? 'on subgroups where the units split evenly' : 'in workgroup memory';
  const features = !dev ? '' : `; matrix-vector reduction ${reduction}; prefill matmuls: ${dev.prefillMatmuls}`;
  return `${weights}; ${attention}; f32 math${dtype === 'bf16' ? ' rounded to bf16 where MLX rounds' : ''}${features}`;
}

/** Refresh the adapter table's kernel-path row (after a load, or a dtype / KV change). */
export function showKernelPath(app: App): void {
  const el = document.getElementById('gpu-path');
  if (el) el.textContent = kernelPath(app);
}

/** The worker's adapter: what it is, the features its device got (or why not), the fast paths and the kernel path. */
export function showAdapter(app: App): void {
  const s = app.device!.adapter;
  const enabled = new Set<string>(s.features);
  const why = (f: string) => (s.fastFeatures as Record<string, { why?: string } | undefined>)[f]?.why;
  const has = (f: string) => (enabled.has(f) ? 'yes, in use by the device' : why(f) ? `no: ${why(f)}` : 'no');
  fillKv($('adapter'), [
    ['vendor', s.vendor || '(hidden)'], ['architecture', s.architecture || '(hidden)'], ['description',
      s.description || s.device || '(hidden)'],
    ['software adapter', isSoftwareAdapter(s) ? 'yes (runs on the CPU: slow)' : 'no'],
    ...GPU_FEATURES.map(([f, label]) => [label, has(f)] as [string, string]),
    ...Object.entries(s.fastPaths).map(([path, p]) => [path, p.on ? 'on' : `off: ${p.why}`] as [string, string]),
    ['kernel path', kernelPath(app), 'gpu-path'],
    ['largest buffer', fmtBytes(s.limits.maxBufferSize)], ['largest storage binding',
      fmtBytes(s.limits.maxStorageBufferBindingSize)],
  ]);
  fillTable($('limits'),
    Object.entries(s.limits).map(([k, v]) => [k, v >= 2 ** 20 ? `${v} (${fmtBytes(v)})` : String(v)]));
}
