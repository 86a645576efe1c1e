// What a run leaves behind: the JSON (every figure and setting), a Markdown summary table, and an SVG plot of
// decode tok/s per KV-cache configuration next to the ceiling the measured streaming bandwidth allows. Pure
// functions of the result (Vega renders the SVG without a DOM), so every runner produces identical files.
import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';
import { benchConfig, type BenchResult } from './harness.ts';
import type { PrefillTimeline, ProfileFigure } from '../suites/model-figures.ts';
import type { Ablation } from '../suites/ablation.ts';
import type { SweepPoint } from '../suites/gemv.ts';
import type { Stats } from '../timing/stats.ts';

export interface Rendered { base: string; json: string; md: string; svg: string }

/** The adapter's most telling name: its device name, unless that is a bare PCI id (Chrome, wgpu), then its description. */
export function adapterLabel(r: BenchResult): string {
  const a = r.env.adapter;
  const device = /[g-z]/i.test(a.device.replace(/^0x/i, '')) ? a.device : '';
  return device || a.description || [a.vendor, a.architecture].filter(Boolean).join(' ') || 'unknown adapter';
}

/** File name stem: adapter, runtime, model shape and UTC date, e.g. `nvidia-h200_node_1b_20250102-030405Z`. */
export function baseName(r: BenchResult): string {
  const slug = adapterLabel(r).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 48) || 'adapter';
  const d = r.date.replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '').replace('T', '-');
  return `${slug}_${r.env.runtime}_${r.settings.config}_${d}`;
}

/** 3 significant digits, thousands grouped from 10 000 up (4 210, 0.0123). */
function f(v: number | null | undefined, digits = 3): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  if (Math.abs(v) >= 10000) return Math.round(v).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
  return Math.abs(v) >= 10 ** digits ? Math.round(v).toString() : String(Number(v.toPrecision(digits)));
}
const pct = (v: number | null | undefined): string => (v === null || v === undefined ? '—' : `${f(v * 100, 2)} %`);
const range = (s: Stats | null | undefined, scale = 1): string => (s ? `${f(s.min * scale)}–${f(s.max * scale)}` : '—');
const esc = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function adapterName(r: BenchResult): string {
  const a = r.env.adapter;
  return [adapterLabel(r), a.vendor && !/^\d+$/.test(a.vendor) ? a.vendor : ''].filter(Boolean).join(', ');
}

