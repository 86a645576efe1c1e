// The model's part of the Markdown summary: prefill and decode per KV cache against the ceiling, how each decode
// ran, and where a decode step and a prefill go (per-label GPU time, the one-pass ablation, the prefill timed pass
// by pass).
import type { BenchResult } from './result.ts';
import { esc, f, pct, range } from './format.ts';
import type { Ablation } from '../suites/ablation.ts';
import type { PrefillTimeline, ProfileFigure } from '../suites/model-figures.ts';

/** The model sections (the run measured at least one cache). */
export function modelLines(r: BenchResult): string[] {
  const L: string[] = [];
  const lens = r.settings.prefill;
  L.push('## Model, per KV cache', '');
  L.push(`| cache | ${lens.map((n) => `prefill ${n} tok/s`).join(' | ')} | decode tok/s | min–max | ` +
    'ceiling tok/s (stream) | decode / ceiling | bytes / token | dispatches / token | JS ms / token | ms / token |');
  L.push(`|---|${lens.map(() => '---|').join('')}---|---|---|---|---|---|---|---|`);
  for (const c of r.caches) {
    const pre = lens.map((n) => f(c.prefill.find((p) => p.tokens === n)?.tokPerS.median));
    const d = c.decode;
    const ofCeiling = d && c.ceiling.tokPerS ? pct(d.tokPerS.median / c.ceiling.tokPerS) : '—';
    L.push(`| ${c.name} | ${pre.join(' | ')} | ${f(d?.tokPerS.median)} | ${range(d?.tokPerS)} | ` +
      `${f(c.ceiling.tokPerS)} | ${ofCeiling} | ${f(c.ceiling.bytesPerToken / 1e9)} GB | ` +
      `${d?.dispatchesPerToken ?? '—'} | ${f(d?.encodeMs.median)} | ${d ? f(1000 / d.tokPerS.median) : '—'} |`);
  }
  L.push('');
  const queue = r.settings.ahead === 'auto'
    ? 'steps queued ahead as generate() queues them (~100 ms of steps, 1-32)'
    : `${r.settings.ahead} steps queued ahead`;
  for (const c of r.caches) {
    const path = c.decode?.path;
    if (!path) continue;
    L.push(`- **${c.name}** decode: ${'replayed' in path
      ? `one captured step of ${path.replayed} dispatches${path.persistent ? ' (persistent layer tails)' : ''} ` +
        'replayed per token, greedy tokens fed back on the GPU, ' +
        queue
      : `each step recorded (${esc(path.recorded)})`}`);
  }
  L.push('');
  for (const c of r.caches) for (const e of c.errors) L.push(`- **${c.name}**: error in ${esc(e).slice(0, 300)}`);
  for (const c of r.caches) for (const e of c.skipped) L.push(`- **${c.name}**: skipped ${esc(e)}`);
  L.push('');
  for (const c of r.caches) L.push(...decodeStep(c));
  const pf = r.caches.flatMap((c) => c.prefill).find((x) => x.profile);
  if (pf?.profile) {
    L.push(`## Where a prefill goes (${pf.tokens} tokens, full cache)`, '');
    L.push(`A prefill takes ${f(pf.ms.median)} ms (${pf.dispatches} dispatches, ${f(pf.encodeMs.median)} ms of it ` +
      `recording); the GPU kernels ${f(pf.profile.kernelMs)} ms by per-dispatch timestamps ` +
      `(${pf.profile.profiled} of ${pf.profile.dispatches} dispatches).`, '');
    L.push(...labelTable(pf.profile));
    if (pf.timeline) L.push(...timelineLines(pf.timeline), '');
    const ab = pf.profile.ablation;
    if (ab) {
      L.push(`The same prefill as one pass on the GPU, every position's logits (${ab.dispatches} dispatches): ` +
        `${f(ab.stepMs)} ms; without each kernel's dispatches it runs faster by:`, '');
      L.push(...ablationTable(ab));
    }
  }
  return L;
}

