// The model in a Deno Web Worker (deno-worker.ts, run as a child process): the same greedy ids as Deno's own thread
// and logits bit for bit.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('the model in a Deno Web Worker', () => {
  it('generates and computes logits as Deno\'s own thread does', async () => {
    const deno = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
    const args = ['run', '-A', 'tests/worker/deno-worker.ts'];
    const { stdout } = await promisify(execFile)(deno, args, { cwd: root, timeout: 280_000 });
    const r = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(r.runtime).toBe('deno');
    expect(r.worker).toEqual({ ids: r.main.ids, stopReason: 'max_tokens' });
    expect(r.main.ids).toHaveLength(6);
    expect(r.logits.length).toBeGreaterThan(0);
    expect(r.logits.same).toBe(true);
  }, 300_000);
});
