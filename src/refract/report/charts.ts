// The HTML report's plots: Vega-Lite specs rendered to SVG strings by Vega (`view.toSVG()`, no canvas, no DOM),
// so the report needs no script. Vega escapes all text it writes into the SVG.
import type { TopLevelSpec } from 'vega-lite';
import type { RefractReport } from './json.ts';
import { needsLeader, placeLabels, type LabelBox } from './labels.ts';

// PASS is blue, not a second green: two greens side by side in a sweep's plot could not be told apart.
export const BAND_COLORS = { EXCELLENT: '#1a7f37', PASS: '#0969da', DEGRADED: '#bf8700', FAIL: '#cf222e' } as const;
const BAND_SCALE = { domain: Object.keys(BAND_COLORS), range: Object.values(BAND_COLORS) };
const CONFIG = { view: { stroke: null }, font: 'system-ui, sans-serif',
  axis: { labelFontSize: 11, titleFontSize: 11 } };

/** Render one Vega-Lite spec to an SVG string (vega and vega-lite are loaded on first use). */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')]);
  const compiled = vl.compile({ ...spec, config: { ...CONFIG, ...(spec.config ?? {}) } } as TopLevelSpec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Horizontal bars of the axis scores (and the composite) on 0..100, coloured by band. */
export function axisScoresSpec(r: RefractReport): TopLevelSpec {
  const d = r.composite_detail;
  const rows = [
    { axis: 'REFRACT (composite)', score: r.composite, band: r.band },
    { axis: 'A Trajectory', score: d.gtm_score, band: r.axes.gtm.band },
    { axis: 'B KLD@D', score: d.kld_score, band: r.axes.kld.band },
    ...(r.axes.rniah ? [{ axis: 'C R-NIAH', score: d.rniah_score, band: r.axes.rniah.band }] : []),
    ...(r.axes.plad ? [{ axis: 'D PLAD', score: d.plad_score, band: r.axes.plad.band }] : []),
  ].filter((x) => x.score !== null);
  return {
    width: 520,
    height: { step: 26 },
    data: { values: rows },
    layer: [
      {
        mark: { type: 'bar', cornerRadiusEnd: 3 },
        encoding: {
          y: { field: 'axis', type: 'nominal', sort: null, title: null },
          x: { field: 'score', type: 'quantitative', scale: { domain: [0, 100] }, title: 'score (higher is better)' },
          color: { field: 'band', type: 'nominal', scale: BAND_SCALE, legend: null },
        },
      },
      {
        mark: { type: 'text', align: 'left', dx: 4 },
        encoding: {
          y: { field: 'axis', type: 'nominal', sort: null },
          x: { field: 'score', type: 'quantitative' },
          text: { field: 'score', type: 'quantitative', format: '.2f' },
        },
      },
      { data: { values: [{ t: 60 }, { t: 80 }, { t: 90 }] }, mark: { type: 'rule', strokeDash: [3, 3], opacity: 0.5 },
        encoding: { x: { field: 't', type: 'quantitative' } } },
    ],
  };
}

/** Per-position KL across the corpus (binned means, Vega aggregates) and its mean by position within a chunk. */
export function klSpecs(r: RefractReport): { corpus: TopLevelSpec; inChunk: TopLevelSpec } | null {
  const kl = r.axes.kld.per_position_kld;
  if (!kl || kl.length === 0) return null;
  const ctx = r.axes.kld.ctx;
  const values = kl.flatMap((v, i) => (v === null ? [] : [{ pos: i, kl: v, inChunk: i % ctx }]));
  const base = (field: string, title: string, maxbins: number): TopLevelSpec => ({
    width: 640,
    height: 160,
    data: { values },
    mark: { type: 'area', line: true, opacity: 0.35, interpolate: 'step-after' },
    encoding: {
      x: { field, type: 'quantitative', bin: { maxbins }, title },
      y: { field: 'kl', type: 'quantitative', aggregate: 'mean', title: 'mean KL (nats)' },
    },
  });
  return {
    corpus: base('pos', `token position across the corpus (${r.axes.kld.chunks} chunks × ${ctx})`, 400),
    inChunk: base('inChunk', 'position within a chunk (causal: later positions read more cached K/V)', 128),
  };
}

/** Per prompt: candidate length (grey) and agreed prefix (coloured), i.e. where the trajectories part. */
export function divergenceSpec(r: RefractReport): TopLevelSpec {
  const rows = r.axes.gtm.per_prompt.map((p) => ({
    id: p.id, prefix: p.prefix_agreement_length, length: Math.max(p.cand_length,
      p.ref_length), matched: p.matched ? 'identical' : 'diverged',
  }));
  return {
    width: 520,
    height: { step: 14 },
    data: { values: rows },
    layer: [
      { mark: { type: 'bar', color: '#d0d7de' },
        encoding: { y: { field: 'id', type: 'nominal', sort: null, title: null },
        x: { field: 'length', type: 'quantitative', title: 'tokens (bar: agreed prefix = first divergence index)' } } },
      {
        mark: 'bar',
        encoding: {
          y: { field: 'id', type: 'nominal', sort: null },
          x: { field: 'prefix', type: 'quantitative' },
          color: { field: 'matched', type: 'nominal',
            scale: { domain: ['identical', 'diverged'],
            range: [BAND_COLORS.EXCELLENT, BAND_COLORS.DEGRADED] }, title: null },
        },
      },
    ],
  };
}

/** R-NIAH heatmap: degradation per (length, position), annotated base / cand accuracy. */
export function rniahSpec(r: RefractReport): TopLevelSpec | null {
  const rn = r.axes.rniah;
  if (!rn || rn.cells.length === 0) return null;
  const rows = rn.cells.map((c) => ({ length: String(c.length), position: c.position.toFixed(2),
    degradation: c.degradation, label: `${c.base_acc.toFixed(2)} / ${c.cand_acc.toFixed(2)}` }));
  const enc = { x: { field: 'position', type: 'ordinal' as const, title: 'needle position', axis: { labelAngle: 0 } },
    y: { field: 'length', type: 'ordinal' as const, sort: null, title: 'context length' } };
  return {
    width: { step: 110 },
    height: { step: 34 },
    data: { values: rows },
    layer: [
      { mark: 'rect',
        encoding: { ...enc,
        color: { field: 'degradation', type: 'quantitative', scale: { domain: [0, 1], range: ['#dafbe1', '#cf222e'] },
        title: 'degradation' } } },
      { mark: { type: 'text', fontSize: 11 }, encoding: { ...enc, text: { field: 'label', type: 'nominal' } } },
    ],
  };
}

/** PLAD mean score per perturbation (perturbations that never applied are left out). */
export function pladSpec(r: RefractReport): TopLevelSpec | null {
  const pl = r.axes.plad;
  if (!pl) return null;
  const rows = Object.entries(pl.per_perturbation_score)
    .filter(([, s]) => s !== null && Number.isFinite(s))
    .map(([perturbation, score]) => ({ perturbation, score,
      band: score >= 90 ? 'EXCELLENT' : score >= 80 ? 'PASS' : score >= 60 ? 'DEGRADED' : 'FAIL' }));
  if (rows.length === 0) return null;
  return {
    width: 400,
    height: { step: 24 },
    data: { values: rows },
    mark: 'bar',
    encoding: {
      y: { field: 'perturbation', type: 'nominal', sort: null, title: null },
      x: { field: 'score', type: 'quantitative', scale: { domain: [0, 100] }, title: 'mean plad_pp' },
      color: { field: 'band', type: 'nominal', scale: BAND_SCALE, legend: null },
    },
  };
}

/** The Pareto plot's data area in pixels (Vega's width and height). */
export const PARETO_SIZE = { width: 560, height: 320 } as const;

/**
 * The composite axis of the Pareto plot: the scores' range with a margin of 15 % of it (at least one point, and
 * a range of at least two points), in whole points within [0, 100]. Sweeps score 90-100 mostly: on 0-100 their
 * points would crowd the top edge.
 */
export function compositeDomain(scores: readonly number[]): [number, number] {
  const lo = Math.min(...scores);
  const hi = Math.max(...scores);
  const margin = Math.max(1, 0.15 * Math.max(hi - lo, 2));
  return [Math.max(0, Math.floor(lo - margin)), Math.min(100, Math.ceil(hi + margin))];
}

/** The bytes-per-token axis: the range with 8 % of it (or of the value, for one size) on each side. */
export function bytesDomain(bytes: readonly number[]): [number, number] {
  const lo = Math.min(...bytes);
  const hi = Math.max(...bytes);
  const margin = 0.08 * (hi > lo ? hi - lo : Math.max(hi, 1));
  return [lo - margin, hi + margin];
}

interface ParetoRow {
  candidate: string;
  bytes_per_token: number;
  composite: number | null;
  band: string | null;
  pareto: boolean;
}

/**
 * Sweep: composite against KV-cache bytes per token, one point per candidate, the Pareto front as a line. Both
 * axes are zoomed to the data; labels are placed apart (labels.ts) in pixels, then drawn at the data coordinates
 * of their centres, which the fixed domains make exact.
 */
export function paretoSpec(rows: readonly ParetoRow[]): TopLevelSpec {
  const done = rows.filter((r): r is ParetoRow & { composite: number } => r.composite !== null);
  const [x0, x1] = bytesDomain(done.map((r) => r.bytes_per_token));
  const [y0, y1] = compositeDomain(done.map((r) => r.composite));
  const { width: W, height: H } = PARETO_SIZE;
  const px = (b: number) => ((b - x0) / (x1 - x0)) * W;
  const py = (c: number) => (1 - (c - y0) / (y1 - y0)) * H;
  const points = done.map((r) => ({ x: px(r.bytes_per_token), y: py(r.composite), text: r.candidate }));
  const boxes = placeLabels(points, W, H);
  const dataX = (p: number) => x0 + (p / W) * (x1 - x0);
  const dataY = (p: number) => y0 + (1 - p / H) * (y1 - y0);
  const values = done.map((r, i) => {
    const end = leaderEnd(boxes[i], points[i]);
    return {
      ...r, front: r.pareto ? 'Pareto front' : 'dominated', lx: dataX(boxes[i].x), ly: dataY(boxes[i].y),
      ex: end && dataX(end.x), ey: end && dataY(end.y),
    };
  });
  const xScale = { domain: [x0, x1], nice: false, zero: false };
  const yScale = { domain: [y0, y1], nice: false, zero: false };
  const q = 'quantitative' as const;
  const x = { field: 'bytes_per_token', type: q, title: 'KV-cache bytes per token', scale: xScale };
  const y = { field: 'composite', type: q, title: 'REFRACT composite (higher is better)', scale: yScale };
  const front = { transform: [{ filter: 'datum.pareto' }], encoding: { x, y, order: { field: 'bytes_per_token' } } };
  const color = { field: 'band', type: 'nominal' as const, scale: BAND_SCALE, title: 'band' };
  return {
    ...PARETO_SIZE,
    data: { values },
    layer: [
      { ...front, mark: { type: 'line', point: false, strokeDash: [4, 3], color: '#59636e' } },
      {
        mark: { type: 'point', filled: true, size: 80 },
        encoding: { x, y, color, shape: { field: 'front', type: 'nominal', title: null } },
      },
      // A label pushed away from its point by crowding is joined to it.
      {
        transform: [{ filter: 'datum.ex !== null' }],
        mark: { type: 'rule', color: '#8c959f', strokeWidth: 0.75, aria: false },
        encoding: { x, y, x2: { field: 'ex' }, y2: { field: 'ey' } },
      },
      // The points carry the data for screen readers; a label's own coordinates are only where it is drawn.
      {
        mark: { type: 'text', fontSize: 10, align: 'center', baseline: 'middle', aria: false },
        encoding: { x: { ...x, field: 'lx' }, y: { ...y, field: 'ly' }, text: { field: 'candidate', type: 'nominal' } },
      },
    ],
  };
}

/** Where a leader line from the point meets the label's box (pixels), or null when the label touches its point. */
function leaderEnd(box: LabelBox, p: { x: number; y: number }): { x: number; y: number } | null {
  if (!needsLeader(box, p)) return null;
  const dx = box.x - p.x;
  const dy = box.y - p.y;
  // The segment from the box's centre towards the point leaves the box at the smaller of the two edge fractions.
  const t = Math.min(dx ? box.w / 2 / Math.abs(dx) : Infinity, dy ? box.h / 2 / Math.abs(dy) : Infinity, 1);
  return { x: box.x - dx * t, y: box.y - dy * t };
}
