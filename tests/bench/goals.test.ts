// Issue 30's goals (bench/harness/goals.ts) on recorded H200 runs: each figure is the ratio of the file's own fields,
// and the verdicts are those runs' real ones; a run without a figure says which; the checker's command exits 1 on
// an unmet goal and 2, with one line naming the file, on a file it cannot read as a bench result. No GPU.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import type { BenchResult } from '../../bench/harness/result.ts';
import { issueGoals, unmet, withGoals, type Goal } from '../../bench/harness/goals.ts';
import { goalLines, goalSummary } from '../../bench/harness/markdown-goals.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const results = join(root, 'bench/results');
/** The newest run with anchors, the read probe and a `weights` list (bf16 and q8: q4's ran out of time). */
const NEWEST = 'nvidia-h200_node_1b_20261205-014634Z.json.gz';
/** A run from before `weights` and the read probe, its stream read at 1.94 TB/s (issue 30's bad ceiling). */
const OLDER = 'nvidia-h200_node_1b_20261204-171243Z.json.gz';

const load = (name: string): BenchResult =>
  JSON.parse(gunzipSync(readFileSync(join(results, name))).toString('utf8'));
const byName = (goals: Goal[], name: string, required = true) =>
  goals.find((g) => g.name === name && g.required === required)!;

/** The figures the goals are made of, read straight from the file's fields. */
function fields(r: BenchResult) {
  const cache = (n: string) => r.caches.find((c) => c.name === n)!;
  const weights = (n: string) => r.weights.find((w) => w.name === n)!;
  const at512 = (x: { prefill: { tokens: number; tokPerS: { median: number } }[] }) =>
    x.prefill.find((p) => p.tokens === 512)!.tokPerS.median;
  return { cache, weights, at512, anchors: r.anchors as Record<string, number> };
}

const DECODE = "full-cache decode / torch.compile'd CUDA-graph decode";
const EAGER = 'prefill 512 / transformers eager prefill 512';
const STREAM = "bench's stream read / the read probe's";
const PEAK = 'highest kernel GB/s / the ceiling';

