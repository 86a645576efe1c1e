import { defineConfig } from 'vitest/config';

// GPU tests run on whatever adapter the machine has: a real GPU, else Mesa's lavapipe, else SwiftShader.
// Software drivers are slow and use both cores, so files run two at a time at most.
export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 300_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
