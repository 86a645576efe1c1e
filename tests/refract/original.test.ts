// REFRACT's own pure-logic tests (TheTom/turboquant_plus refract/tests/, v0.3.2), ported to this API: one `it` per
// original test, named after it (test_score.py, test_axes_logic.py, test_trajectory.py, test_report.py,
// test_runner.py, test_cli.py, test_bugs.py). Tests already ported elsewhere say where.
//
// Original tests with no counterpart here, and why:
// - test_runner.py: bin_missing / bin_returns_path, run_completion* (subprocess, noise stripping, return codes,
//   trajectory JSONL files), tokenize_to_ids* (llama-tokenize output parsing), run_perplexity_kld* (llama-perplexity
//   output regexes), first_float, corpus sidecars (write/read/assert_corpus_matches), active_backend setter: all
//   drive llama.cpp binaries or files next to them; this port has no subprocess backend (the HRM backend computes
//   logits itself, the corpus identity is checked in kld.test.ts).
// - test_runner.py: kvconfig attn_rot_* pass-through, cli_args extras, env fields: TurboQuant rotation flags are
//   llama.cpp-only; kv-spec.ts rejects them (kvconfig.test.ts).
// - test_axes_logic.py: tokenize_words, gtm_diff_*: the deprecated retokenized GTM axis is not ported (--axis-a gtm
//   is refused); its diff is the trajectory diff (ported below).
// - test_cli.py: stub_gtm / stub_kld (the port marks skipped axes instead of stubbing; ported as the JSON/text
//   checks below), ensure_wikitext_2*, resolve_default_paths*, run_fetch, main_fetch_dispatches: no downloads here,
//   the corpus and haystack are built in (Brown corpus).
// - test_report.py: band_color_unknown / axis_label_unknown fall-backs: TypeScript's Band type has no unknown band;
//   json_report_per_prompt_can_be_excluded: the port always keeps per_prompt (the HTML diff needs it);
//   no_color_env: colour is an option of renderTextReport (the CLI passes false), tested as color: false.
// - test_trajectory.py: run_trajectory/rniah/plad "happy path" monkeypatched runs: the fake backend runs the real
//   axes instead (axes.test.ts, plad.test.ts).
import { describe, expect, it } from 'vitest';
import {
  band, buildRniahPrompt, compositeScore, kldToScore, MIN_FLOOR, parseKvConfig, parsePromptsJsonl, renderTextReport,
  toJsonString, DEFAULT_PERTURBATIONS, type KldAxisResult, type PladAxisResult, type RniahAxisResult,
  type TrajectoryAxisResult,
} from '../../src/refract/index.ts';
// The axes' inner steps and the report's parts, which the entry keeps to itself.
import {
  applyCase, applyParaphrase, applyPunct, applyTypo, levenshtein, normalizedDrift, perturb,
} from '../../src/refract/axes/plad.ts';
import { extractNeedleKeyword, nearestSentenceBoundary } from '../../src/refract/axes/rniah.ts';
import { diffTrajectories } from '../../src/refract/axes/trajectory.ts';
import { harmonicMean } from '../../src/refract/score.ts';
import { interpretPattern } from '../../src/refract/diagnosis.ts';
import { buildReport } from '../../src/refract/report/json.ts';
import { NO_STATS } from '../../src/refract/axes/kld.ts';
import { PyRandom } from '../../src/refract/pyrandom.ts';
import { reproCommand } from '../../src/cli/refract-flags.ts';

