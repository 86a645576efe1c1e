// Terminal report card (REFRACT report.text_report): 72-column rules, 40-character bars, per-axis bands,
// diagnosis wrapped at 68 columns, per-axis diagnostics. ANSI colour only when asked for.
import { AXIS_PROSE } from '../diagnosis.ts';
import { band, MIN_FLOOR, type Band } from '../score.ts';
import type { KldBlock, RefractReport } from './json.ts';
import { wrap } from './wrap.ts';

export interface TextOptions {
  /** ANSI colours (the CLI passes true on a TTY without NO_COLOR). Default false. */
  color?: boolean;
  /** Bar width in characters (default 40). */
  barWidth?: number;
}

const BAND_COLOR: Record<Band, string> = { EXCELLENT: '32', PASS: '32', DEGRADED: '33', FAIL: '31' };
const AXIS_LABEL: Record<string, string> = {
  gtm: 'Axis A GTM       ', trajectory: 'Axis A Trajectory', kld: 'Axis B KLD       ', rniah: 'Axis C R-NIAH    ',
  plad: 'Axis D PLAD      ',
};

/** Python `round` (half to even), used for the bar fill. */
export function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d < 0.5) return f;
  if (d > 0.5) return f + 1;
  return f % 2 === 0 ? f : f + 1;
}

/** Python `f"{x:{width}.{digits}f}"`; NaN prints as `nan`. */
export function fmt(x: number | null | undefined, width: number, digits: number): string {
  const s = x === null || x === undefined ? 'n/a' : Number.isNaN(x) ? 'nan' : x.toFixed(digits);
  return s.padStart(width);
}

/**
 * KLD diagnostics: REFRACT's lines, then llama.cpp's --kl-divergence statistics where the backend gave them. Only
 * for an axis that ran (mean_kld set).
 */
function kldLines(k: KldBlock): string[] {
  const L = [' KLD diagnostics', `   chunks x ctx               : ${k.chunks} x ${k.ctx}`];
  const unc = k.mean_kld_unc != null ? ` ± ${k.mean_kld_unc.toFixed(6)}` : '';
  L.push(`   mean KLD (nats)            : ${k.mean_kld!.toFixed(6)}${unc}`);
  if (k.ppl !== null) L.push(`   candidate PPL              : ${k.ppl.toFixed(4)}`);
  if (k.rms_dp_pct !== null) L.push(`   RMS Δp (vs reference)      : ${k.rms_dp_pct.toFixed(2)} %`);
  if (k.same_topp_pct !== null) L.push(`   same top-p (vs reference)  : ${k.same_topp_pct.toFixed(2)} %`);
  L.push(`   positions scored           : ${k.convention}`);
  const p = k.kld_percentiles;
  if (p) {
    L.push(`   KLD percentiles (nats)     : ${PCT_SHOWN.map((key) => `${key} ${p[key].toFixed(6)}`).join(', ')}`);
  }
  if (k.same_top1 != null && k.same_top1_ci95) {
    const [lo, hi] = k.same_top1_ci95.map((x) => (100 * x).toFixed(3));
    L.push(`   same top-1                 : ${(100 * k.same_top1).toFixed(3)} % (95 % CI ${lo}-${hi} %)`);
  }
  const dp = k.delta_p;
  if (dp) {
    L.push(`   Δp of the next token       : mean ${(100 * dp.mean).toFixed(3)} ± ${(100 * dp.mean_unc).toFixed(3)} ` +
      `%, RMS ${(100 * dp.rms).toFixed(3)} ± ${(100 * dp.rms_unc).toFixed(3)} %`);
  }
  if (k.ppl_ref != null && k.ppl_cand != null && k.ppl_ratio != null) {
    L.push(`   PPL ref / cand             : ${k.ppl_ref.toFixed(4)} ± ${k.ppl_ref_unc!.toFixed(4)} / ` +
      `${k.ppl_cand.toFixed(4)} ± ${k.ppl_cand_unc!.toFixed(4)}`);
    L.push(`   PPL(cand)/PPL(ref)         : ${k.ppl_ratio.toFixed(6)} ± ${k.ppl_ratio_unc!.toFixed(6)}`);
  }
  return L;
}

const PCT_SHOWN = ['min', '50', '90', '99', '99.9', 'max'] as const;

