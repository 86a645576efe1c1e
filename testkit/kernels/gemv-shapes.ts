// The shapes bench --sweep-gemv times for quantized weights (bench/suites/gemv.ts), which the qgemv_wide check
// (qgemv-wide.check.ts) runs against qgemv4: here, so that the check need not import bench/.
import type { GemvShape } from '../../src/kernels/matmul/gemv.ts';

/**
 * The sweep's shapes for 4- and 8-bit weights of rows of K values: qgemv4's 16..128 lanes x 2..16 rows, x read by
 * every lane ('vec4') or staged in workgroup memory ('xs'); qgemv_wide's ('wide') lanes that split a row's units
 * exactly x 4..16 row groups x 1..2 rows a group, within its 16 unit registers a lane and 256 threads, and with a
 * fused norm the same with the normalised x staged once ('wide-xs').
 */
export function qSweepShapes(K: number, bits: number, swiglu: boolean, norm: boolean): GemvShape[] {
  const shapes: GemvShape[] = [];
  for (const kernel of ['vec4', 'xs'] as const) {
    for (const wg of [16, 32, 64, 128]) for (const rows of [2, 4, 8, 16]) shapes.push({ kernel, wg, rows });
  }
  const units = (K * bits) / 128;
  for (const wg of [16, 32, 64, 128].filter((w) => units % w === 0)) {
    for (const groups of [4, 8, 16].filter((g) => wg * g <= 256)) {
      for (const rpg of [1, 2]) {
        if ((units / wg) * rpg > 16 || (swiglu && (groups * rpg) % 2)) continue;
        for (const kernel of norm ? ['wide', 'wide-xs'] as const : ['wide'] as const) shapes.push({ kernel, wg, groups,
          rows: groups * rpg });
      }
    }
  }
  return shapes;
}
