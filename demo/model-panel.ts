// The model panel: adapter details, model sources (embedded, URL, folder picker, drop), the memory estimate and
// fit check before any weight is downloaded, download and GPU-upload progress, and the download cache.
import type { Gpu } from '../src/tensor/gpu.ts';
import { loadConfig, loadModel } from '../src/hrm/load.ts';
import { cacheSlots, parameterCount, type HrmConfig } from '../src/hrm/config.ts';
import type { ActDtype } from '../src/hrm/cache.ts';
import { App, kvFromSelects } from './app.ts';
import { $, fillKv, fillTable, setProgress } from './dom.ts';
import { fmtBytes, memoryPlan, weightFiles, WontFitError } from './memory.ts';
import { cacheAvailable, cacheUsage, clearCache, evictNewEntries, isCached, prefetch, trackNewEntries } from './cached-fetch.ts';
import { droppedFiles, embeddedSource, folderSource, urlSource, type ModelSource } from './sources.ts';

/** Where the last model loaded from a URL (or "embedded") is remembered across reloads. */
const LAST_MODEL = 'hrm-webgpu-demo.last-model';

/**
 * The source to open on start: the last URL model loaded when it is still in the download cache (a reload must not
 * start a download of gigabytes), else the embedded one (with the URL filled in, to load it by hand).
 */
export async function startSource(): Promise<ModelSource> {
  let url: string | null = null;
  try { url = localStorage.getItem(LAST_MODEL); } catch { /* storage blocked: start on the embedded model */ }
  if (url && url !== 'embedded') {
    try {
      $<HTMLInputElement>('model-url').value = url;
      const src = urlSource(url);
      if (await isCached(`${src.base}/config.json`)) return src;
    } catch { /* a stale entry: ignore it */ }
  }
  return embeddedSource();
}

function remember(source: ModelSource): void {
  const v = source.kind === 'url' ? source.base : source.kind === 'embedded' ? 'embedded' : null;
  try { if (v) localStorage.setItem(LAST_MODEL, v); } catch { /* storage blocked: nothing to remember with */ }
}

/** Optional WebGPU features the kernels could use, as the adapter offers them and the device got them. */
const GPU_FEATURES: ReadonlyArray<[string, string]> = [
  ['shader-f16', 'shader-f16'], ['subgroups', 'subgroups'], ['chromium-experimental-subgroup-matrix', 'subgroup matrices'], ['timestamp-query', 'timestamp-query'],
];

/** What the memory table describes: the loaded model, or one being checked before its download. */
let sizing: { config: HrmConfig; weights: number; exactWeights: boolean } | null = null;

/** A CPU implementation (SwiftShader, llvmpipe/lavapipe, WARP): correct but slow. */
export function isSoftwareAdapter(gpu: Gpu): boolean {
  const s = gpu.summary;
  const info = gpu.adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  return Boolean(info?.isFallbackAdapter) || /swiftshader|llvmpipe|lavapipe|warp|software/i.test(`${s.description} ${s.vendor} ${s.architecture} ${s.device}`);
}

export function showAdapter(gpu: Gpu): void {
  const s = gpu.summary;
  const offered = new Set<string>(gpu.adapter.features);
  const enabled = new Set<string>(gpu.device.features);
  const has = (f: string) => (enabled.has(f) ? 'yes, in use by the device' : offered.has(f) ? 'offered, not requested' : 'no');
  fillKv($('adapter'), [
    ['vendor', s.vendor || '(hidden)'], ['architecture', s.architecture || '(hidden)'], ['description', s.description || s.device || '(hidden)'],
    ['software adapter', isSoftwareAdapter(gpu) ? 'yes (runs on the CPU: slow)' : 'no'],
    ...GPU_FEATURES.map(([f, label]) => [label, has(f)] as [string, string]),
    // The model's kernels need no optional feature yet: say which path runs rather than imply a faster one.
    ['kernel path', 'portable f32 kernels (bf16 rounding emulated); no optional feature used', 'gpu-path'],
    ['largest buffer', fmtBytes(s.limits.maxBufferSize)], ['largest storage binding', fmtBytes(s.limits.maxStorageBufferBindingSize)],
  ]);
  fillTable($('limits'), Object.entries(s.limits).map(([k, v]) => [k, v >= 2 ** 20 ? `${v} (${fmtBytes(v)})` : String(v)]));
}

