// The same smoke test (tests/runtimes/smoke.ts: device, an add kernel, a row reduction, checked against the CPU)
// in Node (Dawn), Deno (wgpu) and headless Chromium (Dawn in the browser).
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { smoke, type SmokeResult } from './smoke.ts';
import { IN_PASS_TIMESTAMPS } from '../../src/gpu/features.ts';
import { pageRun } from '../../testkit/helpers/browser.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

function check(r: SmokeResult, runtime: string) {
  expect(r.runtime).toBe(runtime);
  expect(r.n).toBe(1000);
  expect(r.addMaxErr).toBe(0); // f32 add is exact against Math.fround(a + b)
  expect(r.sumMaxErr).toBeLessThan(1e-5); // f32 log-sum-exp of 100 values in [-3, 3] (result ~4): a few f32 ulps
  // Timestamps inside a pass: Chrome's Dawn offers them (here too, on its CPU adapter); npm webgpu's passes have no
  // writeTimestamp and wgpu no such feature. Where offered, each of the two dispatches gets a time of its own.
  if (runtime === 'browser') {
    expect(r.features).toContain(IN_PASS_TIMESTAMPS);
    expect(r.inPass).toHaveLength(2);
    for (const ms of r.inPass!) expect(ms >= 0 && ms < 1000, `${r.inPass}`).toBe(true);
  } else expect(r.inPass).toBeNull();
}

describe('runtimes', () => {
  it('Node (Dawn) runs the smoke test', async () => {
    check(await smoke(), 'node');
  });

  it('Deno (wgpu) runs the smoke test', async () => {
    const deno = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
    const { stdout } = await promisify(execFile)(deno, ['run', '-A', 'tests/runtimes/deno-smoke.ts'],
      { cwd: root, timeout: 110_000 });
    check(JSON.parse(stdout.trim().split('\n').pop()!), 'deno');
  });

  it('Deno generates with the embedded model: the same greedy ids as MLX', async () => {
    const deno = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
    const { stdout } = await promisify(execFile)(deno, ['run', '-A', 'tests/runtimes/deno-generate.ts'],
      { cwd: root, timeout: 110_000 });
    const r = JSON.parse(stdout.trim().split('\n').pop()!) as { runtime: string; ids: number[]; text: string };
    const ref = JSON.parse(readFileSync(join(root, 'tests/fixtures/hrm-text-brown-6m/reference.json'),
      'utf8')).prompts[0];
    expect(r.runtime).toBe('deno');
    expect(ref.text).toBe('The jury said');
    expect(r.ids).toEqual(ref.f32_gen_ids.slice(0, 6));
    expect(r.text.length).toBeGreaterThan(0);
  }, 120_000);

  it('headless Chromium runs the smoke test', async () => {
    const { result: r, log } = await pageRun<SmokeResult & { error?: string }>({ root },
      'tests/runtimes/smoke.html', 60_000);
    expect(r.error, log.join('\n')).toBeUndefined();
    check(r, 'browser');
  });
});
