// The REFRACT panel's per-position KL plot: a Vega-Lite spec rendered to an SVG string by Vega (the same
// renderer as the HTML report), so no canvas and no vega-embed.
import type { TopLevelSpec } from 'vega-lite';
// Not public API: the HTML report's chart renderer (Vega), shared so the panel's plot looks like the report's.
import { renderSvg } from '../src/refract/report/charts.ts';

/** KL(P_ref || P_cand) per scored position, chunk-major; NaN positions (dropped) are left out. */
export function klPlotSpec(perPosition: ArrayLike<number>, ctx: number, width: number): TopLevelSpec {
  const values: Array<{ pos: number; kl: number; chunk: number }> = [];
  for (let i = 0; i < perPosition.length; i++) {
    const kl = perPosition[i];
    if (Number.isFinite(kl)) values.push({ pos: i, kl, chunk: Math.floor(i / ctx) + 1 });
  }
  const chunks = Math.ceil(perPosition.length / ctx);
  const binned = values.length > 1500;
  const x = binned
    ? { field: 'pos', type: 'quantitative' as const, bin: { maxbins: 300 },
      title: `token position (${chunks} chunk${chunks > 1 ? 's' : ''} × ${ctx})` }
    : { field: 'pos', type: 'quantitative' as const,
      title: `token position (${chunks} chunk${chunks > 1 ? 's' : ''} × ${ctx})`, scale: { nice: false } };
  const y = binned
    ? { field: 'kl', type: 'quantitative' as const, aggregate: 'mean' as const, title: 'mean KL (nats)' }
    : { field: 'kl', type: 'quantitative' as const, title: 'KL (nats)' };
  const boundaries = Array.from({ length: Math.max(0, chunks - 1) }, (_, i) => ({ at: (i + 1) * ctx }));
  return {
    width, height: 170,
    layer: [
      { data: { values }, mark: { type: 'area', line: true, opacity: 0.3, interpolate: 'step-after' },
        encoding: { x, y } },
      ...(boundaries.length ? [{
        data: { values: boundaries }, mark: { type: 'rule' as const, strokeDash: [3, 3], opacity: 0.5 },
        encoding: { x: { field: 'at', type: 'quantitative' as const } },
      }] : []),
    ],
  };
}

/** Render into `el` (an element with role="img"); the label summarises what the plot shows. */
export async function renderKlPlot(el: HTMLElement, perPosition: ArrayLike<number>, ctx: number): Promise<void> {
  const width = Math.max(240, Math.min(900, el.clientWidth - 60));
  const svg = await renderSvg(klPlotSpec(perPosition, ctx, width));
  let max = 0;
  let at = 0;
  for (let i = 0; i < perPosition.length; i++) if (perPosition[i] > max) { max = perPosition[i]; at = i; }
  el.setAttribute('aria-label',
    `Per-position KL over ${perPosition.length} positions; largest ${max.toExponential(2)} nats at position ${at}.`);
  // Vega escapes every text it writes into the SVG.
  el.innerHTML = svg;
}
