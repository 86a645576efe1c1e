// The axes and runRefract end to end on the deterministic fake backend: reference vs itself scores 100
// everywhere; quantized candidates score lower, more so with fewer bits.
import { describe, expect, it } from 'vitest';
import { runKld } from '../../src/refract/axes/kld.ts';
import { runPlad } from '../../src/refract/axes/plad.ts';
import { buildRniahPrompt, extractNeedleKeyword, nearestSentenceBoundary, rniahLengths,
  runRniah } from '../../src/refract/axes/rniah.ts';
import { runTrajectory } from '../../src/refract/axes/trajectory.ts';
import { BackendCapabilityError, RefractError, type TrajectoryOptions } from '../../src/refract/backend.ts';
import { defaultCorpus, defaultHaystack } from '../../src/refract/corpus.ts';
import { DIAGNOSIS } from '../../src/refract/diagnosis.ts';
import { PROMPTS_V01 } from '../../src/refract/prompts.ts';
import { runRefract, type Stage } from '../../src/refract/runner.ts';
import { FakeBackend } from './fake-backend.ts';

const REF = 'ctk=f16,ctv=f16';
const model = 'fake';

describe('reference against itself', () => {
  it('scores 100 on every axis, composite 100, floor 100', async () => {
    const r = await runRefract({ backend: new FakeBackend(), model, candidate: REF, axes: { rniah: true, plad: true },
      measureFloor: true });
    expect(Object.fromEntries(Object.entries(r.axes).map(([k, v]) => [k, v.score]))).toEqual({ gtm: 100, kld: 100,
      rniah: 100, plad: 100 });
    expect([r.composite, r.band, r.composite_detail.floor_score, r.composite_detail.floor_ok]).toEqual([100,
      'EXCELLENT', 100, true]);
    expect(r.diagnosis).toEqual([DIAGNOSIS.allClear]);
    expect(r.axes.gtm.full_match_rate).toBe(1);
    expect(r.axes.gtm.median_first_divergence).toBeNull();
    expect(r.axes.kld.mean_kld).toBe(0);
    expect(r.axes.kld.is_self_reference).toBe(true);
    expect(r.axes.plad!.per_prompt.every((p) => p.excess_drift === 0)).toBe(true);
  });
});

describe('quantized candidates', () => {
  it('score below 100, lower with fewer bits', async () => {
    const backend = new FakeBackend();
    const run = (candidate: string) => runRefract({ backend, model, candidate, axes: { rniah: true, plad: true } });
    const [q8, q4, q2] = [await run('ctk=q8_0,ctv=q8_0'), await run('ctk=q4_0,ctv=q4_0'),
      await run('ctk=q2_K,ctv=q2_K')];
    for (const r of [q8, q4, q2]) {
      expect(r.axes.gtm.score).toBeLessThan(100);
      expect(r.axes.kld.score).toBeLessThan(100);
      expect(r.composite).toBeLessThan(100);
    }
    expect(q8.axes.gtm.score!).toBeGreaterThan(q4.axes.gtm.score!);
    expect(q4.axes.gtm.score!).toBeGreaterThan(q2.axes.gtm.score!);
    expect(q8.axes.kld.mean_kld!).toBeLessThan(q4.axes.kld.mean_kld!);
    expect(q4.axes.kld.mean_kld!).toBeLessThan(q2.axes.kld.mean_kld!);
    expect(q8.axes.rniah!.score).toBe(100);
    expect(q4.axes.rniah!.score).toBeLessThan(100);
    expect(q8.composite).toBeGreaterThan(q4.composite);
    // score identities
    const g = q4.axes.gtm;
    expect(g.score).toBeCloseTo((100 * g.mean_prefix_agreement_length) / g.mean_cand_length, 12);
    expect(q4.axes.kld.score).toBeCloseTo(100 * Math.exp(-q4.axes.kld.mean_kld!), 12);
    const rn = q4.axes.rniah!;
    expect(rn.score).toBeCloseTo(100 * (1 - rn.cells.reduce((s, c) => s + c.degradation, 0) / rn.cells.length), 12);
    const pl = q4.axes.plad!;
    expect(pl.score).toBeCloseTo(pl.per_prompt.reduce((s, p) => s + p.plad_pp, 0) / pl.per_prompt.length, 12);
    for (const p of pl.per_prompt) expect(p.plad_pp).toBeCloseTo(100 * Math.exp(-5 * Math.max(0,
      p.cand_drift - p.ref_drift)), 12);
  });

  it('asymmetric K/V sits between its two symmetric neighbours on KLD', async () => {
    const backend = new FakeBackend();
    const corpus = await defaultCorpus();
    const kld = async (c: string) => (await runKld(backend,
      { model, reference: REF, candidate: c, corpus, chunks: 4 })).mean_kld;
    const [a, b, c] = [await kld('ctk=q8_0,ctv=q8_0'), await kld('ctk=q8_0,ctv=q4_0'), await kld('ctk=q4_0,ctv=q4_0')];
    expect(a).toBeLessThan(b);
    expect(b).toBeLessThan(c);
  });
});

