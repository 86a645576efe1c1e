// runRefract's run control on the fake backend: skipped axes, checks before the first axis, partial reports on
// abort or a late failure, environment failures, device-loss recovery (ResilientBackend), the KLD statistics of a
// self run, and `refract sweep` (grid, resume, Pareto front).
import { describe, expect, it } from 'vitest';
import {
  gridCandidates, PROMPTS_V01, renderSweepHtml, renderSweepTable, renderTextReport, ResilientBackend, runRefract,
  runSweep, toJsonString, type RunRefractOptions, type SweepRow,
} from '../../src/refract/index.ts';
import { candidateFile, markPareto } from '../../src/refract/sweep.ts';
import { InputError } from '../../src/errors.ts';
import { FakeBackend } from './fake-backend.ts';
import { wellFormedProblem } from './wellformed.ts';

const model = 'fake-model';
const REF = 'ctk=f16,ctv=f16';
const CORPUS = 'The jury said it did find that many of the voters were not told. '.repeat(40);
const small = (backend: FakeBackend | ResilientBackend, extra: Partial<RunRefractOptions> = {}): RunRefractOptions =>
  ({ backend, model, candidate: 'ctk=q4_0,ctv=q4_0', prompts: PROMPTS_V01.slice(0, 3), nPredict: 12, chunks: 3,
    ctx: 128, corpus: CORPUS, ...extra });

describe('skipped axes and checks before the first axis', () => {
  it('--skip-gtm: no trajectory decode, the block says skipped, the composite is the KLD score alone', async () => {
    const b = new FakeBackend();
    const r = await runRefract(small(b, { skipGtm: true }));
    expect(b.calls.trajectory).toBe(0);
    expect([r.axes.gtm.skipped, r.axes.gtm.score, r.axes.gtm.band, r.axes.kld.skipped]).toEqual([true, null,
      'skipped', false]);
    expect(r.composite).toBe(r.axes.kld.score);
    const k = await runRefract(small(new FakeBackend(), { skipKld: true }));
    expect([k.axes.kld.skipped, k.axes.kld.score, k.composite]).toEqual([true, null, k.axes.gtm.score]);
    await expect(runRefract(small(new FakeBackend(),
      { skipGtm: true, skipKld: true }))).rejects.toThrow(/no axis to run/);
  });
  it('ctx beyond the model context and a corpus shorter than ctx fail before any axis runs', async () => {
    const b = new FakeBackend({ contextLength: 100 });
    await expect(runRefract(small(b)))
      .rejects.toThrow("[refract] ctx 128 exceeds the model's context_length 100; pass -c/--ctx 100 or less");
    const c = new FakeBackend();
    await expect(runRefract(small(c,
      { corpus: 'short text' }))).rejects.toThrow('[refract] the KLD corpus has 10 tokens, fewer than ctx 128; '
      + 'give a longer --corpus or a smaller -c/--ctx');
    expect([b.calls.trajectory, c.calls.trajectory, c.calls.kld]).toEqual([0, 0, 0]);
  });
});