const gtm = (score: number): TrajectoryAxisResult => ({
  score, full_match_rate: 0.5, median_first_divergence: 3, mean_prefix_agreement_length: 10, mean_cand_length: 20,
  mean_ref_length: 20,
  n_prompts: 2, n_tokens_each: 20, per_prompt: [], notes: [],
});
const kld = (score: number): KldAxisResult => ({
  score, mean_kld: -Math.log(score / 100), ppl: null, rms_dp_pct: null, same_topp_pct: null, base_path: null,
  chunks: 32, ctx: 512,
  is_self_reference: false, corpus: { path: 'c', size_bytes: 1, sha256_head: null,
    sha256_head_bytes: 1 }, convention: 'full chunk, causal',
  ...NO_STATS,
});
const rniah = (baseAcc: number): RniahAxisResult => ({
  score: 100, n_cells: 1, cells: [{ length: 4096, position: 0.5, n_trials: 1, base_acc: baseAcc, cand_acc: baseAcc,
    degradation: 0, base_hits: 0, cand_hits: 0 }],
  skipped_cells: [], needle: 'n', password_keyword: 'K', notes: [],
});
const plad = (perPert: Record<string,
  number>): PladAxisResult => ({ score: 90, per_perturbation_score: perPert, per_prompt: [], n_prompts: 1,
  n_perturbations: 4, notes: [], token_source: 'retokenized' });

function report(scores: { gtm: number | null; kld: number | null; rniah?: RniahAxisResult; plad?: PladAxisResult },
  floor: number | null = null) {
  const composite = compositeScore({ gtm: scores.gtm, kld: scores.kld, rniah: scores.rniah?.score ?? null,
    plad: scores.plad?.score ?? null }, floor);
  return buildReport({
    model: 'm', reference: 'ctk=f16,ctv=f16', candidate: 'ctk=q8_0,ctv=q8_0', composite,
    gtm: scores.gtm === null ? null : gtm(scores.gtm), kld: scores.kld === null ? null : kld(scores.kld),
    rniah: scores.rniah, plad: scores.plad,
  });
}

describe('test_score.py', () => {
  it('harmonic_mean: empty 0, one value, zero dominates, negative clipped, clamped to 100, punishes a low axis', () => {
    expect(harmonicMean([])).toBe(0);
    expect(harmonicMean([42])).toBeCloseTo(42, 12);
    expect(harmonicMean([100, 100, 0])).toBe(0);
    expect(harmonicMean([100, -5])).toBe(0);
    expect(harmonicMean([200, 200])).toBeCloseTo(100, 12);
    expect(harmonicMean([90, 30])).toBeLessThan(60);
  });
  it.each([[100, 'EXCELLENT'], [90, 'EXCELLENT'], [89.99, 'PASS'], [80, 'PASS'], [79.99, 'DEGRADED'], [60, 'DEGRADED'],
    [59.99, 'FAIL'], [0, 'FAIL']] as const)(
    'band_thresholds_inclusive_lower %s -> %s', (score, want) => expect(band(score)).toBe(want));
  it('composite two axis, four axis, floor pass / fail / at threshold, direction', () => {
    expect(compositeScore({ gtm: 90, kld: 60 }).composite).toBeCloseTo(2 / (1 / 90 + 1 / 60), 12);
    expect(compositeScore({ gtm: 90, kld: 80, rniah: 70, plad: 60 }).composite).toBeCloseTo(4 / (1 / 90 + 1 / 80 +
      1 / 70 + 1 / 60), 12);
    expect(compositeScore({ gtm: 95, kld: 95 }, 100).notes).toEqual([]);
    const fail = compositeScore({ gtm: 95, kld: 95 }, 90);
    expect([fail.floor_ok, fail.notes.length, fail.notes[0]]).toEqual([false, 1,
      expect.stringMatching(/^Floor failed/)]);
    expect(compositeScore({ gtm: 95, kld: 95 }, MIN_FLOOR).floor_ok).toBe(true);
    expect(compositeScore({ gtm: 100, kld: 100 }).composite).toBeGreaterThan(compositeScore({ gtm: 50,
      kld: 50 }).composite);
  });
  it('interpret: all clear, catastrophic first, distribution break, mild drift, long only, brittle only, mixed, '
    + 'two-axis call', () => {
    expect(interpretPattern({ gtm: 95, kld: 99 })).toEqual([expect.stringMatching(/^All axes intact/)]);
    expect(interpretPattern({ gtm: 10, kld: 20, rniah: 30,
      plad: 40 })).toEqual([expect.stringMatching(/^Catastrophic/)]);
    expect(interpretPattern({ gtm: 30, kld: 40, rniah: 100,
      plad: 95 })[0]).toMatch(/^Per-token distribution is broken/);
    expect(interpretPattern({ gtm: 70, kld: 95, rniah: 100, plad: 95 })[0]).toMatch(/^Mild short-context drift/);
    expect(interpretPattern({ gtm: 95, kld: 99, rniah: 50,
      plad: 95 })).toEqual([expect.stringMatching(/^Long-context retrieval degraded/)]);
    expect(interpretPattern({ gtm: 95, kld: 99, rniah: 100,
      plad: 50 })).toEqual([expect.stringMatching(/^Brittleness/)]);
    expect(interpretPattern({ gtm: 70, kld: 99, rniah: 50, plad: 95 })).toHaveLength(2);
    expect(interpretPattern({ gtm: 95, kld: 95 })).toHaveLength(1);
  });
  it('min_floor_is_99_5', () => expect(MIN_FLOOR).toBe(99.5));
  it('composite_skip_gtm / skip_kld not inflated to 100, skip both 0 FAIL, skip gtm with rniah + plad', () => {
    const a = compositeScore({ gtm: null, kld: 99.47 });
    expect([a.composite, a.gtm_score, a.kld_score]).toEqual([99.47, null, 99.47]);
    expect(compositeScore({ gtm: 62.4, kld: null }).composite).toBeCloseTo(62.4, 12);
    const none = compositeScore({ gtm: null, kld: null });
    expect([none.composite, none.band]).toEqual([0, 'FAIL']);
    expect(compositeScore({ gtm: null, kld: 99, rniah: 100, plad: 90 }).composite).toBeCloseTo(3 / (1 / 99 + 1 / 100 +
      1 / 90), 12);
    expect(Array.isArray(interpretPattern({ gtm: null, kld: 99, rniah: 100, plad: 95 }))).toBe(true);
  });
  it('text_report_skip_gtm_renders_n_a_and_one_axis_count', () => {
    const t = renderTextReport(report({ gtm: null, kld: 99.47 }));
    expect(t).toMatch(/Axis A Trajectory:\s+n\/a\s+\(skipped\)/);
    // The original writes "(harmonic mean of 1 axes; ...)"; one axis is said so (issue 42, item 14).
    expect(t).toContain("(one axis measured: the score is that axis's)");
    expect(t).not.toContain('GTM diagnostics');
  });
});

