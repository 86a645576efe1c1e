// What a run leaves behind: the JSON (every figure and setting), a Markdown summary (markdown.ts), and an SVG plot
// of decode tok/s per KV-cache configuration next to the ceiling the measured streaming bandwidth allows. Pure
// functions of the result (Vega renders the SVG without a DOM), so every runner produces identical files.
import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';
import { benchConfig, type BenchResult } from './result.ts';
import { adapterLabel, adapterName, f } from './format.ts';
import { markdown } from './markdown.ts';

export interface Rendered { base: string; json: string; md: string; svg: string }

/** File name stem: adapter, runtime, model shape and UTC date, e.g. `nvidia-h200_node_1b_20250102-030405Z`. */
export function baseName(r: BenchResult): string {
  const slug = adapterLabel(r).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 48)
    || 'adapter';
  const d = r.date.replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '').replace('T', '-');
  return `${slug}_${r.env.runtime}_${r.settings.config}_${d}`;
}

/** Vega-Lite: measured decode tok/s (median, min–max whisker) and the stream-bandwidth ceiling, per cache. */
export function decodePlotSpec(r: BenchResult): TopLevelSpec {
  const MEAS = 'decode, measured (median; whisker min–max)';
  const CEIL = 'ceiling = stream read / bytes per token';
  const rows: Array<Record<string, unknown>> = [];
  for (const c of r.caches) {
    const d = c.decode;
    rows.push({
      cache: c.name, series: MEAS, value: d?.tokPerS.median ?? 0, lo: d?.tokPerS.min ?? null,
      hi: d?.tokPerS.max ?? null, label: d ? f(d.tokPerS.median) : c.errors.length ? 'error' : 'not run',
    });
    if (c.ceiling.tokPerS !== null) {
      const ceil = c.ceiling.tokPerS;
      rows.push({ cache: c.name, series: CEIL, value: ceil, lo: null, hi: null, label: f(ceil) });
    }
  }
  const s = r.settings;
  const stream = r.kernels.stream;
  return {
    title: {
      text: `Decode tok/s per KV cache: ${benchConfig(s).name}`,
      subtitle: [
        `${adapterName(r)}, ${r.env.runtimeVersion.split(' (')[0]}; ` +
        `${s.decodeTokens} tokens after a ${s.prompt}-token prompt`,
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
          color: {
            field: 'series', type: 'nominal', sort: [MEAS, CEIL], scale: { range: ['#1f6feb', '#bbbbbb'] },
            legend: { orient: 'bottom', title: null, labelLimit: 400, direction: 'vertical' },
          },
        },
      },
      {
        transform: [{ filter: 'datum.lo != null' }], mark: { type: 'rule', color: '#222' },
        encoding: { y: { field: 'lo', type: 'quantitative' }, y2: { field: 'hi' } },
      },
      {
        mark: { type: 'text', dy: -6, fontSize: 10 },
        encoding: { y: { field: 'value', type: 'quantitative' }, text: { field: 'label' } },
      },
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
  return {
    base: baseName(r), json: JSON.stringify(r) + '\n', md: markdown(r), svg: await renderSvg(decodePlotSpec(r)),
  };
}
