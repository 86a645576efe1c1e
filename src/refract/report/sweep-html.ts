// The sweep's HTML page: the Pareto plot (charts.ts) and the table of candidates, self-contained like the report.
import type { SweepResult } from '../sweep.ts';
import { paretoSpec, renderSvg } from './charts.ts';
import { esc } from './html.ts';

const n2 = (x: number | null) => (x === null ? '—' : x.toFixed(2));

export async function renderSweepHtml(s: SweepResult,
  title = `REFRACT sweep against ${s.reference}`): Promise<string> {
  const svg = s.rows.some((r) => r.composite !== null) ? await renderSvg(paretoSpec(s.rows))
    : '<p>No candidate finished.</p>';
  const rows = [...s.rows].sort((a, b) => (b.composite ?? -1) - (a.composite ?? -1)).map((r) =>
    `<tr${r.pareto ? ' class="front"' : ''}><td>${esc(r.candidate)}</td><td>${Math.round(r.bytes_per_token)}</td>` +
    `<td>${n2(r.composite)}</td><td>${esc(r.band ?? (r.error ? 'ERROR' : '—'))}</td>` +
    `<td>${n2(r.gtm)}</td><td>${n2(r.kld)}</td><td>${n2(r.rniah)}</td><td>${n2(r.plad)}</td>` +
    `<td>${r.pareto ? 'yes' : ''}</td><td>${esc(r.error ?? (r.resumed ? 'resumed' : ''))}</td></tr>`).join('');
  const caption = 'Composite against KV-cache bytes per token (both axes span the data, not 0-100); the dashed line ' +
    'joins the Pareto front.';
  const head = ['candidate', 'bytes/token', 'composite', 'band', 'trajectory', 'KLD', 'R-NIAH', 'PLAD', 'Pareto',
    'note'].map((h) => `<th>${h}</th>`).join('');
  return `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"/><title>${esc(title)}</title><style>` +
    'body{font:14px/1.45 system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}' +
    'table{border-collapse:collapse}' +
    'th,td{border-bottom:1px solid #d0d7de;padding:.2em .6em;text-align:left}tr.front td{font-weight:600}' +
    'svg{max-width:100%;height:auto}' +
    `</style></head><body>\n<h1>${esc(title)}</h1>\n<figure>${svg}<figcaption>${caption}</figcaption></figure>\n` +
    `<table><thead><tr>${head}</tr></thead>` +
    `<tbody>${rows}</tbody></table>\n<details><summary>Raw JSON</summary><pre>${esc(JSON.stringify(s, null, 2))}` +
    '</pre></details>\n</body></html>\n';
}