describe('trajectory axis', () => {
  it('records per-prompt fields and decoded tokens', async () => {
    const t = await runTrajectory(new FakeBackend(),
      { model, reference: REF, candidate: 'ctk=q4_0,ctv=q4_0', prompts: PROMPTS_V01.slice(0, 5), nPredict: 16,
      decodeTokens: true });
    expect(t.n_prompts).toBe(5);
    expect(t.n_tokens_each).toBe(16);
    const p = t.per_prompt[0];
    expect(Object.keys(p)).toEqual(['id', 'category', 'prompt', 'ref_token_ids', 'cand_token_ids', 'first_divergence',
      'prefix_agreement_length', 'cand_length', 'ref_length', 'matched', 'ref_tokens', 'cand_tokens']);
    expect(p.ref_tokens!.join('')).toBe(String.fromCharCode(...p.ref_token_ids));
  });
  it('throws when both trajectories are empty', async () => {
    const b = new FakeBackend();
    b.runCompletionTrajectory = async () => ({ tokenIds: [], metadata: {} });
    await expect(runTrajectory(b,
      { model, reference: REF, candidate: REF, prompts: PROMPTS_V01.slice(0, 1) })).rejects.toThrow(RefractError);
  });
  it('notes candidates that stopped early; a strict prefix diverges at its end', async () => {
    const b = new FakeBackend();
    const orig = b.runCompletionTrajectory.bind(b);
    b.runCompletionTrajectory = async (o: TrajectoryOptions) => {
      const r = await orig(o);
      return o.kvConfig === REF ? r : { ...r, tokenIds: r.tokenIds.slice(0, 5) };
    };
    const t = await runTrajectory(b,
      { model, reference: REF, candidate: 'ctk=fp16,ctv=fp16', prompts: PROMPTS_V01.slice(0, 2), nPredict: 8 });
    expect(t.notes).toEqual(['2/2 candidates stopped before n_predict=8 (EOS or other stop condition). '
      + 'Per-prompt cand_length records the actual decoded length.']);
    expect(t.per_prompt.map((p) => [p.first_divergence, p.prefix_agreement_length, p.cand_length,
      p.ref_length])).toEqual([[5, 5, 5, 8], [5, 5, 5, 8]]);
    expect(t.score).toBe(100); // 100 * mean prefix / mean cand length
    expect(t.full_match_rate).toBe(0);
    expect(t.median_first_divergence).toBe(5);
  });
});

