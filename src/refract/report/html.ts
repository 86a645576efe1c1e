// Self-contained HTML report: one file, no script, no network. Everything in the JSON report (the raw JSON is
// embedded at the end), plots rendered by Vega to inline SVG, a per-prompt divergence view with token diffs.
// All model and prompt text goes through esc(); the markup is well-formed XML (void elements self-closed).
import type { TrajectoryPromptRecord } from '../axes/trajectory.ts';
import { axisScoresSpec, BAND_COLORS, divergenceSpec, klSpecs, pladSpec, renderSvg, rniahSpec } from './charts.ts';
import { toJsonString, type RefractReport } from './json.ts';
import { DELTA_P_PERCENTILES, KLD_PERCENTILES } from '../axes/kld-stats.ts';
import { CSS, FOOTER } from './html-page.ts';

/** Escape text for HTML element content and attribute values. */
export function esc(s: unknown): string {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g,
    '&quot;').replace(/'/g, '&#39;');
}

const n2 = (x: number | null | undefined,
  d = 2) => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(d));

function table(rows: Array<[string, unknown]>): string {
  const body = rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v ?? 'n/a')}</td></tr>`).join('');
  return `<table class="kv">${body}</table>`;
}

function grid(head: string[], rows: unknown[][]): string {
  const th = head.map((h) => `<th>${esc(h)}</th>`).join('');
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('');
  return `<table class="grid"><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table>`;
}

function notes(list: readonly string[]): string {
  return list.length ? `<ul class="notes">${list.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>` : '';
}

function figure(svg: string, caption: string): string {
  return `<figure>${svg}<figcaption>${esc(caption)}</figcaption></figure>`;
}

function tokenText(rec: TrajectoryPromptRecord, side: 'ref' | 'cand', i: number): string {
  const strs = side === 'ref' ? rec.ref_tokens : rec.cand_tokens;
  const ids = side === 'ref' ? rec.ref_token_ids : rec.cand_token_ids;
  return strs ? strs[i].replace(/\n/g, '↵').replace(/ /g, '·') : String(ids[i]);
}

/** One prompt's diff: shared prefix, then each side's remainder token by token. */
function tokenDiff(rec: TrajectoryPromptRecord): string {
  const k = rec.prefix_agreement_length;
  const row = (side: 'ref' | 'cand') => {
    const n = side === 'ref' ? rec.ref_length : rec.cand_length;
    const same = Array.from({ length: k }, (_, i) => tokenText(rec, side, i)).join(' ');
    const rest = Array.from({ length: n - k },
      (_, j) => `<span class="tok ${side}">${esc(tokenText(rec, side, k + j))}</span>`).join(' ');
    return `<div class="seq"><span class="who">${side}</span><span class="same">${esc(same)}</span> ${rest}</div>`;
  };
  const status = rec.matched ? 'identical' : `diverges at token ${rec.first_divergence}`;
  return (
    `<details class="prompt${rec.matched ? '' : ' diverged'}"><summary><code>${esc(rec.id)}</code> ` +
    `<span class="cat">${esc(rec.category ?? '')}</span> ${esc(status)} ` +
    `(prefix ${k} / cand ${rec.cand_length} / ref ${rec.ref_length})</summary>` +
    `<pre class="ptext">${esc(rec.prompt)}</pre>${row('ref')}${row('cand')}</details>`
  );
}

const BAND_PRETTY: Record<string, string> = { EXCELLENT: 'Excellent', PASS: 'Pass', DEGRADED: 'Degraded',
  FAIL: 'Fail' };
const BOX_CLASS: Record<string, string> = { EXCELLENT: 'green', PASS: 'green', DEGRADED: 'amber', FAIL: 'red' };

/** The original's summary box: the band's prose and which measured axes fall below PASS. */
function summaryBox(r: RefractReport): string {
  const d = r.composite_detail;
  const low = ([['Trajectory', d.gtm_score], ['KLD', d.kld_score], ['R-NIAH', d.rniah_score],
    ['PLAD', d.plad_score]] as const)
    .filter(([, sc]) => sc !== null &&
      sc < 80).map(([name, sc]) => `${name} ${(sc! < 60 ? 'FAIL' : 'DEGRADED').toLowerCase()}`);
  const below = low.length ? `Surfaces below threshold: ${low.join(', ')}.` : 'All measured axes pass.';
  const desc = `Composite of ${n2(r.composite)} falls in the ${BAND_PRETTY[r.band]} band. ${below}`;
  return `<div class="summary-box ${BOX_CLASS[r.band]}"><div class="title">${esc(r.summary)}</div>` +
    `<div class="desc">${esc(desc)}</div></div>`;
}

/** llama.cpp's --kl-divergence statistics, when the backend reported them. */
function kldStatsHtml(k: RefractReport['axes']['kld']): string {
  if (!k.kld_percentiles) return '';
  const pct = (p: Record<string, number>, keys: readonly string[], f: (x: number) => string) => grid([...keys],
    [keys.map((key) => f(p[key]))]);
  const rows: Array<[string, unknown]> = [
    ['same top-1', k.same_top1 === null ? 'n/a' : `${(100 * k.same_top1).toFixed(3)} % ` +
      `(95 % Wilson ${k.same_top1_ci95!.map((x) => (100 * x).toFixed(3)).join(' – ')} %)`],
    ['PPL ref / cand', k.ppl_ref === null ? 'n/a'
      : `${n2(k.ppl_ref, 4)} ± ${n2(k.ppl_ref_unc, 4)} / ${n2(k.ppl_cand, 4)} ± ${n2(k.ppl_cand_unc, 4)}`],
    ['PPL(cand) / PPL(ref)', k.ppl_ratio === null ? 'n/a' : `${n2(k.ppl_ratio, 6)} ± ${n2(k.ppl_ratio_unc, 6)}`],
    ['Δp of the next token', k.delta_p ? `mean ${(100 * k.delta_p.mean).toFixed(3)} ± ` +
      `${(100 * k.delta_p.mean_unc).toFixed(3)} %, RMS ${(100 * k.delta_p.rms).toFixed(3)} ± ` +
      `${(100 * k.delta_p.rms_unc).toFixed(3)} %` : 'n/a'],
  ];
  return `<h3>KL statistics (as llama-perplexity --kl-divergence)</h3>${table(rows)}<p>KL percentiles (nats)</p>` +
    pct(k.kld_percentiles, KLD_PERCENTILES, (x) => x.toFixed(6)) +
    (k.delta_p ?
      `<p>Δp percentiles (%)</p>${pct(k.delta_p.percentiles, DELTA_P_PERCENTILES, (x) => (100 * x).toFixed(3))}` : '');
}

const MODEL_KEYS = ['model', 'checkpoint', 'context_length', 'dtype', 'condition'];
const HARDWARE_KEYS = ['adapter', 'runtime', 'runtime_version', 'platform', 'user_agent'];

/** Model, hardware and environment cards from the report's environment block (backend metadata). */
function runDetails(r: RefractReport): string {
  const env = r.environment;
  const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  const card = (title: string,
    rows: Array<[string, unknown]>) => `<div class="run-card"><h3>${esc(title)}</h3>${table(rows)}</div>`;
  const pick = (keys: string[]) => keys.filter((key) => env[key] !== undefined).map((key) => [key,
    show(env[key])] as [string, unknown]);
  const rest = Object.keys(env).filter((key) => !MODEL_KEYS.includes(key) &&
    !HARDWARE_KEYS.includes(key)).map((key) => [key, show(env[key])] as [string, unknown]);
  const environment = card('Environment', [...rest, ['reference', r.reference], ['candidate', r.candidate]]);
  return `<div class="run-grid">${card('Model', pick(MODEL_KEYS))}${card('Hardware', pick(HARDWARE_KEYS))}` +
    `${environment}</div>`;
}

export interface HtmlOptions {
  /** Page title (default "REFRACT: model / candidate"). */
  title?: string;
}

/** Render the whole report as one self-contained HTML page. */
export async function renderHtmlReport(r: RefractReport, opts: HtmlOptions = {}): Promise<string> {
  const d = r.composite_detail;
  const g = r.axes.gtm;
  const k = r.axes.kld;
  const kl = klSpecs(r);
  const [axesSvg, divSvg, klCorpus, klChunk, rnSvg, plSvg] = await Promise.all([
    renderSvg(axisScoresSpec(r)),
    renderSvg(divergenceSpec(r)),
    kl ? renderSvg(kl.corpus) : null,
    kl ? renderSvg(kl.inChunk) : null,
    (async () => { const s = rniahSpec(r); return s ? renderSvg(s) : null; })(),
    (async () => { const s = pladSpec(r); return s ? renderSvg(s) : null; })(),
  ]);
  const title = opts.title ?? `REFRACT: ${r.model} / ${r.candidate}`;
  const badge = (b: keyof typeof BAND_COLORS) =>
    `<span class="badge" style="background:${BAND_COLORS[b]}">${esc(b)}</span>`;
  const S: string[] = [];

  S.push(`<h1>REFRACT report</h1>`,
    table([['model', r.model], ['reference', r.reference], ['candidate', r.candidate], ['timestamp', r.timestamp],
    ['framework', `REFRACT ${r.framework_version} (${r.schema})`], ['score',
    `${r.score_direction}, range ${r.score_range.join('..')}`]]));
  S.push('<div class="card"><div class="label">Composite score</div>' +
    `<span class="big">${n2(r.composite)}</span> <span class="of">/ 100</span> ${badge(r.band)}`);
  S.push(summaryBox(r));
  S.push(d.floor_score !== null
    ? `<p>Noise floor (ref vs ref): ${n2(d.floor_score)} (min ${d.floor_min}) ${d.floor_ok ? 'OK' : 'FAIL'}</p>`
    : '<p>Noise floor: not measured (the reference scored against itself; ' +
    '<code>refract score --measure-floor</code>, or <code>measureFloor: true</code> in runRefract).</p>');
  if (r.partial) {
    S.push(`<p class="partial">Partial report (${esc(r.partial.reason)}): not finished: ` +
      `${esc(r.partial.unfinished.join(', '))}.</p>`);
  }
  if (r.diagnosis.length) {
    S.push(`<div class="diag"><strong>Diagnosis</strong>${r.diagnosis.map((x) => `<p>${esc(x)}</p>`).join('')}</div>`);
  }
  S.push(`${notes(d.notes)}</div>`);
  S.push(figure(axesSvg, 'Composite = harmonic mean of the axes that ran; dashed lines: band edges 60 / 80 / 90.'));
  const rnLow = r.axes.rniah?.confidence === 'low';
  // No score: skipped (not run), or n/a (R-NIAH ran but could not score).
  const noScore = (name: string, b: string) =>
    b === 'n/a' ? [name, 'n/a', 'n/a', 'no score: not in the composite'] : [name, 'n/a', 'Skipped', 'not measured'];
  const axisRow = (name: string, score: number | null, b: string, desc: string, low = false) =>
    score === null ? noScore(name, b)
      : low ? [name, '—', 'Low confidence', `${desc} (raw ${n2(score)}: the reference itself rarely retrieves)`]
        : [name, n2(score), b, desc];
  const axisRows: unknown[][] = [axisRow('A Trajectory (gtm)', d.gtm_score, g.band, g.description),
    axisRow('B KLD@D', d.kld_score, k.band, k.description)];
  if (r.axes.rniah) axisRows.push(axisRow('C R-NIAH', d.rniah_score, r.axes.rniah.band,
    r.axes.rniah.description, rnLow));
  if (r.axes.plad) axisRows.push(axisRow('D PLAD', d.plad_score, r.axes.plad.band, r.axes.plad.description));
  S.push(grid(['axis', 'score', 'band', 'measures'], axisRows));

  if (g.skipped) S.push('<h2>Axis A: trajectory</h2><p>Skipped (not measured).</p>');
  else S.push('<h2>Axis A: trajectory</h2>', table([
    ['score', n2(g.score)], ['prompts', g.n_prompts], ['tokens decoded each', g.n_tokens_each], ['full match rate',
      `${n2((g.full_match_rate ?? NaN) * 100, 1)} %`],
    ['median first divergence', g.median_first_divergence ?? '(all matched)'], ['mean prefix agreement',
      n2(g.mean_prefix_agreement_length, 1)],
    ['mean cand / ref length', `${n2(g.mean_cand_length, 1)} / ${n2(g.mean_ref_length, 1)}`],
  ]), notes(g.notes));
  if (!g.skipped) {
    S.push(figure(divSvg, 'Per prompt: agreed prefix (first divergence index) over the decoded length.'));
    S.push(`<h3>Token diff per prompt</h3>`, g.per_prompt.map(tokenDiff).join(''));
  }

  if (k.skipped) S.push('<h2>Axis B: KLD@D</h2><p>Skipped (not measured).</p>');
  else {
    S.push('<h2>Axis B: KLD@D</h2>', table([
      ['score', n2(k.score)],
      ['mean KLD (nats)', k.mean_kld!.toFixed(6) + (k.mean_kld_unc != null ? ` ± ${k.mean_kld_unc.toFixed(6)}` : '')],
      ['candidate PPL', n2(k.ppl, 4)],
      ['RMS Δp', k.rms_dp_pct === null ? 'n/a' : `${n2(k.rms_dp_pct)} %`], ['same top token',
        k.same_topp_pct === null ? 'n/a' : `${n2(k.same_topp_pct)} %`],
      ['chunks × ctx', `${k.chunks} × ${k.ctx}`], ['positions scored', k.convention], ['self reference',
        k.is_self_reference], ['corpus', k.corpus.path],
      ['corpus bytes', k.corpus.size_bytes], ['corpus sha256 (head)',
        `${k.corpus.sha256_head ?? 'n/a'} (${k.corpus.sha256_head_bytes} bytes)`],
    ]), kldStatsHtml(k));
    if (klCorpus && klChunk) {
      S.push(figure(klCorpus,
        'Per-position KL(P_ref || P_cand) across the corpus, binned means; non-finite positions dropped.'));
      S.push(figure(klChunk, 'Mean KL by position within a chunk.'));
    } else {
      S.push('<p>The backend did not report per-position KL.</p>');
    }
  }

  const rn = r.axes.rniah;
  if (rn) {
    S.push('<h2>Axis C: R-NIAH</h2>',
      table([['score', n2(rn.score)], ['needle', rn.needle], ['keyword', rn.password_keyword],
      ['cells run', rn.n_cells], ['confidence', `${rn.confidence} (base accuracy ${n2(rn.base_acc_avg)})`]]));
    if (rn.score === null) {
      S.push('<div class="summary-box amber"><div class="title">R-NIAH: n/a</div><div class="desc">' +
        `${esc(rn.notes[rn.notes.length - 1] ?? '')}</div></div>`);
    } else if (rnLow) {
      S.push('<div class="summary-box amber"><div class="title">Low confidence: the score is a noise floor.</div>' +
        `<div class="desc">The reference retrieves at only ${Math.round(100 * rn.base_acc_avg)} % of cells on ` +
        `average, so R-NIAH = ${n2(rn.score)} measures "candidate matches reference" rather than retrieval; it is ` +
        'left out of the headline. Try shorter --rniah-lengths or a model with a longer effective context.' +
        '</div></div>');
    }
    if (rnSvg) S.push(figure(rnSvg, 'Degradation max(0, base_acc - cand_acc) per cell; labels: base / cand accuracy.'));
    // A cell where the reference never retrieves says nothing about the candidate: n/a, as the original.
    S.push(grid(['length', 'position', 'trials', 'base_acc', 'cand_acc', 'degradation'],
      rn.cells.map((c) => c.base_acc === 0
      ? [c.length, c.position.toFixed(2), c.n_trials, 'n/a', 'n/a', 'n/a'] : [c.length, c.position.toFixed(2),
        c.n_trials, n2(c.base_acc), n2(c.cand_acc), n2(c.degradation)])));
    if (rn.skipped_cells.length) {
      const cells = rn.skipped_cells.map(([l, p]) => `(${l}, ${p.toFixed(2)})`).join(' ');
      S.push(`<p>Skipped cells: ${esc(cells)}</p>`);
    }
    S.push(notes(rn.notes));
  }
  const pl = r.axes.plad;
  if (pl) {
    S.push('<h2>Axis D: PLAD</h2>',
      table([['score', n2(pl.score)], ['prompts × perturbations', `${pl.n_prompts} × ${pl.n_perturbations}`],
      ['token ids', pl.token_source], ['confidence', pl.confidence], ['skipped perturbations',
      pl.skipped_perturbations.join(', ') || 'none']]));
    if (plSvg) S.push(figure(plSvg, 'Mean 100·exp(-5·excess drift) per perturbation.'));
    S.push(grid(['prompt', 'perturbation', 'perturbed prompt', 'ref drift', 'cand drift', 'excess', 'plad_pp'],
      pl.per_prompt.map((x) => [x.prompt_id, x.perturbation, x.perturbed_prompt, n2(x.ref_drift, 3),
      n2(x.cand_drift, 3), n2(x.excess_drift, 3), n2(x.plad_pp)])));
    S.push(notes(pl.notes));
  }

  S.push('<h2>Run details</h2>', runDetails(r));
  S.push(`<h3>Repro command</h3><pre>${esc(r.repro_command || '(not recorded)')}</pre>`);
  if (Object.keys(r.extras).length) S.push('<h3>Extras</h3>',
    table(Object.entries(r.extras).map(([key, v]) => [key, typeof v === 'string' ? v : JSON.stringify(v)])));
  const raw = toJsonString(r, 0).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  S.push(`<details><summary>Raw JSON report</summary><pre>${raw}</pre></details>`);

  S.push(FOOTER);
  return '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"/>' +
    '<meta name="viewport" content="width=device-width, initial-scale=1"/>' +
    `<title>${esc(title)}</title><style>${CSS}</style></head><body>\n${S.join('\n')}\n</body></html>\n`;
}
