// The model panel: model sources (embedded, URL, folder picker, drop), the loader's warnings,
// the weights choice (as stored, or quantized on load), the memory estimate and fit check for each choice before
// any weight is downloaded, download and GPU-upload progress, and the download cache.
import { loadConfigs, parameterCount, type ActDtype, type HrmConfig } from '../src/index.ts';
import { cacheSlots } from '../src/advanced.ts';
import type { WorkerModelInfo } from '../src/worker/index.ts';
import { App, kvFromSelects } from './app.ts';
import { $, fillKv, fillTable, setProgress } from './dom.ts';
import { choiceLabel, fmtBytes, memoryPlan, weightBytes, weightFiles, weightSpec, WEIGHT_CHOICES, WontFitError,
  type MemoryPlan, type Sizing, type WeightChoice } from './memory.ts';
import { DownloadError, htmlAnswered, prefetch, WEB_PAGE } from './cached-fetch.ts';
import { cacheAvailable, cacheUsage, clearCache, evictNewEntries, isCached,
  trackNewEntries } from './download-cache.ts';
import { askPersistence, DownloadRate } from './storage.ts';
import { droppedFiles, embeddedSource, folderSource, urlSource, type ModelSource } from './sources.ts';
import { showKernelPath } from './adapter.ts';

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

/** What the memory table describes: the model being checked before its download, and the loaded one. */
let sizing: Sizing | null = null;
let loaded: Sizing | null = null;

/** The weights choice of the select (applies to the next load). */
const weightChoice = () => $<HTMLSelectElement>('quantize').value as WeightChoice;

function status(text: string, state: 'loading' | 'ready' | 'kept' | 'error' | 'idle'): void {
  const el = $('model-status');
  el.textContent = text;
  el.dataset.state = state;
}

/** `ctk=f16,ctv=q8_0` as the table says it: "K f16, V q8_0". */
const kvLabel = (label: string) => label.replace('ctk=', 'K ').replace(',ctv=', ', V ');

const VERDICT: Record<MemoryPlan['verdict'], string> = { ok: 'fits', warn: 'may not fit', no: 'will not fit' };

/** The memory estimate's context: the model's own, unless the user has set one. */
function memoryContext(ctx: number): void {
  const el = $<HTMLInputElement>('mem-ctx');
  if (!el.dataset.touched) el.value = String(ctx);
}

/**
 * Re-estimate memory for the model being sized at the chosen weights, context, dtype and KV cache, and per weights
 * choice.
 */
export function updateMemory(app: App): MemoryPlan | null {
  showKernelPath(app);
  if (!sizing || !app.device) return null;
  const s = sizing;
  const { config } = s;
  const ctxEl = $<HTMLInputElement>('mem-ctx');
  const max = config.max_position_embeddings;
  ctxEl.max = String(max);
  // Not clamped silently: a value outside 1..context is named, and the estimate is for the whole context.
  const asked = Number(ctxEl.value);
  const valid = ctxEl.value.trim() !== '' && Number.isInteger(asked) && asked >= 1 && asked <= max;
  const ctx = valid ? asked : max;
  ctxEl.setAttribute('aria-invalid', String(!valid));
  $('mem-note').textContent = valid ? ''
    : `"${ctxEl.value}" is not a context this model has: enter a whole number of tokens from 1 to ${max}. ` +
      `Shown for the whole context, ${max} tokens.`;
  const dtype = $<HTMLSelectElement>('dtype').value as ActDtype;
  let kv;
  try { kv = kvFromSelects('kv-k', 'kv-v'); } catch { return null; }
  const lim = app.device.adapter.limits;
  const deviceMemory = (navigator as Navigator & { deviceMemory?: number }).deviceMemory;
  const planOf = (c: WeightChoice) => memoryPlan(config, weightBytes(s, c).bytes, ctx, dtype, kv.spec,
    { maxBufferSize: lim.maxBufferSize, maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize, deviceMemory });
  const choice = weightChoice();
  const plan = planOf(choice);
  fillTable($<HTMLTableElement>('memory'), [
    [`weights, ${choiceLabel(s, choice)}`, `${fmtBytes(plan.weights)}${weightBytes(s, choice).exact ? '' : ' (est.)'}`],
    // The library's figure (cacheBytes), with what it counts: a full-precision side is kept in the activations' dtype.
    [`KV cache (${ctx} tokens, ${kvLabel(kv.label)}` +
      `${kv.spec.k === null || kv.spec.v === null ? `, full precision in ${dtype}` : ''}, ` +
      `${cacheSlots(config)} slots)`, fmtBytes(plan.cache)],
    ['activations (rough)', fmtBytes(plan.activations)],
    ['total', fmtBytes(plan.total)],
  ]);
  const v = $('mem-verdict');
  v.dataset.verdict = plan.verdict;
  v.textContent = plan.verdict === 'ok' ? 'Fits this adapter.'
    : `${plan.verdict === 'no' ? 'Will not fit' : 'May not fit'}: ${plan.reasons.join('; ')}.`;
  // A stored-quantized checkpoint loads as stored: one row.
  const choices = (s.stored ? ['stored'] : Object.keys(WEIGHT_CHOICES)) as WeightChoice[];
  fillTable($<HTMLTableElement>('mem-choices'), choices.map((c) => {
    const p = planOf(c);
    return [choiceLabel(s, c), `${fmtBytes(p.weights)} weights, ${fmtBytes(p.total)} in all: ${VERDICT[p.verdict]}`];
  }));
  return plan;
}

