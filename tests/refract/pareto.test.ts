// The sweep's Pareto plot (issue 33, item 13): the composite axis zoomed to the data, labels kept apart.
import { describe, expect, it } from 'vitest';
import { BAND_COLORS, bytesDomain, compositeDomain, paretoSpec, PARETO_SIZE,
  renderSvg } from '../../src/refract/report/charts.ts';
import { labelSize, needsLeader, overlap, placeLabels, type LabelBox } from '../../src/refract/report/labels.ts';
import { readFileSync } from 'node:fs';
import { kvBytesPerToken } from '../../src/refract/sweep.ts';
import { cacheBytes } from '../../src/hrm/cache.ts';
import { cacheSlots, parseConfig } from '../../src/hrm/config.ts';
import { kvStorage } from '../../src/hrm/kv-spec.ts';
import { EMBEDDED } from '../../testkit/helpers/fixtures.ts';

/** A K x V grid as `refract sweep` scores it: bytes per token of each pair, composites between 92 and 100. */
const GRID: Array<[string, number, number]> = [
  ['ctk=f16,ctv=f16', 256, 100], ['ctk=f16,ctv=q8_0', 196, 99.7], ['ctk=q8_0,ctv=f16', 196, 99.6],
  ['ctk=q8_0,ctv=q8_0', 136, 99.4], ['ctk=f16,ctv=q4_0', 166, 99.0], ['ctk=q4_0,ctv=f16', 166, 98.8],
  ['ctk=q8_0,ctv=q4_0', 106, 98.9], ['ctk=q4_0,ctv=q8_0', 106, 98.7], ['ctk=q4_0,ctv=q4_0', 76, 92.4],
];
const rows = GRID.map(([candidate, bytes_per_token, composite]) =>
  ({ candidate, bytes_per_token, composite, band: 'EXCELLENT', pareto: false }));

const pairs = <T>(xs: readonly T[]) => xs.flatMap((a, i) => xs.slice(i + 1).map((b) => [a, b] as const));

/**
 * The labels' boxes as Vega drew them: a text's translate is its baseline, which Vega puts 0.3 font sizes below
 * the centre for baseline 'middle'.
 */
function drawnLabels(svg: string): Array<LabelBox & { text: string }> {
  const label = /<text[^>]*"middle" transform="translate\(([-\d.]+),([-\d.]+)\)"[^>]*>(ctk=[^<]+)<\/text>/g;
  return [...svg.matchAll(label)].map((m) => ({ x: Number(m[1]), y: Number(m[2]) - 3, text: m[3],
    ...labelSize(m[3]) }));
}

describe('Pareto plot', () => {
  it('zooms the composite axis to the data with a margin, within 0..100', () => {
    expect(compositeDomain(GRID.map((g) => g[2]))).toEqual([91, 100]);
    expect(compositeDomain([92.3, 94.1, 97.5])).toEqual([91, 99]);
    expect(compositeDomain([50])).toEqual([49, 51]); // one score: a window of two points around it
    expect(compositeDomain([3, 100])).toEqual([0, 100]);
    expect(bytesDomain([76, 256])).toEqual([76 - 14.4, 256 + 14.4]);
    const spec = JSON.stringify(paretoSpec(rows));
    expect(spec).toContain('"domain":[91,100]');
    expect(spec).not.toContain('"domain":[0,100]');
  });

  it('places labels apart from each other and from every point, inside the plot, coincident points too', () => {
    const { width, height } = PARETO_SIZE;
    // Four candidates at one spot and two close by: the case where labels drawn above their points overlap.
    const pts = [[200, 60], [200, 60], [201, 61], [199, 59], [230, 64], [5, 4]]
      .map(([x, y], i) => ({ x, y, text: `ctk=q${i}_0,ctv=q4_0` }));
    const boxes = placeLabels(pts, width, height);
    for (const [a, b] of pairs(boxes)) expect(overlap(a, b)).toBe(0);
    const distinct = pts.filter((p, i) => pts.findIndex((q) => q.x === p.x && q.y === p.y) === i);
    for (const box of boxes) {
      for (const p of distinct) expect(overlap(box, { x: p.x, y: p.y, w: 10, h: 10 })).toBe(0);
      const [left, right, top, bottom] = [box.x - box.w / 2, box.x + box.w / 2, box.y - box.h / 2, box.y + box.h / 2];
      expect([left >= 0, right <= width, top >= 0, bottom <= height]).toEqual([true, true, true, true]);
    }
    // A lone point keeps the first spot: its label centred right above it.
    const size = labelSize('ctk=q8_0,ctv=q8_0');
    const [lone] = placeLabels([{ x: 300, y: 200, text: 'ctk=q8_0,ctv=q8_0' }], width, height);
    expect(lone).toEqual({ x: 300, y: 200 - 5 - 3 - size.h / 2, ...size });
  });

  it('draws the labels where they were placed: no two overlap in the rendered SVG', async () => {
    const svg = await renderSvg(paretoSpec(rows));
    const drawn = drawnLabels(svg);
    expect(drawn.map((d) => d.text).sort()).toEqual(GRID.map((g) => g[0]).sort());
    for (const [a, b] of pairs(drawn)) expect(overlap(a, b), `${a.text} / ${b.text}`).toBe(0);
    // The composite axis ticks run 91..100, not 0..100.
    const tick = /text-anchor="end" transform="translate\(-7,[\d.]+\)"[^>]*>(\d+)<\/text>/g;
    const ticks = [...svg.matchAll(tick)].map((m) => Number(m[1]));
    expect(Math.min(...ticks)).toBeGreaterThanOrEqual(91);
    expect(Math.max(...ticks)).toBe(100);
  });
});