describe('test_axes_logic.py', () => {
  it('kld_to_score: zero, negative clamped, monotonic, paper headline', () => {
    expect(kldToScore(0)).toBe(100);
    expect(kldToScore(-0.5)).toBe(100);
    expect(kldToScore(0.1)).toBeGreaterThan(kldToScore(0.2));
    expect(kldToScore(1.7381)).toBeCloseTo(17.59, 2);
  });
  it('traj_diff matches the shared-prefix rule (identical, divergence, prefix, empty)', () => {
    expect(diffTrajectories([1, 2, 3], [1, 2, 3])).toEqual({ firstDivergence: null, prefixLength: 3 });
    expect(diffTrajectories([1, 2, 3], [1, 9, 3])).toEqual({ firstDivergence: 1, prefixLength: 1 });
    expect(diffTrajectories([1, 2], [1, 2, 3])).toEqual({ firstDivergence: 2, prefixLength: 2 });
    expect(diffTrajectories([], [])).toEqual({ firstDivergence: null, prefixLength: 0 });
    expect(diffTrajectories([], [1])).toEqual({ firstDivergence: 0, prefixLength: 0 });
  });
  it('load_prompts_skips_comments_and_blanks', () => {
    const jsonl = '{"id": "p1", "prompt": "a"}\n\n# comment\n{"id": "p2", "prompt": "b"}\n';
    expect(parsePromptsJsonl(jsonl).map((p) => p.id)).toEqual(['p1', 'p2']);
  });
  it('perturbations: typo swaps two chars (same length), none without long words; case; punct; '
    + 'paraphrase keeps case', () => {
    const typo = applyTypo('hello banana', new PyRandom(0));
    expect(typo).not.toBeNull();
    expect(typo).not.toBe('hello banana');
    expect(typo!.length).toBe('hello banana'.length);
    expect(applyTypo('a an the is', new PyRandom(0))).toBeNull();
    expect(applyCase('Hello World')).toBe('hello world');
    expect(applyCase('no capitals here')).toBeNull();
    expect(applyPunct('What is it?')).toBe('What is it');
    expect(applyPunct('It is.')).toBe('It is');
    expect(applyPunct('Tell me')).toBe('Tell me?');
    expect(applyParaphrase('a big house', new PyRandom(0))).toBe('a large house');
    expect(applyParaphrase('Big house', new PyRandom(0))).toBe('Large house');
    expect(applyParaphrase('nothing matches', new PyRandom(0))).toBeNull();
    expect([...DEFAULT_PERTURBATIONS]).toEqual(['typo', 'case', 'punct', 'paraphrase']);
    for (const k of DEFAULT_PERTURBATIONS) expect(() => perturb(k, 'The quick fox.', new PyRandom(1))).not.toThrow();
  });
  it('levenshtein: identical, substitution, insertion, deletion, empty sides; normalized drift', () => {
    expect(levenshtein([1, 2, 3], [1, 2, 3])).toBe(0);
    expect(levenshtein([1, 2, 3], [1, 9, 3])).toBe(1);
    expect(levenshtein([1, 2, 3], [1, 2, 9, 3])).toBe(1);
    expect(levenshtein([1, 2, 3], [1, 3])).toBe(1);
    expect(levenshtein([], [1, 2])).toBe(2);
    expect(levenshtein([1, 2], [])).toBe(2);
    expect(normalizedDrift([], [])).toBe(0);
    expect(normalizedDrift([], [1])).toBe(1);
    expect(normalizedDrift([1], [2, 3, 4, 5])).toBe(1);
  });
  it('keyword, sentence boundary, prompt building, substring scoring', () => {
    expect(extractNeedleKeyword('Note: APRICOT-7-BLUE is the rare paint color featured in this article.'))
      .toBe('APRICOT-7-BLUE');
    expect(extractNeedleKeyword('ABC and LONGER-ONE here')).toBe('LONGER-ONE');
    expect(extractNeedleKeyword('the answer is mango.')).toBe('mango');
    expect(extractNeedleKeyword('')).toBe('');
    expect(nearestSentenceBoundary('anything', 0)).toBe(0);
    expect(nearestSentenceBoundary('short', 999)).toBe(5);
    expect(nearestSentenceBoundary('Sentence one. Sentence two. Sentence three.', 14)).toBe(14);
    expect(nearestSentenceBoundary('a'.repeat(1000), 500)).toBe(500);
    const p = buildRniahPrompt('First sentence. Second sentence. Third sentence.', 'NEEDLE-X.', 'Q?', 0.5);
    expect(p.system).toContain('NEEDLE-X.');
    expect(p.user).toBe('Q?');
  });
});

