// The Markdown summary of a run: the environment, the kernel figures and whether their ceiling holds (ceiling.ts),
// which paths prefill took and their parity, the model's figures per KV cache (markdown-model.ts) and per weights
// (markdown-weights.ts), PyTorch's anchors of the same call, issue 30's goals (markdown-goals.ts), and what failed.
import { benchConfig, type BenchResult } from './result.ts';
import { adapterName, esc, f, pct, range } from './format.ts';
import { modelLines } from './markdown-model.ts';
import { weightsLines } from './markdown-weights.ts';
import { ceilingLines } from './ceiling.ts';
import { issueGoals } from './goals.ts';
import { goalLines } from './markdown-goals.ts';
import type { SweepPoint } from '../suites/gemv.ts';
import type { MlpPoint } from '../suites/mlp.ts';

/** The Markdown summary. */
export function markdown(r: BenchResult): string {
  const s = r.settings;
  const L: string[] = [];
  L.push(`# hrm-webgpu benchmark: ${benchConfig(s).name}, ${adapterName(r)}`, '');
  const a = r.env.adapter;
  const robust = a.robust;   // absent in results from before 20261203
  L.push(`${r.env.runtimeVersion}; ${r.date}${r.env.commit ? `; commit ${r.env.commit}` : ''}` +
    `${r.env.host ? `; host ${r.env.host}` : ''}; timestamps: ${r.env.timestamps}` +
    `${typeof robust === 'boolean' ? `; Dawn's robust buffer access ${robust ? 'on' : 'off'}` : ''}.`);
  if (a.fastFeatures) {   // absent in results from before 20261204
    const onOff = (m: Record<string, { on: boolean; why?: string }>) =>
      Object.entries(m).map(([k, v]) => `${k} ${v.on ? 'on' : `off (${v.why})`}`).join('; ');
    L.push(`Features: ${onOff(a.fastFeatures)}. Fast paths: ${onOff(a.fastPaths)}.`);
  }
  if (s.only !== 'kernels') {
    L.push(`Random bf16 weights, ${s.dtype} activations; prefill ${s.prefill.join(' and ')} tokens ` +
      `(${s.warmup} warm-up, ${s.reps} timed); ` +
      `decode ${s.decodeTokens} tokens after a ${s.prompt}-token prompt (${s.decodeReps} timed); ` +
      `KV caches ${s.caches.join(', ')}.`);
  }
  L.push(`Medians, with min–max; kernel figures over ${s.samples} timed batches each.`, '');
  L.push(...kernelLines(r));
  L.push(...prefillNotes(r));
  if (r.caches.length) L.push(...modelLines(r));
  L.push(...weightsLines(r));
  L.push(...anchorTable(r));
  // The goals are the 1B shape's: on the tiny model they would only read as failures.
  if (s.config === '1b') L.push(...goalLines(issueGoals(r)));
  if (s.config === '1b' && !r.anchors) {
    L.push('Anchors on an H200 (PERFORMANCE.md, transformers, bf16): prefill 1127 tok/s (128) and 2714 (512); ' +
      'decode 10.2 tok/s (eager), ' +
      '~55 (static cache + torch.compile); bf16 decode ceiling at 4.27 TB/s ~530 tok/s.', '');
  }
  for (const e of r.errors) L.push(`- error: ${esc(e).slice(0, 300)}`);
  for (const e of r.skipped) L.push(`- skipped: ${esc(e)}`);
  for (const x of r.recovered) {
    L.push(`- recovered: ${esc(x.unit)} was redone on a new device after the device was lost ` +
      `(${esc(x.error).slice(0, 200)})`);
  }
  L.push('', `Elapsed ${r.elapsedS.toFixed(0)} s${r.complete ? '' : ' (incomplete)'}.`, '');
  return L.join('\n').replace(/\n{3,}/g, '\n\n');
}

/** A GPU time taken a pass a dispatch (calls that could not be captured into one pass) says so: it may overlap. */
const perDispatch = (t: { gpuMethod?: string | null }) =>
  (t.gpuMethod === 'pass per dispatch' ? ', a pass a dispatch' : '');

/** The kernel table, the streaming floor, the matrix-vector sweep and decode attention's paths. */
function kernelLines(r: BenchResult): string[] {
  const k = r.kernels;
  const L: string[] = [];
  if (k.stream || k.gemv.length || k.matmul.length || k.dispatch) {
    L.push('## Kernels', '',
      '| kernel | median | min–max | of stream read | of 4.27 TB/s | GPU time / call (timestamps) | kernel |',
      '|---|---|---|---|---|---|---|');
  }
  for (const b of [k.stream, k.streamEnd, ...k.gemv].filter((x) => x)) {
    L.push(`| ${b!.name} | ${f(b!.GBps.median)} GB/s | ${range(b!.GBps)} | ${pct(b!.shareOfStream)} | ` +
      `${pct(b!.shareOfH200)} | ${f(b!.gpuMs?.median)} ms` +
      `${b!.kernelGBps ? ` (${f(b!.kernelGBps.median)} GB/s)` : ''}${perDispatch(b!)} | ${b!.labels.join(', ')} |`);
  }
  for (const m of k.matmul) {
    L.push(`| ${esc(m.name)} | ${f(m.TFLOPs.median)} TFLOP/s | ${range(m.TFLOPs)} | | | ${f(m.gpuMs?.median)} ms` +
      `${m.kernelTFLOPs ? ` (${f(m.kernelTFLOPs.median)} TFLOP/s)` : ''}${perDispatch(m)} | ${m.labels.join(', ')} |`);
  }
  if (k.dispatch) {
    L.push(`| dependent dispatch (${k.dispatch.chain} tiny adds) | ${f(k.dispatch.encodeUs.median)} us record + ` +
      `${f(k.dispatch.gpuUs.median)} us submit→done | ${range(k.dispatch.gpuUs)} us | | | | add |`);
  }
  L.push('', ...ceilingLines(k.stream, k.streamEnd, k.readProbe, k.gemv));
  if (k.streamFloor?.length) {
    const points = k.streamFloor.map((p) => `${f(p.bytes / 1e6)} MB ${f(p.us)} us (${f(p.GBps)} GB/s)`);
    L.push('Streaming read floor (one dispatch of that many bytes, 200 back to back in one pass): ' +
      `${points.join(', ')}.`, '');
  }
  if (k.sweep?.length) {
    L.push('## Matrix-vector workgroup shapes (decode projections, fused as the model runs them)', '');
    L.push('| projection | kernel lanes x rows (x groups): GPU us per call in one pass, else wall (GB/s), ' +
      'fastest first |', '|---|---|');
    const us = (p: SweepPoint) => p.passUs ?? p.wallUs ?? NaN;
    const point = (p: SweepPoint) =>
      `${p.kernel ?? 'vec4'} ${p.wg}x${p.rows}${p.groups ? `/${p.groups}g` : ''}: ${f(us(p))} (${f(p.GBps)})`;
    for (const layer of [...new Set(k.sweep.map((p) => p.layer))]) {
      const pts = k.sweep.filter((p) => p.layer === layer).sort((a, b) => us(a) - us(b));
      L.push(`| ${layer} | ${pts.map(point).join(', ')} |`);
    }
    L.push('');
  }
  if (k.mlp?.length) {
    L.push("## Decode MLP: two products against one dispatch (units a workgroup / first-level group)", '');
    L.push('| weights | form | GPU us per MLP in one pass, else wall | GB/s |', '|---|---|---|---|');
    const us = (p: MlpPoint) => p.passUs ?? p.wallUs ?? NaN;
    for (const w of [...new Set(k.mlp.map((p) => p.weights ?? 'bf16'))]) {
      for (const p of k.mlp.filter((q) => (q.weights ?? 'bf16') === w).sort((a, b) => us(a) - us(b))) {
        const knobs = `${p.units} units / group ${p.group ?? 'default'}${p.prefetch ? ', down prefetched' : ''}`;
        const form = p.form === 'fold' ? `one dispatch, ${knobs}` : p.form === 'persistent'
          ? `one dispatch, grid barrier, ${p.grid} workgroups` : 'two products';
        L.push(`| ${w} | ${form} | ${f(us(p))} | ${f(p.GBps)} |`);
      }
    }
    L.push('');
  }
  if (k.attention?.length) {
    L.push('## Decode attention: 32-key chunks (sdpa_one, merge folded or separate) vs split keys ' +
      '(bf16 cache, gate fused)', '');
    L.push('| keys | one, merge folded (us) | one, merge separate (us) | split + combine (us) |', '|---|---|---|---|');
    for (const keys of [...new Set(k.attention.map((p) => p.keys))]) {
      const at = (path: string) => k.attention.find((p) => p.keys === keys && p.path === path)?.wallUs;
      L.push(`| ${keys} | ${f(at('one'))} | ${f(at('one-separate'))} | ${f(at('decode'))} |`);
    }
    L.push('');
  }
  return L;
}

/** Which path prefill matmuls took, and the tensor-core kernel's parity report where it ran. */
function prefillNotes(r: BenchResult): string[] {
  const why = r.prefillMatmul.attentionNotOnTensorCores;
  const L = [`Prefill matmuls (bf16): ${esc(r.prefillMatmul.path)}.` + (why === undefined ? ''
    : ` Prefill attention's products (bf16): ${why === null ? 'tensor cores' : `f32 (${esc(why)})`}.`)];
  const p = r.parity?.sgmat;
  if (p && 'skipped' in p) L.push(`Subgroup-matrix parity checks: skipped, ${esc(p.skipped)}.`);
  else if (p) {
    L.push('Subgroup-matrix parity checks (testkit/kernels/matmul-sgmat.check.ts): ' +
      `**${p.passed} passed, ${p.failed} failed**; ${p.outputs} outputs, ` +
      `${pct(p.exact)} equal to the correctly rounded float64 result, ${pct(p.within1)} within 1 bf16 ulp, ` +
      `worst ${p.worstUlp} ulp` +
      (p.mlx ? `; MLX fixture ${pct(p.mlx.within1)} within 1 ulp, worst ${p.mlx.worst}.` : '.'));
    // Older result files have no per-schedule tally.
    for (const t of p.schedules ?? []) {
      L.push(`- schedule ${esc(t.schedule)}: ${t.passed} passed, ${t.failed} failed, ` +
        `${pct(t.within1)} within 1 ulp, worst ${t.worstUlp} ulp`);
    }
    for (const c of p.cases.filter((x) => x.failure)) {
      L.push(`- sgmat parity failed: ${esc(c.name)}: ${esc(c.failure!)}`);
    }
  }
  const a = r.parity?.attention;
  if (a && 'skipped' in a) L.push(`Prefill attention on tensor cores, parity checks: skipped, ${esc(a.skipped)}.`);
  else if (a) {
    L.push('Prefill attention on tensor cores, parity checks against its f32 path ' +
      `(testkit/kernels/sdpa-sgmat.check.ts): **${a.passed} passed, ${a.failed} failed**.`);
    for (const c of a.cases) {
      L.push(`- ${esc(c.name)}: worst ${f(c.worstUlp)} ulp${c.flagged ? ', flagged (f32 fallback)' : ''}` +
        `${c.failure ? `: **failed**, ${esc(c.failure)}` : ''}`);
    }
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
    ['decode, full cache', dec('full'), 'the same, layers torch.compile\'d',
      num('torch_cudagraph_compiled_decode_tok_s')],
    ['decode, q8 cache', dec('q8'), 'hrm-webgpu full-cache decode', dec('full')],
    ['decode, q4 cache', dec('q4'), 'hrm-webgpu full-cache decode', dec('full')],
  ];
  const L = ['## Next to PyTorch on the same GPU, same call (bench/torch-anchors.py)', '',
    `torch ${esc(String(a.torch ?? '?'))}, transformers ${esc(String(a.transformers ?? '?'))}, ` +
    `${esc(String(a.gpu ?? ''))}.` +
    (a.transformers_error ? ` transformers failed: ${esc(String(a.transformers_error)).slice(0, 200)}` : '') +
    (a.error ? ` ${esc(String(a.error))}` : ''), '',
    '| hrm-webgpu | tok/s | against | tok/s | ratio |', '|---|---|---|---|---|'];
  for (const [what, ours, other, theirs] of rows) {
    if (ours === null && theirs === null) continue;
    const ratio = ours !== null && theirs ? `${f(ours / theirs)}x` : '—';
    L.push(`| ${what} | ${f(ours)} | ${other} | ${f(theirs)} | ${ratio} |`);
  }
  return [...L, ''];
}