describe('partial reports', () => {
  it('an abort after axis A keeps A, marks KLD unfinished and skipped, and says so', async () => {
    const ac = new AbortController();
    const r = await runRefract(small(new FakeBackend(),
      { signal: ac.signal,
      onProgress: (stage, done, total) => { if (stage === 'trajectory' && done === total) ac.abort(); } }));
    expect(r.partial).toEqual({ reason: 'interrupted', unfinished: ['kld'] });
    expect([r.axes.gtm.skipped, r.axes.kld.skipped]).toEqual([false, true]);
    expect(r.composite).toBe(r.axes.gtm.score);
    expect(r.composite_detail.notes.at(-1))
      .toBe('Partial report (interrupted): kld did not finish; the composite covers gtm only.');
    expect(JSON.parse(toJsonString(r)).partial.unfinished).toEqual(['kld']);
    expect(renderTextReport(r)).toContain(' PARTIAL REPORT (interrupted): not finished: kld');
    expect(renderTextReport(r)).not.toContain('KLD diagnostics');
  });
  it('an abort before any axis finished is an error (nothing to keep)', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(runRefract(small(new FakeBackend(), { signal: ac.signal }))).rejects.toThrow();
  });
  it('a failure gathering environment metadata keeps the report, with an empty environment and a note', async () => {
    const b = new FakeBackend();
    let n = 0;
    const meta = b.modelMetadata.bind(b);
    b.modelMetadata = async (o) => { if (++n > 1) throw new Error('adapter went away'); return meta(o); };
    const r = await runRefract(small(b));
    expect(r.environment).toEqual({});
    expect(r.composite_detail.notes).toContain('environment metadata unavailable: adapter went away');
    expect(r.axes.kld.score).toBeGreaterThan(0);
  });
  it('a backend whose metadata call always throws keeps the whole report (every axis), environment {}', async () => {
    const rniah = { lengths: [200], positions: [0.5], nPredict: 8 };
    const want = await runRefract(small(new FakeBackend(), { axes: { rniah, plad: { perturbations: ['case'] } } }));
    const b = new FakeBackend();
    b.modelMetadata = async () => { throw new Error('no metadata here'); };
    const r = await runRefract(small(b, { axes: { rniah, plad: { perturbations: ['case'] } } }));
    expect(r.environment).toEqual({});
    expect(r.composite_detail.notes).toContain('environment metadata unavailable: no metadata here');
    expect(r.partial).toBeUndefined();
    for (const axis of ['gtm', 'kld', 'rniah', 'plad'] as const) {
      expect(r.axes[axis]?.score, axis).toBe(want.axes[axis]?.score);
    }
    expect(r.composite).toBe(want.composite);
  });
});

describe('device loss (ResilientBackend)', () => {
  it('a lost device during KLD@D is recreated and the pass continues from the last finished chunk, with the same '
    + 'numbers', async () => {
    const want = await runRefract(small(new FakeBackend(), { skipGtm: true }));
    const log: string[] = [];
    const created: FakeBackend[] = [];
    const first = new FakeBackend({ loseDeviceAtChunk: 1 });
    const rb = new ResilientBackend(first, async () => { const b = new FakeBackend(); created.push(b); return b; },
      { log: (l) => log.push(l) });
    const chunks: number[] = [];
    const got = await runRefract(small(rb,
      { skipGtm: true, onProgress: (stage, done) => stage === 'kld' && chunks.push(done) }));
    expect(chunks).toEqual([1, 2, 3]); // chunk 1 was not scored twice
    expect(created).toHaveLength(1);
    expect(rb.recoveries).toBe(1);
    expect(log).toEqual([expect.stringMatching(new RegExp('^GPU device lost during KLD@D \\(\\[fake\\] device lost '
      + '\\(test\\)\\); recreating the device and reloading the model, then continuing from the last finished unit '
      + '\\(recovery 1\\)$'))]);
    expect(got.axes.kld.mean_kld).toBe(want.axes.kld.mean_kld);
    expect(got.axes.kld.kld_percentiles).toEqual(want.axes.kld.kld_percentiles);
  });
  it('other errors are passed on, not retried', async () => {
    const b = new FakeBackend();
    b.runKld = async () => { throw new InputError('fake', 'bad'); };
    const rb = new ResilientBackend(b, async () => new FakeBackend());
    await expect(rb.runKld({ model, corpus: CORPUS, refKv: REF, candKv: REF })).rejects.toThrow('[fake] bad');
    expect(rb.recoveries).toBe(0);
  });
});

describe('KLD statistics of a self run (fake backend)', () => {
  it('KL 0 at every percentile, same_top1 1 with its Wilson interval, ppl_ratio 1, delta_p 0', async () => {
    const r = await runRefract(small(new FakeBackend(), { candidate: REF, skipGtm: true }));
    const k = r.axes.kld;
    expect(Object.keys(k.kld_percentiles!).sort()).toEqual(['0.1', '1', '10', '5', '50', '90', '95', '99', '99.9',
      'max', 'min']);
    expect(Object.values(k.kld_percentiles!).every((v) => v === 0)).toBe(true);
    expect([k.same_top1, k.ppl_ratio, k.ppl_ratio_unc, k.delta_p!.rms, k.n_positions]).toEqual([1, 1, 0, 0, 3 * 128]);
    expect(k.same_top1_ci95![1]).toBe(1);
    expect(k.same_top1_ci95![0]).toBeGreaterThan(0.99);
    expect(k.ppl_ref).toBe(k.ppl_cand);
  });
});