describe('test_report.py / test_bugs.py', () => {
  it('text report: two-axis basic, trajectory label, four axes, floor block, not-measured warning, extras', () => {
    const two = renderTextReport(report({ gtm: 95, kld: 99 }));
    expect(two).toContain('Axis A Trajectory');
    expect(two).toContain('(harmonic mean of 2 axes;');
    expect(two).toContain('Noise floor: NOT MEASURED — pass --measure-floor to verify.');
    const four = renderTextReport(report({ gtm: 95, kld: 99, rniah: rniah(1),
      plad: plad({ typo: 90, case: 90, punct: 90, paraphrase: 90 }) }));
    expect(four).toContain('Axis C R-NIAH');
    expect(four).toContain('Axis D PLAD');
    expect(renderTextReport(report({ gtm: 95, kld: 99 },
      100))).toMatch(/Noise floor \(ref vs ref\): 100\.00 {2}\(min 99\.5\) {2}\[OK\]/);
    const withExtras = renderTextReport({ ...report({ gtm: 95, kld: 99 }), extras: { note: 'hello' } });
    expect(withExtras).toContain(' note: hello');
  });
  it('json report: schema stamp, band / summary agree, axes carry band + description + skipped', () => {
    const r = report({ gtm: 95, kld: 60 });
    expect([r.schema, r.score_direction, r.score_range]).toEqual(['refract.report.v0.3.1', 'higher_is_better',
      [0, 100]]);
    expect(r.summary).toBe('Visible drift. Audit on your workload before deploying.');
    expect(r.band).toBe(band(r.composite));
    expect([r.axes.gtm.band, r.axes.kld.band, r.axes.gtm.skipped, r.axes.kld.skipped]).toEqual(['EXCELLENT',
      'DEGRADED', false, false]);
    expect(r.axes.kld.description).toBe('Distribution-level divergence from the fp16 reference.');
    const skipped = report({ gtm: null, kld: 99 });
    expect([skipped.axes.gtm.score, skipped.axes.gtm.band, skipped.axes.gtm.skipped]).toEqual([null, 'skipped', true]);
    expect(JSON.parse(toJsonString(skipped)).axes.gtm.skipped).toBe(true);
  });
  it('rniah confidence low under 0.2 base accuracy, ok above; plad partial with NaN, ok without', () => {
    expect(report({ gtm: 95, kld: 99, rniah: rniah(0.1) }).axes.rniah!.confidence).toBe('low');
    expect(report({ gtm: 95, kld: 99, rniah: rniah(0.8) }).axes.rniah!.confidence).toBe('ok');
    const partial = report({ gtm: 95, kld: 99, plad: plad({ typo: Number.NaN, case: 90 }) }).axes.plad!;
    expect([partial.confidence, partial.skipped_perturbations]).toEqual(['partial', ['typo']]);
    expect(report({ gtm: 95, kld: 99, plad: plad({ typo: 90 }) }).axes.plad!.confidence).toBe('ok');
  });
  it('text_report_plad_nan_renders_as_skipped', () => {
    const line = renderTextReport(report({ gtm: 95, kld: 99,
      plad: plad({ typo: 90, paraphrase: Number.NaN }) })).split('\n').find((l) => l.includes('paraphrase'))!;
    expect(line).toContain('skipped');
    expect(line.toLowerCase()).not.toContain('nan');
  });
  it('repro command: shell-quoted, the home folder as ~ (repro_strips_home_to_tilde)', () => {
    const home = process.env.HOME!;
    expect(reproCommand(['score', '--model', `${home}/models/x`, '--candidate', 'ctk=q8_0,ctv=q4_0',
      'a b'])).toBe("refract score --model ~/models/x --candidate ctk=q8_0,ctv=q4_0 'a b'");
  });
  it('band_with_nan / harmonic_mean_with_nan are not EXCELLENT; direction; bands agree; kld score inverts', () => {
    expect(band(Number.NaN)).toBe('FAIL');
    expect(harmonicMean([100, Number.NaN])).toBeLessThan(90);
    const [p, b, w] = [100, 50, 10].map((x) => compositeScore({ gtm: x, kld: x }).composite);
    expect(p > b && b > w).toBe(true);
    for (const s of [95, 85, 70, 30]) expect(compositeScore({ gtm: s, kld: s }).band).toBe(band(s));
    for (const k of [0, 0.1, 0.5, 1, 2.5]) expect(-Math.log(kldToScore(k) / 100)).toBeCloseTo(k, 6);
  });
  it('levenshtein_symmetric; kvconfig label round-trips; empty fragments skipped '
    + '(test_runner kvconfig_parse_skips_empty_fragments)', () => {
    for (const [a, b] of [[[1, 2, 3], [1, 5, 3]], [[1, 2, 3], [3, 2, 1]], [[], [1, 2, 3]],
      [[1, 2, 3, 4, 5], [1, 2, 3]]]) expect(levenshtein(a, b)).toBe(levenshtein(b, a));
    const c = parseKvConfig(' ctk = q8_0 ,ctv=q4_0');
    expect(parseKvConfig(c.label)).toEqual(c);
    expect(parseKvConfig('ctk=q8_0,,ctv=q4_0').label).toBe('ctk=q8_0,ctv=q4_0');
    expect(() => parseKvConfig('')).toThrow(/KV config is empty/);
  });
});