describe('KLD axis', () => {
  it('drops non-finite positions and keeps them as null per position', async () => {
    const k = await runKld(new FakeBackend({ nanPositions: [0, 5, 600] }),
      { model, reference: REF, candidate: REF, corpus: await defaultCorpus(), chunks: 2, ctx: 512 });
    expect(k.mean_kld).toBe(0);
    expect(k.per_position_kld).toHaveLength(1024);
    expect([0, 5, 600].map((i) => k.per_position_kld![i])).toEqual([null, null, null]);
    expect(k.per_position_kld!.filter((x) => x === null)).toHaveLength(3);
    expect(k.convention).toBe('full chunk, causal');
    expect([k.chunks, k.ctx]).toEqual([2, 512]);
  });
  it('refuses a corpus shorter than ctx', async () => {
    await expect(runKld(new FakeBackend(),
      { model, reference: REF, candidate: REF, corpus: 'too short',
      ctx: 512 })).rejects.toThrow(BackendCapabilityError);
  });
  it('uses min(chunks, len/ctx) chunks', async () => {
    const k = await runKld(new FakeBackend(),
      { model, reference: REF, candidate: 'ctk=q8,ctv=q8', corpus: 'x'.repeat(1000), chunks: 32, ctx: 300 });
    expect(k.chunks).toBe(3);
    expect(k.corpus.size_bytes).toBe(1000);
  });
});

describe('R-NIAH', () => {
  it('helpers: lengths, keyword, sentence boundary, prompt', () => {
    expect(rniahLengths(16384)).toEqual([4096, 8192, 16384]);
    expect(rniahLengths(20000)).toEqual([4096, 8192, 16384]);
    expect(rniahLengths(2048)).toEqual([2048]);
    expect(extractNeedleKeyword('Note: APRICOT-7-BLUE is the rare paint color featured in this article.'))
      .toBe('APRICOT-7-BLUE');
    expect(extractNeedleKeyword('Code A-B and CODE-NAME-FOO')).toBe('CODE-NAME-FOO');
    expect(extractNeedleKeyword('the marker is amber.')).toBe('amber');
    const text = 'Alpha sentence. Beta sentence. Gamma sentence. Delta sentence.';
    expect(nearestSentenceBoundary(text, 20)).toBe(16); // after "Alpha sentence. "
    expect(nearestSentenceBoundary(text, 0)).toBe(0);
    expect(nearestSentenceBoundary(text, 999)).toBe(text.length);
    expect(nearestSentenceBoundary('no boundary here at all', 10)).toBe(10);
    const far = `${'x'.repeat(300)}. ${'y'.repeat(300)}`;
    expect(nearestSentenceBoundary(far, 50)).toBe(50); // the period is more than 200 characters away
    const { system, user } = buildRniahPrompt(text, 'NEEDLE.', 'Q?', 0.5);
    expect(system).toBe('Alpha sentence. Beta sentence.  NEEDLE. Gamma sentence. Delta sentence.');
    expect(user).toBe('Q?');
  });
  it('skips and reports cells past the model context', async () => {
    const r = await runRniah(new FakeBackend({ contextLength: 8192 }),
      { model, reference: REF, candidate: REF, haystack: await defaultHaystack(), upTo: 16384 });
    expect(r.cells.map((c) => c.length)).toEqual([4096, 4096, 4096, 8192, 8192, 8192]);
    expect(r.skipped_cells).toEqual([[16384, 0.1], [16384, 0.5], [16384, 0.9]]);
    expect(r.notes[0]).toBe("Skipped length(s) 16384: longer than the model's context_length 8192.");
    // The 8192 cell, sized by characters a token without the chat template, would not leave 256 tokens to predict:
    // its haystack is cut until the longest prompt fits, and not far below (1 token a character here).
    const fit = new RegExp('^Length 8192: its prompts came to (\\d+) tokens .* context_length 8192 leaves for 256 '
      + 'predicted tokens; the haystack was cut to (\\d+) characters \\((\\d+) tokens\\) to fit\\.$').exec(r.notes[1]);
    expect(fit, r.notes.join('\n')).not.toBeNull();
    const [before, chars, after] = fit!.slice(1).map(Number);
    expect(before).toBeGreaterThan(8192 - 256);
    expect(after).toBeLessThanOrEqual(8192 - 256);
    expect(after).toBeGreaterThan(8192 - 256 - 32);
    expect(chars).toBeLessThan(7792); // the cell's nominal haystack
    expect(r.notes).toHaveLength(2);
    expect(r.score).toBe(100);
    expect(r.password_keyword).toBe('APRICOT-7-BLUE');
  });
  it('is n/a (null, unlike the original\'s 0) with a note when every cell is skipped', async () => {
    const r = await runRniah(new FakeBackend({ contextLength: 2048 }),
      { model, reference: REF, candidate: REF, haystack: 'A. B. C. ', lengths: [4096] });
    expect([r.score, r.n_cells, r.skipped_cells.length]).toEqual([null, 0, 3]);
    expect(r.notes[1]).toMatch(/^No R-NIAH cells were run/);
  });
  it('notes a haystack shorter than a cell needs', async () => {
    const r = await runRniah(new FakeBackend(),
      { model, reference: REF, candidate: REF, haystack: 'One. Two. Three. '.repeat(50), lengths: [4096],
      positions: [0.5] });
    expect(r.notes[0]).toBe('Haystack corpus only has 850 chars; length=4096 would need ~3694. Cell may run with a '
      + 'shorter context than nominal.');
  });
});

