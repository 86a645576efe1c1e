// Which cases of a sweep run. On a CPU driver (lavapipe, SwiftShader) every distinct pipeline is an LLVM compile of
// seconds under a cold shader cache and every dispatch is slow, so `npm test` runs the cases that prove the point:
// each variant and path at least once, the edge cases (odd sizes, offsets, masks, chunk edges). The whole cross
// product runs with HRM_EXHAUSTIVE=1, on a GPU machine: `HRM_EXHAUSTIVE=1 npx vitest run tests/kernels tests/hrm`.

/** True when HRM_EXHAUSTIVE=1: every sweep runs whole. */
export const EXHAUSTIVE = process.env.HRM_EXHAUSTIVE === '1';

/** All of `cases` under HRM_EXHAUSTIVE=1, else those `quick` keeps (given each case and its index). */
export function sweep<T>(cases: readonly T[], quick: (c: T, i: number) => boolean): T[] {
  return EXHAUSTIVE ? [...cases] : cases.filter(quick);
}

/** Whether a case runs: always under HRM_EXHAUSTIVE=1, else when `quick` (the case is among the CPU driver's). */
export function runs(quick: boolean): boolean {
  return EXHAUSTIVE || quick;
}