/** A 7 x 3 sweep (issue 42, item 12): seven K types by three V types, bytes of the embedded model's sides. */
const SIDE = { f16: 15360, q8_0: 8640, turbo4: 4080, q4_0: 4800, turbo3: 3000, q2_K: 2880, turbo2: 2040 };
const LOSS = { f16: 0, q8_0: 0.3, turbo4: 2.1, q4_0: 4.5, turbo3: 5.2, q2_K: 30, turbo2: 12 };
const WIDE = Object.entries(SIDE).flatMap(([k, kb]) => (['f16', 'q8_0', 'q4_0'] as const).map((v) => ({
  candidate: `ctk=${k},ctv=${v}`, bytes_per_token: kb + SIDE[v], pareto: false,
  composite: 100 - LOSS[k as keyof typeof LOSS] - LOSS[v] * 0.6, band: 'PASS',
})));

describe('Pareto plot of a crowded sweep', () => {
  it('keeps 21 labels apart and off every point, joining the ones it moved away to their points', async () => {
    const svg = await renderSvg(paretoSpec(WIDE));
    const drawn = drawnLabels(svg);
    expect(drawn).toHaveLength(21);
    for (const [a, b] of pairs(drawn)) expect(overlap(a, b), `${a.text} / ${b.text}`).toBe(0);
    const point = /aria-roledescription="point" transform="translate\(([-\d.]+),([-\d.]+)\)"/g;
    // not the legend's
    const marks = svg.match(/<g class="mark-symbol role-mark layer_1_marks"[^]*?<\/g>/)?.[0] ?? '';
    const dots = [...marks.matchAll(point)].map((m) => ({ x: Number(m[1]), y: Number(m[2]), w: 10, h: 10 }));
    expect(dots.length).toBeGreaterThanOrEqual(21);
    for (const d of drawn) for (const p of dots) expect(overlap(d, p), d.text).toBe(0);
    const { width, height } = PARETO_SIZE;
    const boxes = placeLabels(WIDE.map((r, i) => ({ x: i * 20, y: 100, text: r.candidate })), width, height);
    expect(boxes.some((b, i) => needsLeader(b, { x: i * 20, y: 100 }))).toBe(true);
    expect(svg).toContain('stroke="#8c959f"');   // the leader lines drawn
  });

  it('draws PASS and EXCELLENT in colours of different hues', () => {
    const hue = (hex: string) => {
      const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
      const max = Math.max(r, g, b), min = Math.min(r, g, b), d = max - min;
      const h = max === r ? ((g - b) / d) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4;
      return (h * 60 + 360) % 360;
    };
    const gap = Math.abs(hue(BAND_COLORS.PASS) - hue(BAND_COLORS.EXCELLENT));
    expect(Math.min(gap, 360 - gap)).toBeGreaterThan(60);
  });
});

describe('bytes per token of a candidate (issue 42, item 12)', () => {
  it('counts an f16 side at 2 bytes a value, mixed with a quantized side too, as the KV string names it', async () => {
    const c = parseConfig(JSON.parse(readFileSync(`${EMBEDDED}config.json`, 'utf8')));
    const values = cacheSlots(c) * c.num_attention_heads * c.head_dim;   // per side and token: 7680
    const q8 = kvBytesPerToken(c, { k: 8, v: 8 }) / 2;
    expect(kvBytesPerToken(c, { k: null, v: null })).toBe(2 * 2 * values);
    expect(q8).toBe(values + (2 * 4 * values) / 64);   // levels, and an f32 scale and bias per 64 values
    // The figure: 24000, where the f32 side the library allocates beside a q8_0 one gave 39360.
    expect(kvBytesPerToken(c, kvStorage('ctk=f16,ctv=q8_0'))).toBe(24000);
    expect(cacheBytes(c, 1, 'f32', kvStorage('ctk=f16,ctv=q8_0'))).toBe(39360);
    expect(kvBytesPerToken(c, kvStorage('ctk=q8_0,ctv=f16'))).toBe(24000);
    expect(kvBytesPerToken(c, kvStorage('ctk=f16,ctv=q8_0'))).toBeLessThan(kvBytesPerToken(c, { k: null, v: null }));
  });
});