describe('PLAD', () => {
  it('generated and re-tokenized ids agree on the fake backend (1 token per character)', async () => {
    const b = new FakeBackend();
    const o = { model, reference: REF, candidate: 'ctk=q4_0,ctv=q4_0', prompts: PROMPTS_V01.slice(0, 6), nPredict: 24 };
    const gen = await runPlad(b, { ...o, tokenSource: 'generated' });
    const ret = await runPlad(b, { ...o, tokenSource: 'retokenized' });
    expect(gen.per_prompt).toEqual(ret.per_prompt);
    expect([gen.token_source, ret.token_source]).toEqual(['generated', 'retokenized']);
    expect(Number.isNaN(gen.per_perturbation_score.paraphrase)).toBe(true);
    expect(gen.notes[0]).toMatch(/^\d+ \(prompt, perturbation\) pairs were skipped/);
  });
  it('rejects unknown perturbations', async () => {
    await expect(runPlad(new FakeBackend(),
      { model, reference: REF, candidate: REF, prompts: PROMPTS_V01,
      perturbations: ['shout' as never] })).rejects.toThrow(/unknown perturbations shout/);
  });
});

describe('runRefract', () => {
  it('reports progress per stage with an ETA', async () => {
    const seen: [Stage, number, number, number | null][] = [];
    await runRefract({ backend: new FakeBackend(), model, candidate: 'ctk=q8_0,ctv=q8_0',
      prompts: PROMPTS_V01.slice(0,
      3), nPredict: 8, chunks: 2, corpus: 'z'.repeat(2000), onProgress: (...a) => seen.push(a) });
    expect([...new Set(seen.map((s) => s[0]))]).toEqual(['trajectory', 'kld']);
    expect(seen.filter((s) => s[0] === 'trajectory').map((s) => s[1])).toEqual([1, 2, 3, 4, 5, 6]);
    expect(seen.at(-1)!.slice(1)).toEqual([2, 2, 0]);
    expect(seen.every(([, , , eta]) => eta === null || eta >= 0)).toBe(true);
  });
  it('stops when the reference is not deterministic (measureFloor)', async () => {
    const b = new FakeBackend();
    let n = 0;
    const orig = b.runCompletionTrajectory.bind(b);
    b.runCompletionTrajectory = async (o: TrajectoryOptions) => {
      const r = await orig(o);
      return n++ >= 2 ? { ...r, tokenIds: [...r.tokenIds, 42] } : r;
    };
    await expect(runRefract({ backend: b, model, candidate: REF, prompts: PROMPTS_V01.slice(0, 2), nPredict: 8,
      chunks: 1, corpus: 'z'.repeat(600), measureFloor: true }))
      .rejects.toThrow(/not token-identical|noise floor/);
  });
  it('rejects a bad KV string before running anything', async () => {
    const b = new FakeBackend();
    await expect(runRefract({ backend: b, model, candidate: 'ctk=q9' })).rejects.toThrow(/unknown cache type/);
    expect(b.calls.trajectory).toBe(0);
  });
});
