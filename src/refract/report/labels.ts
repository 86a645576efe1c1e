// Point labels that do not overlap: each label takes the first of a few spots around its point (above, below,
// right, left, the corners, then farther out) where its box meets no label placed before it, no point and no
// plot edge; where none is free, the spot that overlaps least. Boxes are estimated from the text length (charts
// use one small font), in pixels with y pointing down, as Vega draws.

export interface LabelPoint {
  /** Pixel position of the point. */
  x: number;
  y: number;
  text: string;
}

/** A label's box: centre and size in pixels. */
export interface LabelBox { x: number; y: number; w: number; h: number }

/** Estimated size of a label at the charts' font size (10 px): about 6 px a character, 12 px tall. */
export const labelSize = (text: string, fontSize = 10): { w: number; h: number } =>
  ({ w: Math.ceil(text.length * 0.6 * fontSize) + 2, h: Math.ceil(1.2 * fontSize) });

/** Overlap area of two boxes (0 when apart). */
export function overlap(a: LabelBox, b: LabelBox): number {
  const dx = Math.min(a.x + a.w / 2, b.x + b.w / 2) - Math.max(a.x - a.w / 2, b.x - b.w / 2);
  const dy = Math.min(a.y + a.h / 2, b.y + b.h / 2) - Math.max(a.y - a.h / 2, b.y - b.h / 2);
  return dx > 0 && dy > 0 ? dx * dy : 0;
}

/** Points drawn as this size (the Pareto plot's symbols are 80 px^2, about 10 px across). */
const POINT = 10;
/** Gap between a point's edge and its label. */
const GAP = 3;
/** Rings of spots beyond the first eight. */
const RINGS = 6;

/**
 * Where a label may go around its point, nearest first: the eight spots touching the point (above, below, right,
 * left, the corners), then rings farther out, twelve directions a ring. A crowded sweep (a 7 x 3 grid of
 * candidates, several at one size) fills the near spots; the rings keep those labels apart too, and the chart
 * draws a leader line to each label that left the first ring.
 */
function spots(w: number, h: number): Array<[number, number]> {
  const up = POINT / 2 + GAP + h / 2;
  const side = POINT / 2 + GAP + w / 2;
  const near: Array<[number, number]> = [[0, -up], [0, up], [side, 0], [-side, 0], [side, -up], [-side, -up],
    [side, up], [-side, up]];
  const rings: Array<[number, number]> = [];
  for (let r = 1; r <= RINGS; r++) {
    for (let k = 0; k < 12; k++) {
      const a = (k / 12) * 2 * Math.PI - Math.PI / 2;   // from straight up, clockwise
      rings.push([Math.cos(a) * (side + r * w * 0.5), Math.sin(a) * (up + r * h * 1.2)]);
    }
  }
  return [...near, ...rings];
}

/** True where a box is not one of the eight spots touching its point: the chart joins it to the point. */
export function needsLeader(box: LabelBox, point: { x: number; y: number }): boolean {
  const up = POINT / 2 + GAP + box.h / 2;
  const side = POINT / 2 + GAP + box.w / 2;
  return Math.abs(box.x - point.x) > side + 0.5 || Math.abs(box.y - point.y) > up + 0.5;
}

/**
 * One box per point, in the points' order, inside [0, width] x [0, height]. Points are placed from the top of the
 * plot down (then left to right), so that crowded high scores, the interesting end, get the nearest spots.
 */
export function placeLabels(points: readonly LabelPoint[], width: number, height: number, fontSize = 10): LabelBox[] {
  const dots: LabelBox[] = points.map((p) => ({ x: p.x, y: p.y, w: POINT, h: POINT }));
  const placed: LabelBox[] = [];
  const out: LabelBox[] = new Array(points.length);
  const order = points.map((_, i) => i).sort((a, b) => points[a].y - points[b].y || points[a].x - points[b].x);
  for (const i of order) {
    const { x, y, text } = points[i];
    const { w, h } = labelSize(text, fontSize);
    let best: LabelBox | null = null;
    let bestCost = Infinity;
    for (const [dx, dy] of spots(w, h)) {
      const box = { x: x + dx, y: y + dy, w, h };
      // Outside the plot counts as overlap with the edge, so an inside spot always wins over it.
      const outside = Math.max(0, w / 2 - box.x) + Math.max(0, box.x + w / 2 - width) + Math.max(0, h / 2 - box.y) +
        Math.max(0, box.y + h / 2 - height);
      const cost = [...placed, ...dots].reduce((s, o) => s + overlap(box, o), 0) + outside * (w + h);
      if (cost < bestCost) { best = box; bestCost = cost; }
      if (cost === 0) break;
    }
    placed.push(best!);
    out[i] = best!;
  }
  return out;
}
