// What the persistent kernels' tests share (tests/kernels/persist/).

/** Spins that only a workgroup which is not running runs out, even on a loaded CPU driver (seconds of loads). */
export const TEST_SPIN = 2 ** 26;