export function renderTextReport(r: RefractReport, opts: TextOptions = {}): string {
  const c = (code: string, s: string) => (opts.color ? `\x1b[${code}m${s}\x1b[0m` : s);
  const w = opts.barWidth ?? 40;
  const bar = (score: number) => {
    const fill = roundHalfEven((w * Math.max(0, Math.min(score, 100))) / 100);
    return c(BAND_COLOR[band(score)], `[${'#'.repeat(fill)}${'-'.repeat(w - fill)}]`);
  };
  const axisLine = (name: string, score: number | null, why = 'skipped') => {
    if (score === null) return ` ${AXIS_LABEL[name]}:    n/a  (${why})`;
    const b = band(score);
    return ` ${AXIS_LABEL[name]}: ${fmt(score, 6, 2)}  ${bar(score)}  ${c(BAND_COLOR[b], b.padEnd(9))}  ` +
      `${AXIS_PROSE[name] ?? ''}`;
  };
  const d = r.composite_detail;
  const L: string[] = [];
  const eq = '='.repeat(72);
  const dash = '-'.repeat(72);

  L.push(eq, c('1', ` REFRACT v${r.framework_version} — Reference-anchored Robust Acid-test`));
  L.push(c('2', ' Scoring: 0 = broken, 100 = matches the fp16 reference. Higher is better.'), eq);
  L.push(` model     : ${r.model}`, ` reference : ${r.reference}`, ` candidate : ${r.candidate}`,
    ` timestamp : ${r.timestamp}`, dash);
  if (d.floor_score !== null) {
    const ok = d.floor_ok ? c('32', 'OK') : c('31', 'FAIL');
    L.push(` Noise floor (ref vs ref): ${fmt(d.floor_score, 6, 2)}  (min ${MIN_FLOOR})  [${ok}]`);
  } else {
    L.push(c('33', ' Noise floor: NOT MEASURED — pass --measure-floor to verify.'));
  }
  L.push(dash);
  const nAxes = [d.gtm_score, d.kld_score, d.rniah_score, d.plad_score].filter((v) => v !== null).length;
  L.push(c('1',
    ` REFRACT score    : ${fmt(r.composite, 6, 2)}  ${bar(r.composite)}  ${c(BAND_COLOR[r.band], r.band)}`));
  L.push(nAxes === 1 ? '   (one axis measured: the score is that axis\'s)'
    : `   (harmonic mean of ${nAxes} axes; any single low axis drops the score hard)`);
  // The report's summary: it names an axis A or B that did not run rather than call the candidate safe.
  L.push(` → ${r.summary}`, '');
  L.push(axisLine('trajectory', d.gtm_score), axisLine('kld', d.kld_score));
  // R-NIAH can run and still have no score: n/a, not in the composite (its notes say why).
  if (r.axes.rniah) L.push(axisLine('rniah', d.rniah_score, 'no score: not in the composite'));
  if (d.plad_score !== null) L.push(axisLine('plad', d.plad_score));
  L.push(dash);
  if (r.diagnosis.length) {
    L.push(c('1', ' Diagnosis'));
    for (const s of r.diagnosis) L.push(...wrap(s, 68, '   ', '   '));
    L.push(dash);
  }

  const g = r.axes.gtm;
  if (!g.skipped) {
    L.push(' GTM diagnostics');
    L.push(`   prompts                    : ${g.n_prompts}`);
    L.push(`   tokens decoded each        : ${g.n_tokens_each}`);
    L.push(`   full match rate            : ${fmt((g.full_match_rate ?? NaN) * 100, 5, 1)} %`);
    L.push(g.median_first_divergence !== null ? `   median first divergence    : token ${g.median_first_divergence}`
      : '   median first divergence    : (all matched)');
    L.push(`   mean prefix agreement      : ${fmt(g.mean_prefix_agreement_length, 5, 1)} tokens`);
    L.push(`   mean cand / ref length     : ${fmt(g.mean_cand_length, 5, 1)} / ${fmt(g.mean_ref_length, 5, 1)} tokens`);
    for (const n of g.notes) L.push(c('33', `   NOTE: ${n}`));
  }
  const k = r.axes.kld;
  if (!k.skipped) L.push('', ...kldLines(k));
  const rn = r.axes.rniah;
  if (rn) {
    L.push('', ' R-NIAH diagnostics');
    L.push(`   needle keyword             : ${rn.password_keyword}`);
    L.push(`   cells run                  : ${rn.n_cells}`);
    if (rn.skipped_cells.length) L.push(`   cells skipped (length>ctx) : ${rn.skipped_cells.length}`);
    if (rn.cells.length) {
      L.push('   per-cell (length, pos) → base_acc / cand_acc / degradation:');
      for (const x of rn.cells) {
        L.push(`     (${String(x.length).padStart(5)}, ${x.position.toFixed(2)}) → ${x.base_acc.toFixed(2)} / ` +
          `${x.cand_acc.toFixed(2)} / ${x.degradation.toFixed(2)}`);
      }
    }
    for (const n of rn.notes) L.push(c('33', `   NOTE: ${n}`));
  }
  const pl = r.axes.plad;
  if (pl) {
    L.push('', ' PLAD diagnostics');
    L.push(`   prompts × perturbations    : ${pl.n_prompts} × ${pl.n_perturbations}`);
    for (const [pert, s] of Object.entries(pl.per_perturbation_score)) {
      const tag = s === null || !Number.isFinite(s) ? 'skipped (never applied)' : c(BAND_COLOR[band(s)],
        `${fmt(s, 6, 2)} ${band(s).padEnd(9)}`);
      L.push(`   ${pert.padEnd(10)} : ${tag}`);
    }
    for (const n of pl.notes) L.push(c('33', `   NOTE: ${n}`));
  }
  if (d.notes.length) {
    L.push(dash);
    for (const n of d.notes) L.push(c('33', ` NOTE: ${n}`));
  }
  const extras = Object.entries(r.extras);
  if (extras.length) {
    L.push(dash);
    for (const [key, v] of extras) L.push(` ${key}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  }
  if (r.partial) {
    L.push(dash, c('33', ` PARTIAL REPORT (${r.partial.reason}): not finished: ${r.partial.unfinished.join(', ')}`));
  }
  L.push(eq);
  return L.join('\n');
}