function status(text: string, state: 'loading' | 'ready' | 'kept' | 'error' | 'idle'): void {
  const el = $('model-status');
  el.textContent = text;
  el.dataset.state = state;
}

/** Re-estimate memory for the model being sized at the chosen context, dtype and KV cache. */
export function updateMemory(app: App): ReturnType<typeof memoryPlan> | null {
  if (!sizing || !app.gpu) return null;
  const { config } = sizing;
  const ctxEl = $<HTMLInputElement>('mem-ctx');
  ctxEl.max = String(config.max_position_embeddings);
  const ctx = Math.max(1, Math.min(Number(ctxEl.value) || config.max_position_embeddings, config.max_position_embeddings));
  const dtype = $<HTMLSelectElement>('dtype').value as ActDtype;
  let kv;
  try { kv = kvFromSelects('kv-k', 'kv-v'); } catch { return null; }
  const lim = app.gpu.summary.limits;
  const deviceMemory = (navigator as Navigator & { deviceMemory?: number }).deviceMemory;
  const plan = memoryPlan(config, sizing.weights, ctx, dtype, kv.spec, { maxBufferSize: lim.maxBufferSize, maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize, deviceMemory });
  fillTable($<HTMLTableElement>('memory'), [
    ['weights', `${fmtBytes(plan.weights)}${sizing.exactWeights ? '' : ' (est.)'}`],
    [`KV cache (${ctx} tokens, ${kv.label.replace('ctk=', 'K ').replace(',ctv=', ', V ')}, ${cacheSlots(config)} slots)`, fmtBytes(plan.cache)],
    ['activations (rough)', fmtBytes(plan.activations)],
    ['total', fmtBytes(plan.total)],
  ]);
  const v = $('mem-verdict');
  v.dataset.verdict = plan.verdict;
  v.textContent = plan.verdict === 'ok' ? 'Fits this adapter.' : `${plan.verdict === 'no' ? 'Will not fit' : 'May not fit'}: ${plan.reasons.join('; ')}.`;
  return plan;
}

function describeModel(name: string, c: HrmConfig, checkpoint?: string): void {
  fillKv($('model-info'), [
    ['model', name], ...(checkpoint ? [['checkpoint', checkpoint] as [string, string]] : []),
    ['parameters', `${(parameterCount(c) / 1e6).toFixed(2)} M`],
    ['shape', `hidden ${c.hidden_size}, ${c.num_layers_per_stack} layers/stack, ${c.num_attention_heads}×${c.head_dim} heads, H${c.H_cycles} L${c.L_cycles}`],
    ['vocabulary', String(c.vocab_size)], ['context', `${c.max_position_embeddings} tokens`],
  ]);
}

export async function refreshCacheUsage(): Promise<void> {
  const el = $('cache-usage');
  if (!cacheAvailable()) { el.textContent = 'Cache Storage is unavailable here (needs https or localhost): downloads are not kept.'; return; }
  const u = await cacheUsage();
  const quota = u.quota ? `; this site may store up to ${fmtBytes(u.quota)}` : '';
  el.textContent = `${u.files} file${u.files === 1 ? '' : 's'} cached, ${fmtBytes(u.bytes)}${quota}.`;
}