/** The checkpoint file of a loaded model, relative to its folder. */
const checkpointOf = (lm: WorkerModelInfo) => lm.checkpoint.slice(lm.name.length + 1) || lm.checkpoint;

function describeModel(name: string, c: HrmConfig, checkpoint?: string, weights?: string): void {
  fillKv($('model-info'), [
    ['model', name], ...(checkpoint ? [['checkpoint', checkpoint] as [string, string]] : []), ...(weights ?
      [['weights', weights] as [string, string]] : []),
    ['parameters', `${(parameterCount(c) / 1e6).toFixed(2)} M`],
    ['shape', `hidden ${c.hidden_size}, ${c.num_layers_per_stack} layers/stack, ` +
      `${c.num_attention_heads}×${c.head_dim} heads, H${c.H_cycles} L${c.L_cycles}`],
    ['vocabulary', String(c.vocab_size)], ['context', `${c.max_position_embeddings} tokens`],
  ]);
}

export async function refreshCacheUsage(): Promise<void> {
  const el = $('cache-usage');
  if (!cacheAvailable()) {
    el.textContent = 'Cache Storage is unavailable here (needs https or localhost): downloads are not kept.';
    return;
  }
  const u = await cacheUsage();
  const quota = u.quota ? `; this site may store up to ${fmtBytes(u.quota)}` : '';
  el.textContent = `${u.files} file${u.files === 1 ? '' : 's'} cached, ${fmtBytes(u.bytes)}${quota}.`;
}

