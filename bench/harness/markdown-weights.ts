// The Markdown's weights table (--weights): the model on bf16, q8 and q4 weights, full cache each, and the ratios
// issue 30's "Done when" holds the quantized weights to (q4 decode against bf16's; q8 and q4 prefill against bf16's).
import type { BenchResult } from './result.ts';
import { esc, f } from './format.ts';
import type { WeightsResult } from '../suites/weights.ts';

const MiB = 2 ** 20;
const ratio = (x: number | null | undefined, ref: number | null | undefined): string =>
  (x && ref ? `${f(x / ref)}x` : '—');

/** The weights section (the run measured at least one weights configuration). */
export function weightsLines(r: BenchResult): string[] {
  const ws: WeightsResult[] = r.weights ?? [];   // absent in results from before 20261204
  if (!ws.length) return [];
  const lens = r.settings.prefill;
  const L = ['## Weights (full cache)', '',
    `| weights | MiB on the GPU | ${lens.map((n) => `prefill ${n} tok/s`).join(' | ')} | decode tok/s | ` +
    `bytes / token | decode GB/s | weights + 4096-token cache, MiB |`,
    `|---|---|${lens.map(() => '---|').join('')}---|---|---|---|`];
  const pre = (w: WeightsResult | undefined, n: number) => w?.prefill.find((p) => p.tokens === n)?.tokPerS.median;
  for (const w of ws) {
    L.push(`| ${w.name} | ${f(w.bytes / MiB)} | ${lens.map((n) => f(pre(w, n))).join(' | ')} | ` +
      `${f(w.decode?.tokPerS.median)} | ${f(w.ceiling.bytesPerToken / 1e9)} GB | ${f(w.decodeGBps)} | ` +
      `${f(w.memory4096 / MiB)} |`);
  }
  L.push('');
  const at = (name: string) => ws.find((w) => w.name === name);
  const bf16 = at('bf16');
  if (bf16 && ws.length > 1) {
    const n = Math.max(...lens);
    const dec = (w: WeightsResult | undefined) => w?.decode?.tokPerS.median;
    L.push(`Against bf16 weights: q4 decode ${ratio(dec(at('q4')), dec(bf16))} (issue 30: >= 1.4x), ` +
      `q8 decode ${ratio(dec(at('q8')), dec(bf16))}; prefill ${n}: q8 ${ratio(pre(at('q8'), n), pre(bf16, n))}, ` +
      `q4 ${ratio(pre(at('q4'), n), pre(bf16, n))} (issue 30, at 512 tokens: >= 0.7x).`, '');
  }
  for (const w of ws) for (const e of w.errors) L.push(`- **${w.name} weights**: error in ${esc(e).slice(0, 300)}`);
  for (const w of ws) for (const e of w.skipped) L.push(`- **${w.name} weights**: skipped ${esc(e)}`);
  return [...L, ''];
}