describe('refract sweep', () => {
  const store = () => {
    const m = new Map<string, string>();
    return { m, read: async (n: string) => m.get(n) ?? null, write: async (n: string, t: string) => { m.set(n, t); } };
  };
  it('a K x V grid has every pair, asymmetric included; file names from the label', () => {
    expect(gridCandidates(['q8_0', 'q4_0'], ['q8_0', 'q4_0'])).toEqual(['ctk=q8_0,ctv=q8_0', 'ctk=q8_0,ctv=q4_0',
      'ctk=q4_0,ctv=q8_0', 'ctk=q4_0,ctv=q4_0']);
    expect(candidateFile('ctk=q8_0,ctv=q4_0')).toBe('ctk-q8_0_ctv-q4_0.json');
    expect(() => gridCandidates([], ['q4_0'])).toThrow(/at least one K type/);
  });
  it('runs each candidate once, resumes from the store, records a failing job and goes on', async () => {
    const s = store();
    const ran: string[] = [];
    const b = new FakeBackend();
    const opts = {
      reference: REF, store: s, serialize: (r: Parameters<typeof toJsonString>[0]) => toJsonString(r),
      bytesPerToken: (kv: string) => (kv.includes('q4') ? 100 : 200) + (kv.includes('ctv=q4') ? 0 : 1),
      score: async (c: string) => { ran.push(c); if (c === 'ctk=q2_K,ctv=q2_K') throw new InputError('fake',
        'broken'); return runRefract(small(b, { candidate: c })); },
    };
    const cands = [...gridCandidates(['q8_0', 'q4_0'], ['q8_0', 'q4_0']), 'ctk=q2_K,ctv=q2_K'];
    const first = await runSweep({ ...opts, candidates: cands });
    expect(ran).toEqual(cands);
    expect([...s.m.keys()]).toEqual(cands.slice(0, 4).map(candidateFile));
    const failed = first.rows.find((r) => r.error)!;
    expect([failed.candidate, failed.error, failed.pareto]).toEqual(['ctk=q2_K,ctv=q2_K', '[fake] broken', false]);
    ran.length = 0;
    const again = await runSweep({ ...opts, candidates: cands });
    expect(ran).toEqual(['ctk=q2_K,ctv=q2_K']);
    expect(again.rows.filter((r) => r.resumed)).toHaveLength(4);
    expect(again.rows.map((r) => r.composite)).toEqual(first.rows.map((r) => r.composite));
    const t = renderSweepTable(again);
    expect(t).toContain('ctk=q2_K,ctv=q2_K: [fake] broken');
    expect(t.split('\n').filter((l) => l.startsWith('* '))).toHaveLength(again.rows.filter((r) => r.pareto).length);
    const html = await renderSweepHtml(again);
    expect(html).toMatch(/<svg[\s\S]*<\/svg>/);
    expect(wellFormedProblem(html)).toBeNull();
    // The same folder swept against another reference: no saved report is this sweep's result.
    ran.length = 0;
    const other = await runSweep({ ...opts, reference: 'ctk=q8_0,ctv=q8_0', candidates: cands.slice(0, 2) });
    expect(ran).toEqual(cands.slice(0, 2));
    expect(other.rows.filter((r) => r.resumed)).toHaveLength(0);
  });
  it('Pareto front: smaller and at least as good dominates', () => {
    const row = (candidate: string, bytes: number,
      composite: number | null): SweepRow => ({ candidate, file: '', bytes_per_token: bytes, composite, band: null,
      gtm: null, kld: null, rniah: null, plad: null, resumed: false, pareto: false });
    const rows = markPareto([row('a', 100, 90), row('b', 200, 95), row('c', 200, 80), row('d', 50, 60),
      row('e', 100, 90), row('f', 10, null)]);
    expect(rows.map((r) => r.pareto)).toEqual([true, true, false, true, true, false]);
  });
});