/** The Markdown summary. */
export function markdown(r: BenchResult): string {
  const s = r.settings;
  const L: string[] = [];
  L.push(`# hrm-webgpu benchmark: ${benchConfig(s).name}, ${adapterName(r)}`, '');
  const a = r.env.adapter;
  const robust = a.robust;   // absent in results from before 20261203
  L.push(`${r.env.runtimeVersion}; ${r.date}${r.env.commit ? `; commit ${r.env.commit}` : ''}${r.env.host ? `; host ${r.env.host}` : ''}; timestamps: ${r.env.timestamps}` +
    `${typeof robust === 'boolean' ? `; Dawn's robust buffer access ${robust ? 'on' : 'off'}` : ''}.`);
  if (a.fastFeatures) {   // absent in results from before 20261204
    const onOff = (m: Record<string, { on: boolean; why?: string }>) =>
      Object.entries(m).map(([k, v]) => `${k} ${v.on ? 'on' : `off (${v.why})`}`).join('; ');
    L.push(`Features: ${onOff(a.fastFeatures)}. Fast paths: ${onOff(a.fastPaths)}.`);
  }
  if (s.only !== 'kernels') {
    L.push(`Random bf16 weights, ${s.dtype} activations; prefill ${s.prefill.join(' and ')} tokens (${s.warmup} warm-up, ${s.reps} timed); ` +
      `decode ${s.decodeTokens} tokens after a ${s.prompt}-token prompt (${s.decodeReps} timed); KV caches ${s.caches.join(', ')}.`);
  }
  L.push(`Medians, with min–max; kernel figures over ${s.samples} timed batches each.`, '');
  const k = r.kernels;
  if (k.stream || k.gemv.length || k.matmul.length || k.dispatch) L.push('## Kernels', '', '| kernel | median | min–max | of stream read | of 4.27 TB/s | GPU time / call (timestamps) | kernel |', '|---|---|---|---|---|---|---|');
  for (const b of [k.stream, ...k.gemv].filter((x) => x)) {
    L.push(`| ${b!.name} | ${f(b!.GBps.median)} GB/s | ${range(b!.GBps)} | ${pct(b!.shareOfStream)} | ${pct(b!.shareOfH200)} | ${f(b!.gpuMs?.median)} ms${b!.kernelGBps ? ` (${f(b!.kernelGBps.median)} GB/s)` : ''} | ${b!.labels.join(', ')} |`);
  }
  for (const m of k.matmul) L.push(`| ${esc(m.name)} | ${f(m.TFLOPs.median)} TFLOP/s | ${range(m.TFLOPs)} | | | ${f(m.gpuMs?.median)} ms${m.kernelTFLOPs ? ` (${f(m.kernelTFLOPs.median)} TFLOP/s)` : ''} | ${m.labels.join(', ')} |`);
  if (k.dispatch) L.push(`| dependent dispatch (${k.dispatch.chain} tiny adds) | ${f(k.dispatch.encodeUs.median)} us record + ${f(k.dispatch.gpuUs.median)} us submit→done | ${range(k.dispatch.gpuUs)} us | | | | add |`);
  L.push('');
  if (k.streamFloor?.length) {
    L.push(`Streaming read floor (one dispatch of that many bytes, 200 back to back in one pass): ${k.streamFloor.map((p) => `${f(p.bytes / 1e6)} MB ${f(p.us)} us (${f(p.GBps)} GB/s)`).join(', ')}.`, '');
  }
  if (k.sweep?.length) {
    L.push('## Matrix-vector workgroup shapes (decode projections, fused as the model runs them)', '');
    L.push('| projection | kernel lanes x rows (x groups): GPU us per call in one pass, else wall (GB/s), fastest first |', '|---|---|');
    const us = (p: SweepPoint) => p.passUs ?? p.wallUs ?? NaN;
    for (const layer of [...new Set(k.sweep.map((p) => p.layer))]) {
      const pts = k.sweep.filter((p) => p.layer === layer).sort((a, b) => us(a) - us(b));
      L.push(`| ${layer} | ${pts.map((p) => `${p.kernel ?? 'vec4'} ${p.wg}x${p.rows}${p.groups ? `/${p.groups}g` : ''}: ${f(us(p))} (${f(p.GBps)})`).join(', ')} |`);
    }
    L.push('');
  }
  if (k.attention?.length) {
    L.push('## Decode attention: 32-key chunks (sdpa_one, merge folded or separate) vs split keys (bf16 cache, gate fused)', '');
    L.push('| keys | one, merge folded (us) | one, merge separate (us) | split + combine (us) |', '|---|---|---|---|');
    for (const keys of [...new Set(k.attention.map((p) => p.keys))]) {
      const at = (path: string) => k.attention.find((p) => p.keys === keys && p.path === path)?.wallUs;
      L.push(`| ${keys} | ${f(at('one'))} | ${f(at('one-separate'))} | ${f(at('decode'))} |`);
    }
    L.push('');
  }
  L.push(...prefillNotes(r));
  if (r.caches.length) {
    const lens = s.prefill;
    L.push('## Model, per KV cache', '');
    L.push(`| cache | ${lens.map((n) => `prefill ${n} tok/s`).join(' | ')} | decode tok/s | min–max | ceiling tok/s (stream) | decode / ceiling | bytes / token | dispatches / token | JS ms / token | ms / token |`);
    L.push(`|---|${lens.map(() => '---|').join('')}---|---|---|---|---|---|---|---|`);
    for (const c of r.caches) {
      const pre = lens.map((n) => f(c.prefill.find((p) => p.tokens === n)?.tokPerS.median));
      const d = c.decode;
      L.push(`| ${c.name} | ${pre.join(' | ')} | ${f(d?.tokPerS.median)} | ${range(d?.tokPerS)} | ${f(c.ceiling.tokPerS)} | ${d && c.ceiling.tokPerS ? pct(d.tokPerS.median / c.ceiling.tokPerS) : '—'} | ${f(c.ceiling.bytesPerToken / 1e9)} GB | ${d?.dispatchesPerToken ?? '—'} | ${f(d?.encodeMs.median)} | ${d ? f(1000 / d.tokPerS.median) : '—'} |`);
    }
    L.push('');
    for (const c of r.caches) {
      const path = c.decode?.path;
      if (path) L.push(`- **${c.name}** decode: ${'replayed' in path ? `one captured step of ${path.replayed} dispatches replayed per token, greedy tokens fed back on the GPU, ${r.settings.ahead === 'auto' ? 'steps queued ahead as generate() queues them (~100 ms of steps, 4-32)' : `${r.settings.ahead} steps queued ahead`}` : `each step recorded (${esc(path.recorded)})`}`);
    }
    L.push('');
    for (const c of r.caches) for (const e of c.errors) L.push(`- **${c.name}**: error in ${esc(e).slice(0, 300)}`);
    for (const c of r.caches) for (const e of c.skipped) L.push(`- **${c.name}**: skipped ${esc(e)}`);
    L.push('');
    for (const p of r.caches) {
      if (!p.profile || !p.decode) continue;
      const pr = p.profile;
      // Per token of the median repetition: with steps queued, the time between two tokens read is no step's time.
      const step = 1000 / p.decode.tokPerS.median, rec = p.decode.encodeMs.median;
      const rest = step - ('replayed' in p.decode.path ? 0 : rec) - pr.kernelMs;
      L.push(`## Where a decode step goes (${p.name} cache, context ${pr.context})`, '');
      L.push(`A token takes ${f(step)} ms: JavaScript spends ${f(rec)} ms on a step (recording it, or replaying the captured one; with replay ` +
        `this overlaps the GPU running earlier steps), the GPU kernels ${f(pr.kernelMs)} ms (sum of per-dispatch timestamps of one recorded step, ` +
        `${pr.profiled} of ${pr.dispatches} dispatches); the remaining ${f(rest)} ms ` +
        `(${f((rest * 1000) / pr.dispatches)} us per dispatch) are the gaps between dependent dispatches, submission and readback (approximate: ` +
        `the profiled step runs one pass per dispatch).` +
        (p.ceiling.tokPerS ? ` Streaming the ${f(p.ceiling.bytesPerToken / 1e9)} GB it reads at the measured bandwidth would take ${f(1000 / p.ceiling.tokPerS)} ms.` : '') +
        `${pr.quantized ? ' **Timestamps look quantized (65.5 us steps): per-label times are rough.**' : ''}`, '');
      const gc = p.decode.gc;
      if (gc) L.push(`Garbage collection over the timed steps: ${gc.count} pauses, ${f(gc.ms)} ms in all (${f(gc.ms / p.decode.stepMs.samples.length)} ms a token), the longest ${f(gc.maxMs)} ms${gc.major ? `; ${gc.major.count} of them full (mark-compact), ${f(gc.major.ms)} ms` : ''}.`, '');
      L.push(...labelTable(pr));
      const ab = pr.ablation;
      if (ab) {
        L.push('', `The same step as one pass on the GPU (${ab.dispatches} dispatches): ${f(ab.stepMs)} ms; without each kernel's dispatches it runs faster by:`, '');
        L.push(...ablationTable(ab));
        for (const q of ab.queued ?? []) {
          L.push('', `Replayed ${q.steps} times, ${q.ahead} in flight (a submit, a pass and a 4-byte readback each): ${f(q.wallMs)} ms a step of wall time; ` +
            `each pass ${f(q.passMs.median)} ms (${f(q.passMs.min)}–${f(q.passMs.max)}), the GPU idle ${f(q.gapMs.median)} ms (${f(q.gapMs.min)}–${f(q.gapMs.max)}) between passes.`);
        }
      }
      L.push('');
    }
    const pf = r.caches.flatMap((c) => c.prefill).find((x) => x.profile);
    if (pf?.profile) {
      L.push(`## Where a prefill goes (${pf.tokens} tokens, full cache)`, '');
      L.push(`A prefill takes ${f(pf.ms.median)} ms (${pf.dispatches} dispatches, ${f(pf.encodeMs.median)} ms of it recording); ` +
        `the GPU kernels ${f(pf.profile.kernelMs)} ms by per-dispatch timestamps (${pf.profile.profiled} of ${pf.profile.dispatches} dispatches).`, '');
      L.push(...labelTable(pf.profile));
      if (pf.timeline) L.push(...timelineLines(pf.timeline), '');
      const ab = pf.profile.ablation;
      if (ab) {
        L.push(`The same prefill as one pass on the GPU, every position's logits (${ab.dispatches} dispatches): ${f(ab.stepMs)} ms; without each kernel's dispatches it runs faster by:`, '');
        L.push(...ablationTable(ab));
      }
    }
  }
  L.push(...anchorTable(r));
  if (s.config === '1b' && !r.anchors) {
    L.push('Anchors on an H200 (PERFORMANCE.md, transformers, bf16): prefill 1127 tok/s (128) and 2714 (512); decode 10.2 tok/s (eager), ' +
      '~55 (static cache + torch.compile); bf16 decode ceiling at 4.27 TB/s ~530 tok/s.', '');
  }
  for (const e of r.errors) L.push(`- error: ${esc(e).slice(0, 300)}`);
  for (const e of r.skipped) L.push(`- skipped: ${esc(e)}`);
  for (const x of r.recovered) L.push(`- recovered: ${esc(x.unit)} was redone on a new device after the device was lost (${esc(x.error).slice(0, 200)})`);
  L.push('', `Elapsed ${r.elapsedS.toFixed(0)} s${r.complete ? '' : ' (incomplete)'}.`, '');
  return L.join('\n').replace(/\n{3,}/g, '\n\n');
}

/** A prefill timed pass by pass: the GPU's busy time against the wall, and its longest waits between passes. */
function timelineLines(t: PrefillTimeline): string[] {
  const gaps = t.passes.slice(1).map((p, i) => ({ ms: p.startMs - t.passes[i].endMs, before: i + 1, after: t.passes.slice(0, i + 1).reduce((a, x) => a + x.dispatches, 0) }));
  const worst = [...gaps].sort((a, b) => b.ms - a.ms).slice(0, 3).filter((g) => g.ms > 0.01);
  return [
    `The same prefill timed pass by pass (its ${t.passes.length} passes, in the parts submitted while it is recorded, each timestamped): ` +
    `wall ${f(t.wallMs)} ms, recording ${f(t.encodeMs)} ms; the GPU busy ${f(t.busyMs)} ms over ${f(t.spanMs)} ms from its first pass's start to its last pass's end ` +
    `(idle between passes ${f(t.spanMs - t.busyMs)} ms${worst.length ? `, the longest ${worst.map((g) => `${f(g.ms)} ms before pass ${g.before + 1} (after ${g.after} dispatches)`).join(', ')}` : ''}); ` +
    `the other ${f(t.wallMs - t.spanMs)} ms of the wall are before the first pass starts (recording up to the first submit, and the submit) and after the last ends (the readback).`,
  ];
}

/** What leaving out each kernel's dispatches saves a one-pass forward (Ablation), largest first. */
function ablationTable(ab: Ablation): string[] {
  return ['| kernel [grid] | dispatches | ms saved | of the pass |', '|---|---|---|---|',
    // Slower without a kernel: the data it leaves unwritten sends later ones down other paths (a NaN in x takes the
    // tensor cores' f32 fallback, say), so no cost can be read off.
    ...ab.byKernel.map((k) => k.ms < 0 ? `| ${esc(k.kernel)} | ${k.count} | — | (slower without it) |` : `| ${esc(k.kernel)} | ${k.count} | ${f(k.ms)} | ${pct(k.ms / ab.stepMs)} |`)];
}

/** GPU time per kernel label of a profiled forward, largest first. */
function labelTable(p: ProfileFigure): string[] {
  return ['| kernel label | dispatches | GPU ms | share |', '|---|---|---|---|',
    ...p.byLabel.slice(0, 16).map((x) => `| ${x.label} | ${x.count} | ${f(x.ms)} | ${pct(x.share)} |`), ''];
}

/** Which path prefill matmuls took, and the tensor-core kernel's parity report where it ran. */
function prefillNotes(r: BenchResult): string[] {
  const why = r.prefillMatmul.attentionNotOnTensorCores;
  const L = [`Prefill matmuls (bf16): ${esc(r.prefillMatmul.path)}.` + (why === undefined ? '' : ` Prefill attention's products (bf16): ${why === null ? 'tensor cores' : `f32 (${esc(why)})`}.`)];
  const p = r.parity?.sgmat;
  if (p && 'skipped' in p) L.push(`Subgroup-matrix parity checks: skipped, ${esc(p.skipped)}.`);
  else if (p) {
    L.push(`Subgroup-matrix parity checks (tests/kernels/matmul_sgmat.check.ts): **${p.passed} passed, ${p.failed} failed**; ${p.outputs} outputs, ` +
      `${pct(p.exact)} equal to the correctly rounded float64 result, ${pct(p.within1)} within 1 bf16 ulp, worst ${p.worstUlp} ulp` +
      (p.mlx ? `; MLX fixture ${pct(p.mlx.within1)} within 1 ulp, worst ${p.mlx.worst}.` : '.'));
    // Older result files have no per-schedule tally.
    for (const t of p.schedules ?? []) L.push(`- schedule ${esc(t.schedule)}: ${t.passed} passed, ${t.failed} failed, ${pct(t.within1)} within 1 ulp, worst ${t.worstUlp} ulp`);
    for (const c of p.cases.filter((x) => x.failure)) L.push(`- sgmat parity failed: ${esc(c.name)}: ${esc(c.failure!)}`);
  }
  const a = r.parity?.attention;
  if (a && 'skipped' in a) L.push(`Prefill attention on tensor cores, parity checks: skipped, ${esc(a.skipped)}.`);
  else if (a) {
    L.push(`Prefill attention on tensor cores, parity checks against its f32 path (tests/kernels/sdpa_sgmat.check.ts): **${a.passed} passed, ${a.failed} failed**.`);
    for (const c of a.cases) L.push(`- ${esc(c.name)}: worst ${f(c.worstUlp)} ulp${c.flagged ? ', flagged (f32 fallback)' : ''}${c.failure ? `: **failed**, ${esc(c.failure)}` : ''}`);
  }
  return [...L, ''];
}

/** hrm-webgpu next to the PyTorch anchors of the same call (bench/torch-anchors.py): tok/s and ours / theirs. */
function anchorTable(r: BenchResult): string[] {
  const a = r.anchors as Record<string, unknown> | null;
  if (!a || typeof a !== 'object') return [];
  const num = (k: string): number | null => (typeof a[k] === 'number' ? (a[k] as number) : null);
  const cache = (n: string) => r.caches.find((c) => c.name === n);
  const pre = (n: number) => cache('full')?.prefill.find((p) => p.tokens === n)?.tokPerS.median ?? null;
  const dec = (n: string) => cache(n)?.decode?.tokPerS.median ?? null;
  const rows: Array<[string, number | null, string, number | null]> = [
    ['prefill 128 tokens', pre(128), 'transformers eager forward', num('transformers_eager_prefill128_tok_s')],
    ['prefill 512 tokens', pre(512), 'transformers eager forward', num('transformers_eager_prefill512_tok_s')],
    ['decode, full cache', dec('full'), 'transformers eager loop', num('transformers_eager_decode_tok_s')],
    ['decode, full cache', dec('full'), 'static cache, step as a CUDA graph', num('torch_cudagraph_decode_tok_s')],
    ['decode, full cache', dec('full'), 'the same, layers torch.compile\'d', num('torch_cudagraph_compiled_decode_tok_s')],
    ['decode, q8 cache', dec('q8'), 'hrm-webgpu full-cache decode', dec('full')],
    ['decode, q4 cache', dec('q4'), 'hrm-webgpu full-cache decode', dec('full')],
  ];
  const L = ['## Next to PyTorch on the same GPU, same call (bench/torch-anchors.py)', '',
    `torch ${esc(String(a.torch ?? '?'))}, transformers ${esc(String(a.transformers ?? '?'))}, ${esc(String(a.gpu ?? ''))}.` +
    (a.transformers_error ? ` transformers failed: ${esc(String(a.transformers_error)).slice(0, 200)}` : '') + (a.error ? ` ${esc(String(a.error))}` : ''), '',
    '| hrm-webgpu | tok/s | against | tok/s | ratio |', '|---|---|---|---|---|'];
  for (const [what, ours, other, theirs] of rows) {
    if (ours === null && theirs === null) continue;
    L.push(`| ${what} | ${f(ours)} | ${other} | ${f(theirs)} | ${ours !== null && theirs ? `${f(ours / theirs)}x` : '—'} |`);
  }
  return [...L, ''];
}

/** Vega-Lite: measured decode tok/s (median, min–max whisker) and the stream-bandwidth ceiling, per cache. */
export function decodePlotSpec(r: BenchResult): TopLevelSpec {
  const MEAS = 'decode, measured (median; whisker min–max)';
  const CEIL = 'ceiling = stream read / bytes per token';
  const rows: Array<Record<string, unknown>> = [];
  for (const c of r.caches) {
    const d = c.decode;
    rows.push({ cache: c.name, series: MEAS, value: d?.tokPerS.median ?? 0, lo: d?.tokPerS.min ?? null, hi: d?.tokPerS.max ?? null, label: d ? f(d.tokPerS.median) : c.errors.length ? 'error' : 'not run' });
    if (c.ceiling.tokPerS !== null) rows.push({ cache: c.name, series: CEIL, value: c.ceiling.tokPerS, lo: null, hi: null, label: f(c.ceiling.tokPerS) });
  }
  const s = r.settings;
  const stream = r.kernels.stream;
  return {
    title: {
      text: `Decode tok/s per KV cache: ${benchConfig(s).name}`,
      subtitle: [`${adapterName(r)}, ${r.env.runtimeVersion.split(' (')[0]}; ${s.decodeTokens} tokens after a ${s.prompt}-token prompt`,
        `stream read ${f(stream?.GBps.median)} GB/s measured on this device`],
      anchor: 'start',
    },
    width: { step: 70 },
    height: 280,
    data: { values: rows },
    encoding: {
      x: { field: 'cache', type: 'nominal', title: 'KV cache', sort: s.caches, axis: { labelAngle: 0 } },
      xOffset: { field: 'series', type: 'nominal', sort: [MEAS, CEIL] },
    },
    layer: [
      {
        mark: { type: 'bar' },
        encoding: {
          y: { field: 'value', type: 'quantitative', title: 'tokens / s' },
          color: { field: 'series', type: 'nominal', sort: [MEAS, CEIL], scale: { range: ['#1f6feb', '#bbbbbb'] }, legend: { orient: 'bottom', title: null, labelLimit: 400, direction: 'vertical' } },
        },
      },
      { transform: [{ filter: 'datum.lo != null' }], mark: { type: 'rule', color: '#222' }, encoding: { y: { field: 'lo', type: 'quantitative' }, y2: { field: 'hi' } } },
      { mark: { type: 'text', dy: -6, fontSize: 10 }, encoding: { y: { field: 'value', type: 'quantitative' }, text: { field: 'label' } } },
    ],
    config: { view: { stroke: null }, font: 'sans-serif' },
  } as TopLevelSpec;
}

export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  try { return await view.toSVG(); } finally { view.finalize(); }
}

/** Everything a runner writes, as strings. */
export async function render(r: BenchResult): Promise<Rendered> {
  return { base: baseName(r), json: JSON.stringify(r) + '\n', md: markdown(r), svg: await renderSvg(decodePlotSpec(r)) };
}