/** Where a decode step of cache `p` goes: JavaScript, GPU kernels, the rest; GC pauses; labels; the ablation. */
function decodeStep(p: BenchResult['caches'][number]): string[] {
  if (!p.profile || !p.decode) return [];
  const L: string[] = [];
  const pr = p.profile;
  // Per token of the median repetition: with steps queued, the time between two tokens read is no step's time.
  const step = 1000 / p.decode.tokPerS.median, rec = p.decode.encodeMs.median;
  const rest = step - ('replayed' in p.decode.path ? 0 : rec) - pr.kernelMs;
  L.push(`## Where a decode step goes (${p.name} cache, context ${pr.context})`, '');
  L.push(`A token takes ${f(step)} ms: JavaScript spends ${f(rec)} ms on a step (recording it, or replaying the ` +
    'captured one; with replay ' +
    'this overlaps the GPU running earlier steps), ' +
    `the GPU kernels ${f(pr.kernelMs)} ms (sum of per-dispatch timestamps of one recorded step, ` +
    `${pr.profiled} of ${pr.dispatches} dispatches); the remaining ${f(rest)} ms ` +
    `(${f((rest * 1000) / pr.dispatches)} us per dispatch) are the gaps between dependent dispatches, submission ` +
    'and readback (approximate: ' +
    `the profiled step runs one pass per dispatch).` +
    (p.ceiling.tokPerS ? ` Streaming the ${f(p.ceiling.bytesPerToken / 1e9)} GB it reads at the measured ` +
      `bandwidth would take ${f(1000 / p.ceiling.tokPerS)} ms.` : '') +
    `${pr.quantized ? ' **Timestamps look quantized (65.5 us steps): per-label times are rough.**' : ''}`, '');
  const gc = p.decode.gc;
  if (gc) {
    L.push(`Garbage collection over the timed steps: ${gc.count} pauses, ${f(gc.ms)} ms in all ` +
      `(${f(gc.ms / p.decode.stepMs.samples.length)} ms a token), the longest ${f(gc.maxMs)} ms` +
      `${gc.major ? `; ${gc.major.count} of them full (mark-compact), ${f(gc.major.ms)} ms` : ''}.`, '');
  }
  L.push(...labelTable(pr));
  const ab = pr.ablation;
  if (ab) {
    L.push('', `The same step as one pass on the GPU (${ab.dispatches} dispatches): ${f(ab.stepMs)} ms; without each ` +
      'kernel\'s dispatches it runs faster by:', '');
    L.push(...ablationTable(ab));
    L.push(...inPassTable(ab));
    for (const q of ab.queued ?? []) {
      L.push('', `Replayed ${q.steps} times, ${q.ahead} in flight (a submit, a pass and a 4-byte readback each): ` +
        `${f(q.wallMs)} ms a step of wall time; ` +
        `each pass ${f(q.passMs.median)} ms (${f(q.passMs.min)}–${f(q.passMs.max)}), ` +
        `the GPU idle ${f(q.gapMs.median)} ms (${f(q.gapMs.min)}–${f(q.gapMs.max)}) between passes.`);
    }
  }
  L.push('');
  return L;
}

/** A prefill timed pass by pass: the GPU's busy time against the wall, and its longest waits between passes. */
function timelineLines(t: PrefillTimeline): string[] {
  const gaps = t.passes.slice(1).map((p, i) => ({
    ms: p.startMs - t.passes[i].endMs, before: i + 1,
    after: t.passes.slice(0, i + 1).reduce((a, x) => a + x.dispatches, 0),
  }));
  const worst = [...gaps].sort((a, b) => b.ms - a.ms).slice(0, 3).filter((g) => g.ms > 0.01);
  const longest = worst.map((g) => `${f(g.ms)} ms before pass ${g.before + 1} (after ${g.after} dispatches)`);
  return [
    `The same prefill timed pass by pass (its ${t.passes.length} passes, in the parts submitted while it is ` +
    'recorded, each timestamped): ' +
    `wall ${f(t.wallMs)} ms, recording ${f(t.encodeMs)} ms; the GPU busy ${f(t.busyMs)} ms over ${f(t.spanMs)} ms ` +
    'from its first pass\'s start to its last pass\'s end ' +
    `(idle between passes ${f(t.spanMs - t.busyMs)} ms` +
    `${worst.length ? `, the longest ${longest.join(', ')}` : ''}); ` +
    `the other ${f(t.wallMs - t.spanMs)} ms of the wall are before the first pass starts (recording up to the first ` +
    'submit, and the submit) and after the last ends (the readback).',
  ];
}

/** What leaving out each kernel's dispatches saves a one-pass forward (Ablation), largest first. */
function ablationTable(ab: Ablation): string[] {
  return ['| kernel [grid] | dispatches | ms saved | of the pass |', '|---|---|---|---|',
    // Slower without a kernel: the data it leaves unwritten sends later ones down other paths (a NaN in x takes the
    // tensor cores' f32 fallback, say), so no cost can be read off.
    ...ab.byKernel.map((k) => k.ms < 0
      ? `| ${esc(k.kernel)} | ${k.count} | — | (slower without it) |`
      : `| ${esc(k.kernel)} | ${k.count} | ${f(k.ms)} | ${pct(k.ms / ab.stepMs)} |`)];
}

/**
 * The one-pass step timed between its dispatches (timestamps inside the pass, where the browser has them): each
 * kernel's run and its wait on the dispatch before, summed over the step.
 */
function inPassTable(ab: Ablation): string[] {
  const p = ab.inPass;
  if (!p) return [];
  return ['', `The same pass with a timestamp after every dispatch (${f(p.stepMs)} ms in all): each kernel's ` +
    'dispatches from the end of the one before to their own end, summed:', '',
  '| kernel [grid] | dispatches | ms | of the pass | us a dispatch |', '|---|---|---|---|---|',
  ...p.byKernel.map((k) => `| ${esc(k.kernel)} | ${k.count} | ${f(k.ms)} | ${pct(k.ms / p.stepMs)} | ` +
    `${f((k.ms * 1000) / k.count)} |`)];
}

/** GPU time per kernel label of a profiled forward, largest first. */
function labelTable(p: ProfileFigure): string[] {
  return ['| kernel label | dispatches | GPU ms | share |', '|---|---|---|---|',
    ...p.byLabel.slice(0, 16).map((x) => `| ${x.label} | ${x.count} | ${f(x.ms)} | ${pct(x.share)} |`), ''];
}