/** Check, download (URL sources), upload; the current model stays in place if anything fails. */
export async function openModel(app: App, source: ModelSource): Promise<void> {
  const before = app.lm?.name;
  const ok = await app.run('load', async (signal) => {
    trackNewEntries();
    const gpu = app.gpu!;
    const files = source.files;
    setProgress($('dl-progress'), $('dl-text'), 0, 0);
    setProgress($('up-progress'), $('up-text'), 0, 0);
    status(`Reading ${files.name}/config.json…`, 'loading');
    const config = await loadConfig(files);
    const wf = await weightFiles(files, config);
    sizing = { config, weights: wf.total, exactWeights: wf.exact };
    describeModel(files.name, config);
    if (!$<HTMLInputElement>('mem-ctx').dataset.touched) $<HTMLInputElement>('mem-ctx').value = String(config.max_position_embeddings);
    const plan = updateMemory(app);
    if (plan?.verdict === 'no' && !$<HTMLInputElement>('skip-check').checked) throw new WontFitError(plan.reasons);
    if (source.kind === 'url' && source.base) {
      const total = wf.total;
      let done = 0;
      for (let i = 0; i < wf.names.length; i++) {
        status(`Downloading ${wf.names[i]} (${i + 1}/${wf.names.length})… (Cancel download stops it)`, 'loading');
        await prefetch(`${source.base}/${wf.names[i]}`, (l) => setProgress($('dl-progress'), $('dl-text'), done + l, total), signal);
        done += wf.sizes[i];
      }
      void refreshCacheUsage();
    }
    signal.throwIfAborted();
    status(`Uploading ${files.name} to the GPU…`, 'loading');
    const lm = await loadModel(gpu, files, {
      dtype: 'f32',
      onProgress: (stage, l, t) => { if (stage === 'weights') setProgress($('up-progress'), $('up-text'), l, t); },
    });
    app.setModel(lm);
    describeModel(lm.name, lm.config, lm.checkpoint.slice(lm.name.length + 1) || lm.checkpoint);
    return true;
  });
  if (ok) {
    status(`Ready: ${app.lm!.name}`, 'ready');
    remember(source);
    if (source.kind === 'url') void refreshCacheUsage();
    return;
  }
  const cancelled = app.lastStopped;
  // A failed load keeps nothing it cached: a retry downloads again.
  const evicted = await evictNewEntries().catch(() => []);
  if (evicted.length) void refreshCacheUsage();
  if (cancelled) $('load-url').focus();
  const what = `${cancelled ? 'Cancelled loading' : 'Could not load'} ${source.files.name}${evicted.length ? ` (took ${evicted.join(', ')} out of the download cache)` : ''}`;
  if (app.lm) {
    const lm = app.lm;
    sizing = { config: lm.config, weights: lm.model.weights.bytes, exactWeights: true };
    if (!$<HTMLInputElement>('mem-ctx').dataset.touched) $<HTMLInputElement>('mem-ctx').value = String(lm.config.max_position_embeddings);
    describeModel(lm.name, lm.config);
    updateMemory(app);
    status(`${what}; still using ${before ?? lm.name}.`, 'kept');
  } else {
    status(`${what}.`, 'error');
  }
}

export function initModelPanel(app: App): void {
  $('url-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const raw = $<HTMLInputElement>('model-url').value;
    if (!raw.trim()) { $('model-url').focus(); return; }
    let src: ModelSource;
    try { src = urlSource(raw); } catch (e) { app.showError(e, 'load'); return; }
    void openModel(app, src);
  });
  $('load-embedded').addEventListener('click', () => void openModel(app, embeddedSource()));
  const picker = $<HTMLInputElement>('folder-input');
  picker.addEventListener('change', () => {
    const files = [...(picker.files ?? [])];
    if (files.length) void openModel(app, folderSource(files));
    picker.value = '';
  });
  // The whole page takes drops (a file dropped elsewhere would make the browser open it and leave the demo).
  const zone = $('drop-zone');
  window.addEventListener('dragover', (ev) => { ev.preventDefault(); zone.classList.add('over'); });
  window.addEventListener('dragleave', (ev) => { if (!ev.relatedTarget) zone.classList.remove('over'); });
  window.addEventListener('drop', (ev) => {
    ev.preventDefault();
    zone.classList.remove('over');
    if (!ev.dataTransfer || app.job) return;
    droppedFiles(ev.dataTransfer).then(({ files, name }) => {
      if (files.length) void openModel(app, folderSource(files, name));
    }, (e) => app.showError(e, 'load'));
  });
  $('load-cancel').addEventListener('click', () => {
    status('Cancelling…', 'loading');
    app.stop();
  });
  $('clear-cache').addEventListener('click', async () => {
    try { await clearCache(); } catch (e) { app.showError(e, 'load'); }
    await refreshCacheUsage();
  });
  const ctx = $<HTMLInputElement>('mem-ctx');
  ctx.addEventListener('input', () => { ctx.dataset.touched = '1'; updateMemory(app); });
  for (const id of ['dtype', 'kv-k', 'kv-v']) $(id).addEventListener('change', () => updateMemory(app));
  app.onChange(() => {
    const busy = app.job !== null;
    for (const id of ['load-url', 'load-embedded', 'folder-input']) ($(id) as HTMLButtonElement | HTMLInputElement).disabled = busy;
    $<HTMLButtonElement>('load-cancel').disabled = app.job !== 'load';
  });
}
