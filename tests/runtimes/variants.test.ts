// Every pipeline variant the GPU paths use, created under Deno (wgpu, whose naga panicked on two of them on an
// H200: kernels/specialize.ts). variants.ts traces the variants from the code and creates them; this checks its
// report and prints which ones the adapter cannot create.
// On CI (Deno on lavapipe: shader-f16, no subgroups) those are the kernels that enable subgroups or subgroup
// matrices: matmul_upl_sg.wgsl#gemv_upl_sg (subgroups), matmul_sgmat.wgsl#matmul_sgmat
// (chromium_experimental_subgroup_matrix), matmul_sgmat_staged.wgsl#matmul_sgmat_staged (both); the wrappers
// choose their variants (gemv upl-sg shapes, the tensor cores' schedules) only on adapters that have them, so none
// of those is traced here either.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

interface SweepReport {
  adapter: string; features: string[]; created: number; unrolled: number; failed: string[];
  unavailable: Record<string, string[]>; unmade: string[]; traced: string[]; traceMs: number; ms: number;
}

describe('pipeline variants under Deno', () => {
  it('creates every variant the GPU paths use, each kernel, each traced override set', async () => {
    const deno = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
    let out: { stdout: string; stderr: string };
    try {
      const opts = { cwd: root, timeout: 240_000, maxBuffer: 64 * 2 ** 20 };
      out = await promisify(execFile)(deno, ['run', '-A', 'tests/runtimes/variants.ts'], opts);
    } catch (e) {
      // A translator panic ends Deno: the last 'creating' line names the variant.
      const err = e as { stderr?: string; message: string };
      const last = (err.stderr ?? '').split('\n').filter((l) => l.startsWith('creating ')).pop();
      const at = last ? ` at ${last}` : '';
      throw new Error(`Deno's variant sweep failed${at}: ${err.message.split('\n').slice(0, 12).join('\n')}`);
    }
    const r = JSON.parse(out.stdout.trim().split('\n').pop()!) as SweepReport;
    const kernels = new Set(r.traced.map((t) => t.split('{')[0]));
    const cannot = Object.entries(r.unavailable).map(([k, f]) => `${k} (needs ${f.join(', ')})`).join('; ') || 'none';
    console.log(`[variants] Deno on ${r.adapter} (${r.features.join(', ')}): ${r.created} pipelines created ` +
      `(${r.traced.length} traced variants of ${kernels.size} kernels, every other kernel with its defaults; ` +
      `${r.unrolled} modules unrolled as a GPU gets them) ` +
      `in ${r.ms} ms (trace ${r.traceMs}); cannot create here: ${cannot}`);
    expect(r.failed).toEqual([]);
    expect(r.unmade).toEqual([]);
    // Unavailable only for a feature the adapter lacks.
    for (const f of Object.values(r.unavailable).flat()) expect(r.features).not.toContain(f);
    // The trace took the GPU paths, not lavapipe's own: the kernel naga had panicked on, for each fusion.
    expect(r.traced.filter((t) => t.startsWith('matmul/matmul_wide.wgsl#gemv_wide{')).length).toBeGreaterThanOrEqual(4);
    expect(r.created).toBeGreaterThan(r.traced.length);
    // Every variant's module as a GPU gets it under naga, loops unrolled (kernels/unroll.ts), passed validation.
    expect(r.unrolled).toBeGreaterThan(r.traced.length / 2);
  }, 300_000);
});