/** Check, download (URL sources), upload; the current model stays in place if anything fails. */
export async function openModel(app: App, source: ModelSource): Promise<void> {
  const before = app.lm?.name;
  const ok = await app.run('load', async (signal) => {
    await trackNewEntries();
    const files = source.files;
    setProgress($('dl-progress'), $('dl-text'), 0, 0);
    setProgress($('up-progress'), $('up-text'), 0, 0);
    status(`Reading ${files.name}/config.json…`, 'loading');
    const choice = weightChoice();
    const { config, quantization } = await loadConfigs(files);
    const wf = await weightFiles(files, config);
    // A server that answers every path with its web page (200, HTML) has no weights here: say so, not "missing".
    const page = source.base && !wf.names.length ? htmlAnswered(source.base) : null;
    if (page) throw new DownloadError(page, WEB_PAGE);
    const s: Sizing = { config, stored: quantization, files: wf };
    sizing = s;
    describeModel(files.name, config);
    memoryContext(config.max_position_embeddings);
    const plan = updateMemory(app);
    if (plan?.verdict === 'no' && !$<HTMLInputElement>('skip-check').checked) throw new WontFitError(plan.reasons);
    if (source.kind === 'url' && source.base) {
      const total = wf.total;
      let done = 0;
      void askPersistence();
      const rate = new DownloadRate();
      for (let i = 0; i < wf.names.length; i++) {
        status(`Downloading ${wf.names[i]} (${i + 1}/${wf.names.length})… (Cancel download stops it)`, 'loading');
        let at = done;
        await prefetch(`${source.base}/${wf.names[i]}`, (l) => {
          at = done + l;
          setProgress($('dl-progress'), $('dl-text'), at, total);
          $('dl-text').textContent += rate.note(at, total);
        }, signal, (retry) => {
          // Until bytes flow again, the progress line says what failed and when the next try is.
          $('dl-text').textContent = `${fmtBytes(at)} / ${fmtBytes(total)} · ${wf.names[i]}: ${retry}`;
        });
        done += wf.sizes[i];
      }
      void refreshCacheUsage();
    }
    signal.throwIfAborted();
    const q = weightSpec(s, choice);
    const quantize = q.onLoad && q.spec ? q.spec : undefined;
    status(`Uploading ${files.name} to the GPU${quantize ? `, quantizing its weights to ${quantize.bits} bits` : ''}…`,
      'loading');
    const lm = await app.engine.load(source.spec, quantize,
      (l, t) => setProgress($('up-progress'), $('up-text'), l, t));
    // What the loader warned of (a tokenizer smaller than the vocabulary) is said here, not in the console only.
    const warnings = [...new Set(lm.warnings)];
    $('model-warning').textContent = warnings.map((w) => `Warning: ${w}.`).join(' ');
    s.loaded = { choice, bytes: lm.weightBytes };
    loaded = s;
    app.setModel(lm);
    describeModel(lm.name, lm.config, checkpointOf(lm), choiceLabel(s, choice));
    updateMemory(app);
    return true;
  });
  if (ok) {
    const lm = app.lm!;
    if (lm.tokenizer) status(`Ready: ${lm.name}`, 'ready');
    else {
      status(`Ready without a tokenizer: ${lm.name} has no tokenizer.json. Generate and REFRACT read text, so they ` +
        'are off here; the library still gives this model\'s logits and REFRACT\'s KLD on token ids (see the ' +
        'documentation).', 'kept');
    }
    remember(source);
    if (source.kind === 'url') void refreshCacheUsage();
    return;
  }
  const cancelled = app.lastStopped;
  // A failed load keeps nothing it cached: a retry downloads again.
  const evicted = await evictNewEntries().catch(() => []);
  if (evicted.length) void refreshCacheUsage();
  if (cancelled) $('load-url').focus();
  const what = `${cancelled ? 'Cancelled loading' : 'Could not load'} ${source.files.name}`;
  const one = evicted.length === 1;
  const dropped = !evicted.length ? ''
    : ` The file${one ? '' : 's'} it downloaded, ${evicted.join(', ')}, ${one ? 'is' : 'are'} not kept: ` +
      `a retry downloads ${one ? 'it' : 'them'} again.`;
  if (app.lm && loaded) {
    const lm = app.lm;
    sizing = loaded;
    memoryContext(lm.config.max_position_embeddings);
    describeModel(lm.name, lm.config, checkpointOf(lm), choiceLabel(loaded, loaded.loaded!.choice));
    updateMemory(app);
    status(`${what}; still using ${before ?? lm.name}.${dropped}`, 'kept');
  } else {
    status(`${what}.${dropped}`, 'error');
  }
}

export function initModelPanel(app: App): void {
  $('url-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const raw = $<HTMLInputElement>('model-url').value;
    if (!raw.trim()) { $('model-url').focus(); return; }
    let src: ModelSource;
    try { src = urlSource(raw); } catch (e) { $('model-url').focus(); app.showError(e, 'load'); return; }
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
    try {
      const u = await cacheUsage();
      if (!u.files) { await refreshCacheUsage(); return; }
      const files = `${u.files} cached file${u.files === 1 ? '' : 's'}`;
      if (!confirm(`Delete ${files} (${fmtBytes(u.bytes)})? A model loaded from a URL downloads again.`)) return;
      await clearCache();
    } catch (e) { app.showError(e, 'load'); }
    await refreshCacheUsage();
  });
  const ctx = $<HTMLInputElement>('mem-ctx');
  ctx.addEventListener('input', () => { ctx.dataset.touched = '1'; updateMemory(app); });
  for (const id of ['dtype', 'kv-k', 'kv-v', 'quantize']) $(id).addEventListener('change', () => updateMemory(app));
  app.onChange(() => {
    const busy = app.job !== null;
    for (const id of ['load-url', 'load-embedded',
      'folder-input']) ($(id) as HTMLButtonElement | HTMLInputElement).disabled = busy;
    $<HTMLButtonElement>('load-cancel').disabled = app.job !== 'load';
  });
}
