import { defineConfig } from 'vitest/config';
import { LongestFirst } from './tests/sequencer.ts';

// GPU tests run on whatever adapter the machine has: a real GPU, else Mesa's lavapipe, else SwiftShader.
// Software drivers are slow and use both cores, so files run two at a time at most.
// Lavapipe compiles each pipeline with LLVM for its native vector width; at AVX2's 256 bits that compile is most of
// the suite's time (a cold tests/kernels/attention/sdpa-one.test.ts: 150 s), at 128 bits a third of it (49 s), with the
// same
// f32 arithmetic per invocation. Tests take the narrow width unless the environment sets one.
const lavapipe = { LP_NATIVE_VECTOR_WIDTH: process.env.LP_NATIVE_VECTOR_WIDTH ?? '128' };

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 300_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    env: lavapipe,
    sequence: { sequencer: LongestFirst },
  },
});