describe("issue 30's goals", () => {
  it('computes the newest recorded run\'s figures from its own fields, with its real verdicts', () => {
    const r = load(NEWEST);
    const goals = issueGoals(r);
    const { cache, weights, at512, anchors } = fields(r);
    const full = cache('full').decode!.tokPerS.median;
    expect(goals).toHaveLength(12);
    expect(goals.filter((g) => g.required)).toHaveLength(9);

    expect(byName(goals, DECODE)).toEqual({ name: DECODE, value: full / anchors.torch_cudagraph_compiled_decode_tok_s,
      bound: '>= 1.25x', required: true, passed: false });
    expect(byName(goals, DECODE).value).toBeCloseTo(0.991, 3); // 173 against 174 tok/s
    const q8prefill = byName(goals, 'q8-weight prefill 512 / bf16-weight prefill 512');
    expect(q8prefill.value).toBe(at512(weights('q8')) / at512(weights('bf16')));
    expect(q8prefill.passed).toBe(false); // 0.35x: no tensor-core path for quantized weights yet
    for (const c of ['q8', 'q4']) {
      const g = byName(goals, `${c}-cache decode / full-cache decode`);
      expect(g.value).toBe(cache(c).decode!.tokPerS.median / full);
      expect(g.passed).toBe(false); // 0.88x and 0.89x
    }
    const eager = at512(cache('full')) / anchors.transformers_eager_prefill512_tok_s;
    expect(byName(goals, EAGER)).toMatchObject({ value: eager, bound: '>= 2x', passed: false });
    expect(byName(goals, EAGER, false)).toMatchObject({ value: eager, bound: '>= 3x', passed: false });

    // The ceiling held: the stream read 103 % of the probe's, the fastest kernel (a q8 lm_head shape of the sweep)
    // two thirds of it.
    expect(byName(goals, STREAM)).toMatchObject({
      value: r.kernels.stream!.GBps.median / r.kernels.readProbe!.GBps, bound: 'within 10 %', passed: true,
    });
    const sweepPeak = Math.max(...r.kernels.sweep.map((p) => p.GBps));
    expect(byName(goals, PEAK)).toMatchObject({ value: sweepPeak / r.kernels.stream!.GBps.median, passed: true });

    expect(byName(goals, 'decode, bf16 weights (full cache)', false)).toMatchObject({ value: full, passed: false });
    // The q4-weight run was skipped (time budget spent): its goals are missing, not failed.
    expect(r.weights.map((w) => w.name)).toEqual(['bf16', 'q8']);
    expect(byName(goals, 'q4-weight decode / bf16-weight decode')).toEqual({
      name: 'q4-weight decode / bf16-weight decode', value: null, bound: '>= 1.4x', required: true, passed: null,
      missing: 'weights[q4].decode.tokPerS.median',
    });
    expect(byName(goals, 'decode, q4 weights (full cache)', false).passed).toBeNull();
    expect(unmet(goals).map((g) => g.passed)).toEqual([false, null, false, null, false, false, false]);
    expect(goalSummary(goals)).toMatch(/^2 of 9 required goals met; not met: full-cache decode .*; figures missing: /);
  });

  it('says which figures an older run lacks, and holds its kernels to the ceiling it measured', () => {
    const r = load(OLDER);
    const goals = issueGoals(r);
    const { cache, anchors } = fields(r);
    expect(byName(goals, DECODE).value)
      .toBe(cache('full').decode!.tokPerS.median / anchors.torch_cudagraph_compiled_decode_tok_s);
    expect(byName(goals, DECODE).passed).toBe(false); // 1.07x
    expect(byName(goals, STREAM)).toMatchObject({ value: null, passed: null, missing: 'kernels.readProbe.GBps' });
    expect(byName(goals, 'q8-weight prefill 512 / bf16-weight prefill 512').missing)
      .toBe('weights[q8].prefill[512].tokPerS.median, weights[bf16].prefill[512].tokPerS.median');
    const gemvPeak = Math.max(...r.kernels.gemv.flatMap((b) => [b.GBps.median, b.kernelGBps!.median]));
    expect(byName(goals, PEAK)).toMatchObject({ value: gemvPeak / r.kernels.stream!.GBps.median, passed: true });
    expect(unmet(goals)).toHaveLength(8);
  });

  it('marks every goal missing on a run without figures, and fails a kernel above the ceiling', () => {
    const bare = {
      caches: [], anchors: { error: '--anchors x: ENOENT' },
      kernels: { stream: null, readProbe: null, gemv: [], sweep: [], attention: [], matmul: [], dispatch: null },
    } as unknown as BenchResult;
    const goals = issueGoals(bare);
    expect(goals.map((g) => g.passed)).toEqual(Array(12).fill(null));
    expect(byName(goals, DECODE).missing)
      .toBe('caches[full].decode.tokPerS.median, anchors.torch_cudagraph_compiled_decode_tok_s');
    expect(byName(goals, PEAK).missing).toBe('kernels.gemv, kernels.stream.GBps.median');
    expect(unmet(goals)).toHaveLength(9);

    // Issue 30's direct run: a GEMV at 5.8 TB/s by timestamps against a 4.65 TB/s stream read and a 4.3 probe.
    const med = (median: number) => ({ median });
    const timedWrong = {
      ...bare, kernels: {
        ...bare.kernels, stream: { GBps: med(4650) }, readProbe: { GBps: 4300 },
        gemv: [{ GBps: med(4100), kernelGBps: med(5800) }],
      },
    } as unknown as BenchResult;
    const wrong = issueGoals(timedWrong);
    expect(byName(wrong, PEAK)).toMatchObject({ value: 5800 / 4650, bound: '<= 1.1x', passed: false });
    expect(byName(wrong, STREAM)).toMatchObject({ value: 4650 / 4300, passed: true });
    expect(withGoals(timedWrong).goals).toEqual(wrong);
  });

  it('tabulates the goals for the Markdown', () => {
    const L = goalLines(issueGoals(load(NEWEST)));
    expect(L.slice(0, 4)).toEqual(['## Issue 30 goals', '', '| goal | figure | bound | | result |',
      '|---|---|---|---|---|']);
    expect(L).toContain(`| ${DECODE} | 0.991 | >= 1.25x | required | **not met** |`);
    expect(L).toContain("| bench's stream read / the read probe's | 1.03 | within 10 % | required | met |");
    expect(L).toContain('| decode, q4 weights (full cache) | — | >= 450 tok/s | target | ' +
      'missing: weights[q4].decode.tokPerS.median |');
  });
});

describe('bench/runners/goals.ts', () => {
  const tsx = join(root, 'node_modules/.bin/tsx');
  const goals = (file: string) => spawnSync(tsx, ['bench/runners/goals.ts', file], { cwd: root, encoding: 'utf8' });

  it('prints the table of a recorded run and exits 1 when a required goal is not met', () => {
    const p = goals(join('bench/results', NEWEST));
    expect(p.status).toBe(1);
    expect(p.stdout).toContain(`bench/results/${NEWEST}: node 1b, 2026-12-05T01:46:34.364Z`);
    expect(p.stdout).toContain('\n## Issue 30 goals\n');
    expect(p.stdout).toMatch(/\n2 of 9 required goals met; /);
  });

  it('exits 2 with one line naming the file it cannot read as a bench result', () => {
    const missing = goals('bench/results/no-such-run.json');
    expect(missing.status).toBe(2);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/^\[goals\] bench\/results\/no-such-run\.json: cannot read it \(ENOENT[^\n]*\)\n$/);
    const anchors = 'bench/results/nvidia-h200_node_1b_20261205-014634Z.anchors.json';
    const notBench = goals(anchors);
    expect(notBench.status).toBe(2);
    expect(notBench.stderr).toBe(`[goals] ${anchors}: not a bench result (no "hrm-webgpu-bench/..." schema)\n`);
  });
});
