// The tiled matmul kernels' shape, a fact the planner reads (kernels/plan/matmul.ts: preferGemv) beside the
// wrappers that dispatch them (matmul.ts, matmul-f16.ts).

/**
 * The tiled kernel's overrides (matmul_tiled.wgsl, matmul_f16.wgsl: tile.inc.wgsl): threads along N and M and the K
 * slice; each thread owns a 4 x 4 output block, fixed in the WGSL, so a workgroup's tile is BM x BN.
 */
export const TILE = { TX: 16, TY: 16, BK: 8 };
export const BM = TILE.TY * 4, BN = TILE.TX * 4;
