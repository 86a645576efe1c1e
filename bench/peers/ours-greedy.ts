// Our greedy ids from a prompt given as ids, for the token check against the peers (issue 44):
//   npx tsx bench/peers/ours-greedy.ts --model DIR --ids FILE [--n 128] [--mask causal|prefix] [--dtype f32|bf16]
//        [--quantize 4|8] [--kv ctk=q8_0,ctv=q8_0] [--top 5] [--against PEER.json,...] [--json OUT]
// FILE: a JSON array of ids, tools/parity-1b/make.py's prompts.json (its first prompt), or ids separated by anything
// not a digit. The prompt goes through one forward with the given mask (causal: what llama.cpp's hrm_text does;
// prefix: HRM's bidirectional prompt block, what transformers.js feeds), then --n - 1 single-token causal steps, each
// the argmax of the last logits (ties to the lowest id). Plain forward calls, no captured decode graph: a check, not
// a speed figure (bench/runners/run.ts times the same work).
// --against PEER.json[,...] (each a peer's JSON line: hrm-greedy's, or the transformers.js page's) adds a
// teacher-forced pass:
// the peer's own ids fed back one by one, and at each step whether our argmax equals the peer's pick in the very same
// context, with the gap ours[our pick] - ours[peer's pick] (0 where they agree) and our logits' rms. A free-running
// comparison stops meaning anything after the first differing token (the contexts part); the teacher-forced one
// counts every step, and its gaps say whether a differing pick was a near-tie (precision) or a different model.
// Prints one JSON line (also to --json).
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/index.ts';
import type { ActDtype } from '../../src/hrm/cache.ts';
import { kvStorage } from '../../src/advanced.ts';

export function readIds(path: string): number[] {
  const text = readFileSync(path, 'utf8');
  try {
    const j = JSON.parse(text) as unknown;
    if (Array.isArray(j)) return j.map(Number);
    const p = (j as { prompts?: { ids: number[] }[]; ids?: number[] });
    if (p.prompts?.[0]?.ids) return p.prompts[0].ids;
    if (p.ids) return p.ids;
  } catch { /* not JSON: ids separated by anything else */ }
  return (text.match(/\d+/g) ?? []).map(Number);
}

/** A peer's JSON line (the last line of the file starting with '{'). */
export function readPeer(path: string): { ids: number[] } & Record<string, unknown> {
  const line = readFileSync(path, 'utf8').trim().split('\n').filter((l) => l.startsWith('{')).pop();
  if (!line) throw new Error(`ours-greedy: ${path} holds no JSON line`);
  return JSON.parse(line) as { ids: number[] } & Record<string, unknown>;
}

/** Top-k (id, logit) of a row, ties to the lower id; and the row's rms. */
export function topK(row: Float32Array, k: number): { top: [number, number][]; rms: number } {
  const top: [number, number][] = [];
  let ss = 0;
  for (let v = 0; v < row.length; v++) {
    const x = row[v];
    ss += x * x;
    if (top.length < k || x > top[top.length - 1][1]) {
      let i = top.length < k ? top.length : top.length - 1;
      if (top.length < k) top.push([v, x]); else top[i] = [v, x];
      while (i > 0 && top[i - 1][1] < top[i][1]) { [top[i - 1], top[i]] = [top[i], top[i - 1]]; i--; }
    }
  }
  return { top, rms: Math.sqrt(ss / row.length) };
}

async function main(): Promise<void> {
  const { values: v } = parseArgs({ options: {
    model: { type: 'string' }, ids: { type: 'string' }, n: { type: 'string', default: '128' },
    mask: { type: 'string', default: 'causal' }, dtype: { type: 'string', default: 'f32' },
    quantize: { type: 'string' }, kv: { type: 'string' }, top: { type: 'string', default: '5' },
    against: { type: 'string' }, json: { type: 'string' },
  } });
  if (!v.model || !v.ids) throw new Error('ours-greedy: --model DIR and --ids FILE are required');
  const mask = v.mask as 'causal' | 'prefix';
  if (mask !== 'causal' && mask !== 'prefix') throw new Error(`ours-greedy: --mask ${v.mask}: causal or prefix`);
  const n = Number(v.n), k = Number(v.top);
  const prompt = readIds(v.ids);
  const dtype = v.dtype as ActDtype;
  const quantize = v.quantize ? { bits: Number(v.quantize), groupSize: 64 } : undefined;
  const lm = await loadModel(dirFiles(`${v.model.replace(/\/$/, '')}/`), { dtype, quantize });
  const model = lm.model;
  const kv = kvStorage(v.kv, 'kv');
  const last = async (ids: number[], cache: ReturnType<typeof model.newCache>, m: 'causal' | 'prefix') => {
    const t = model.forward(ids, cache, { mask: m, logits: 'last' });
    try { return await t.readF32(); } finally { t.dispose(); }
  };

  // Free-running greedy.
  let cache = model.newCache({ capacity: prompt.length + n, kv, mode: 'after-prefill' });
  const ids: number[] = [], tops: [number, number][][] = [];
  const t0 = performance.now();
  let row = await last(prompt, cache, mask);
  const promptMs = performance.now() - t0;
  const t1 = performance.now();
  for (let i = 0; ; i++) {
    const { top } = topK(row, k);
    ids.push(top[0][0]);
    tops.push(top.map(([id, x]) => [id, Number(x.toPrecision(6))]));
    if (i === n - 1) break;
    row = await last([top[0][0]], cache, 'causal');
  }
  const decodeMs = performance.now() - t1;
  cache.dispose();

  // Teacher-forced on each peer's ids.
  const forced: Record<string, unknown>[] = [];
  for (const path of v.against ? v.against.split(',') : []) {
    const peer = readPeer(path);
    const pids = peer.ids.slice(0, n);
    cache = model.newCache({ capacity: prompt.length + pids.length, kv, mode: 'after-prefill' });
    const steps: { step: number; ours: number; peer: number; gap: number; rms: number }[] = [];
    row = await last(prompt, cache, mask);
    for (let i = 0; i < pids.length; i++) {
      const { top, rms } = topK(row, 1);
      const ours = top[0][0];
      steps.push({ step: i, ours, peer: pids[i], gap: Number((row[ours] - row[pids[i]]).toPrecision(4)),
        rms: Number(rms.toPrecision(4)) });
      if (i < pids.length - 1) row = await last([pids[i]], cache, 'causal');
    }
    cache.dispose();
    forced.push({ peer: path, agree: steps.filter((s) => s.ours === s.peer).length, steps: pids.length,
      differing: steps.filter((s) => s.ours !== s.peer) });
  }
  const adapter = model.gpu.summary.description || model.gpu.summary.vendor;
  model.gpu.destroy();
  const out = {
    engine: 'hrm-webgpu', model: v.model, mask, dtype, quantize: v.quantize ?? null, kv: v.kv ?? null, adapter,
    prompt_tokens: prompt.length, prompt_ms: Number(promptMs.toFixed(3)), decode_tokens: n - 1,
    decode_ms: Number(decodeMs.toFixed(3)), ids, top: tops, ...(forced.length ? { teacher_forced: forced } : {}),
  };
  const line = JSON.stringify(out);
  if (v.json) writeFileSync(v.json, line + '\n');
  console.log(line);
}

if (/ours-greedy\.(ts|mjs)$/.test(process.argv[1] ?? '')) {
  main().catch((e) => { console.error((e as Error).stack ?? String(e)); process.exit(2); });
}
