// Reports: JSON fields of refract.report.v0.3.1, the text card, the HTML page (well-formed, SVG plots, escaping),
// Python-compatible wrapping, compare and repeatability text.
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { PROMPTS_V01, type Prompt } from '../../src/refract/prompts.ts';
import { renderCompareTable, renderRepeatability } from '../../src/refract/report/compare.ts';
import { esc, renderHtmlReport } from '../../src/refract/report/html.ts';
import { parseReport, toJsonString, type RefractReport } from '../../src/refract/report/json.ts';
import { renderTextReport, roundHalfEven } from '../../src/refract/report/text.ts';
import { wrap } from '../../src/refract/report/wrap.ts';
import { runRefract } from '../../src/refract/runner.ts';
import { FakeBackend } from './fake-backend.ts';
import { wellFormedProblem } from './wellformed.ts';

const example = (name: string) => parseReport(readFileSync(new URL(`../../data/refract/${name}`,
  import.meta.url), 'utf8'));
const EVIL: Prompt = { id: 'x<script>alert(1)</script>', category: 'a&b',
  prompt: '<script>alert("p")</script> & "quotes" \'too\'' };

let full: RefractReport;
let evil: RefractReport;
beforeAll(async () => {
  const backend = new FakeBackend();
  full = await runRefract({ backend, model: 'fake-model', candidate: 'ctk=q8_0,ctv=q4_0',
    axes: { rniah: true, plad: true }, reproCommand: 'refract score --model fake-model', extras: { note: 'test' } });
  evil = await runRefract({ backend, model: 'm<b>', candidate: 'ctk=q4,ctv=q4',
    prompts: [EVIL, ...PROMPTS_V01.slice(0, 2)], nPredict: 24, chunks: 2, axes: { plad: true } });
}, 60_000);

describe('JSON report', () => {
  it('has the v0.3.1 top-level fields in order', () => {
    expect(Object.keys(full)).toEqual([
      'schema', 'framework_version', 'environment', 'repro_command', 'timestamp', 'score_direction', 'score_range',
      'model', 'reference', 'candidate',
      'composite', 'band', 'summary', 'diagnosis', 'composite_detail', 'axes', 'extras',
    ]);
    expect(full.schema).toBe('refract.report.v0.3.1');
    expect(full.framework_version).toBe('0.3.2');
    expect(full.score_direction).toBe('higher_is_better');
    expect(full.score_range).toEqual([0, 100]);
    expect(full.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
    expect(full.environment).toMatchObject({ backend: 'fake-bigram', context_length: 8192, runtime: 'node' });
    expect(full.repro_command).toBe('refract score --model fake-model');
    expect(full.extras).toEqual({ note: 'test' });
    expect(typeof full.composite).toBe('number');
  });
  it('carries every field of the published reports, plus the v0.3.1 confidence guards', () => {
    for (const ex of [example('example-report-clean-mistral24b.json'),
      example('example-report-degraded-qwen7b.json')]) {
      const has = (ours: object,
        theirs: object) => expect(Object.keys(ours)).toEqual(expect.arrayContaining(Object.keys(theirs)));
      has(full, Object.fromEntries(Object.entries(ex).filter(([k]) => k !== 'schema')));
      expect(Object.keys(full.composite_detail)).toEqual(Object.keys(ex.composite_detail));
      for (const axis of ['gtm', 'kld', 'rniah', 'plad'] as const) has(full.axes[axis]!, ex.axes[axis]!);
      has(full.axes.gtm.per_prompt[0], ex.axes.gtm.per_prompt[0]);
      has(full.axes.kld.corpus, ex.axes.kld.corpus);
      has(full.axes.rniah!.cells[0], ex.axes.rniah!.cells[0]);
      has(full.axes.plad!.per_prompt[0], ex.axes.plad!.per_prompt[0]);
    }
    expect(full.axes.rniah).toMatchObject({ confidence: 'ok', base_acc_avg: 1 });
    expect(full.axes.plad).toMatchObject({ skipped_perturbations: ['paraphrase'], confidence: 'partial' });
    expect(full.axes.gtm.description).toBe('Token-level agreement with the fp16 reference.');
    expect(full.summary).toBe('Material quality loss. Treat as broken.');
  });
  it('serialises NaN as null and parses back', () => {
    const text = toJsonString(full);
    expect(text).toContain('"paraphrase": null');
    expect(() => JSON.parse(text)).not.toThrow();
    expect(parseReport(text).composite).toBe(full.composite);
    expect(() => parseReport('{"x": 1}')).toThrow(/not a REFRACT report/);
  });
});

describe('text report', () => {
  it('renders the original layout', () => {
    const t = renderTextReport(full);
    const lines = t.split('\n');
    expect(lines[0]).toBe('='.repeat(72));
    expect(lines[1]).toBe(' REFRACT v0.3.2 — Reference-anchored Robust Acid-test');
    expect(t).toContain(' candidate : ctk=q8_0,ctv=q4_0\n');
    expect(t).toContain(' Noise floor: NOT MEASURED — pass --measure-floor to verify.');
    expect(t).toContain('   (harmonic mean of 4 axes; any single low axis drops the score hard)');
    expect(t).toMatch(/\n Axis A Trajectory: +[\d.]+ {2}\[[#-]{40}\] {2}\w+ +Token-level agreement/);
    expect(t).toContain(' GTM diagnostics\n   prompts                    : 30\n   tokens decoded each        : 128\n');
    expect(t).toContain('   chunks x ctx               : 32 x 512\n');
    expect(t).toContain(' R-NIAH diagnostics\n   needle keyword             : APRICOT-7-BLUE\n');
    expect(t).toMatch(/\n {5}\( 4096, 0\.10\) → 1\.00 \/ [01]\.00 \/ [01]\.00\n/);
    expect(t).toContain('   paraphrase : skipped (never applied)');
    expect(t).not.toContain('\x1b[');
    expect(renderTextReport(full, { color: true })).toContain('\x1b[1m');
  });
  it('renders a published report with the original bar and lines', () => {
    const t = renderTextReport(example('example-report-clean-mistral24b.json'));
    expect(t).toContain(` REFRACT score    :  90.86  [${'#'.repeat(36)}${'-'.repeat(4)}]  EXCELLENT\n`);
    expect(t).toContain(` Axis A Trajectory:  76.65  [${'#'.repeat(31)}${'-'.repeat(9)}]  DEGRADED   `
      + 'Token-level agreement with the fp16 reference.\n');
    expect(t).toContain(' Diagnosis\n   Mild short-context drift; long-context retrieval and perturbation\n'
      + '   robustness are intact. Likely safe for typical use; audit on your\n'
      + '   specific decoding workload before shipping.\n');
    expect(t).toContain('   median first divergence    : token 25.5\n');
    expect(t).toContain('   full match rate            :  53.3 %\n');
  });
  it('rounds bars half to even like Python',
    () => expect([0.5, 1.5, 2.5, 20.5, 20.6].map(roundHalfEven)).toEqual([0, 2, 2, 20, 21]));
});

describe('wrap (Python textwrap)', () => {
  it('matches CPython output', () => {
    const text = 'Long-context retrieval degraded: candidate fails on prompts where the fp16 reference still retrieves '
      + 'correctly. Inspect the per-(length, position) cell breakdown to see where it breaks.';
    expect(wrap(text, 68, '   ', '   ')).toEqual([
      '   Long-context retrieval degraded: candidate fails on prompts where',
      '   the fp16 reference still retrieves correctly. Inspect the',
      '   per-(length, position) cell breakdown to see where it breaks.']);
    expect(wrap(`${'a'.repeat(78)}-${'b'.repeat(20)} ccc`, 30, '   ', '   ')).toEqual(['   ' + 'a'.repeat(27),
      '   ' + 'a'.repeat(27), '   ' + 'a'.repeat(24) + '-', '   ' + 'b'.repeat(20) + ' ccc']);
    expect(wrap('xx well-known hyper-active self-x a-b  multi  space --dash-- e.g. x--y', 12)).toEqual(['xx well-',
      'known hyper-', 'active', 'self-x a-b', 'multi  space', '--dash--', 'e.g. x--y']);
  });
});

describe('HTML report', () => {
  let html: string;
  let evilHtml: string;
  beforeAll(async () => {
    html = await renderHtmlReport(full);
    evilHtml = await renderHtmlReport(evil);
  }, 60_000);

  it('is well-formed and self-contained', () => {
    expect(wellFormedProblem(html)).toBeNull();
    expect(wellFormedProblem(evilHtml)).toBeNull();
    expect(html.startsWith('<!DOCTYPE html>\n<html')).toBe(true);
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\((?!#)/i); // url(#clipN) is SVG-internal
    expect(html).not.toMatch(/(src|href)="/i);
    // SVG namespaces only
    for (const url of html.match(/https?:\/\/[^"\s<]+/g) ?? []) expect(url).toMatch(/^http:\/\/www\.w3\.org\//);
  });
  it('contains the plots as SVG: axes, divergence, per-position KL (2), R-NIAH, PLAD', () => {
    expect((html.match(/<svg /g) ?? []).length).toBe(6);
    expect(html).toContain('Per-position KL(P_ref || P_cand) across the corpus');
    expect((html.match(/<details class="prompt/g) ?? []).length).toBe(30);
  });
  it('shows the per-prompt first divergence and the token diff', () => {
    const p = full.axes.gtm.per_prompt.find((x) => !x.matched)!;
    expect(html).toContain(`diverges at token ${p.first_divergence} (prefix ${p.prefix_agreement_length} / `
      + `cand ${p.cand_length} / ref ${p.ref_length})`);
    const firstCand = p.cand_tokens![p.prefix_agreement_length].replace(/ /g, '·');
    expect(html).toContain(`<span class="tok cand">${esc(firstCand)}</span>`);
  });
  it('escapes model and prompt text', () => {
    expect(evilHtml).not.toMatch(/<script/i);
    expect(evilHtml).toContain('x&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(evilHtml)
      .toContain('&lt;script&gt;alert(&quot;p&quot;)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;too&#39;');
    expect(evilHtml).toContain('m&lt;b&gt;');
  });
  it('embeds the raw JSON', () => {
    expect(html).toContain('<details><summary>Raw JSON report</summary><pre>{"schema":"refract.report.v0.3.1"');
  });
  it("has the original's elements: composite label, summary box, model / hardware / environment cards, acronym "
    + 'footer, KL statistics', () => {
    expect(html).toContain('<div class="label">Composite score</div>');
    const box = new RegExp(`<div class="summary-box (green|amber|red)"><div class="title">${esc(full.summary)}</div>`
      + `<div class="desc">Composite of ${full.composite.toFixed(2)} falls in the \\w+ band\\. `);
    expect(html).toMatch(box);
    for (const h of ['Model', 'Hardware', 'Environment']) expect(html).toContain(`<div class="run-card"><h3>${h}</h3>`);
    expect(html).toContain('<em>REFerence-anchored Robust Acid-test for Compressed Transformers</em>');
    for (const a of ['Greedy Trajectory Match', 'KL Divergence at the Decoder', 'Retrieval Needle-In-A-Haystack',
      'Perturbation-Locality Aware Drift']) expect(html).toContain(a);
    expect(html).toContain('KL statistics (as llama-perplexity --kl-divergence)');
    expect(html).toContain(`<td>${full.axes.kld.kld_percentiles!['99.9'].toFixed(6)}</td>`);
  });
  it('low-confidence R-NIAH: headline score suppressed, warning box, n/a where the reference never retrieves; '
    + 'skipped axes n/a', async () => {
    const rn = full.axes.rniah!;
    const cells = [{ ...rn.cells[0], base_acc: 0, cand_acc: 0, degradation: 0 }, ...rn.cells.slice(1)];
    const low = { ...full,
      axes: { ...full.axes, rniah: { ...rn, cells, confidence: 'low' as const, base_acc_avg: 0.1 } } };
    const h = await renderHtmlReport(low);
    expect(h).toContain('<td>C R-NIAH</td><td>—</td><td>Low confidence</td>');
    expect(h).toContain('Low confidence: the score is a noise floor.');
    expect(h).toContain(`<td>${cells[0].length}</td><td>${cells[0].position.toFixed(2)}</td><td>1</td>`
      + '<td>n/a</td><td>n/a</td><td>n/a</td>');
    const skipped = await runRefract({ backend: new FakeBackend(), model: 'fake-model', candidate: 'ctk=q8_0,ctv=q4_0',
      prompts: PROMPTS_V01.slice(0, 2), nPredict: 8, chunks: 2, skipGtm: true });
    const hs = await renderHtmlReport(skipped);
    expect(hs).toContain('<td>A Trajectory (gtm)</td><td>n/a</td><td>Skipped</td>');
    expect(hs).toContain('<h2>Axis A: trajectory</h2><p>Skipped (not measured).</p>');
    expect(wellFormedProblem(hs)).toBeNull();
  });
});

describe('a KLD-only run (issue 42, items 8 and 14)', () => {
  it('claims only what ran: the skipped axis is null in the JSON, and no report calls the candidate safe', async () => {
    const r = await runRefract({ backend: new FakeBackend(), model: 'fake-model', candidate: 'ctk=f16,ctv=f16',
      prompts: PROMPTS_V01.slice(0, 1), chunks: 1, ctx: 64, skipGtm: true });
    expect(r.band).toBe('EXCELLENT');
    const json = JSON.parse(toJsonString(r));
    expect([json.axes.gtm.score, json.axes.gtm.skipped, json.axes.gtm.full_match_rate]).toEqual([null, true, null]);
    expect(r.summary).toMatch(/trajectory \(axis A\) not measured/);
    expect(r.diagnosis).toEqual(['No drift on the axes measured; trajectory (axis A) was not measured.']);
    const text = renderTextReport(r);
    const html = await renderHtmlReport(r);
    for (const t of [text, html]) {
      expect(t).not.toMatch(/All axes intact|Safe to deploy|harmonic mean of 1 axes/);
      expect(t).toContain('not measured');
    }
    expect(text).toContain("(one axis measured: the score is that axis's)");
    expect(html).not.toContain('pass --measure-floor');
    expect(html).toContain('<code>measureFloor: true</code> in runRefract');
  });

  it('a trajectory-only run: the skipped KLD axis claims no mean KL', async () => {
    const r = await runRefract({ backend: new FakeBackend(), model: 'fake-model', candidate: 'ctk=q8_0,ctv=q8_0',
      prompts: PROMPTS_V01.slice(0, 1), nPredict: 8, skipKld: true });
    const json = JSON.parse(toJsonString(r));
    expect([json.axes.kld.score, json.axes.kld.skipped, json.axes.kld.mean_kld]).toEqual([null, true, null]);
    expect(json.axes.gtm.skipped).toBe(false);
    expect(renderTextReport(r)).not.toContain('mean KLD');
  });
});

describe('R-NIAH whose reference never finds the needle (issue 33, item 8)', () => {
  it('is n/a in the JSON, text and HTML reports, out of the composite; the diagnosis claims nothing', async () => {
    const prompts = PROMPTS_V01.slice(0, 2);
    const base = { model: 'fake-model', candidate: 'ctk=q8_0,ctv=q4_0', prompts, nPredict: 8, chunks: 2 };
    const b = new FakeBackend();
    b.runCompletion = async () => ({ text: 'I do not know.', nTokens: 5, metadata: {} }); // R-NIAH's generations only
    const rniah = { lengths: [300, 600], positions: [0.5], nPredict: 8 };
    const r = await runRefract({ backend: b, ...base, axes: { rniah } });
    const without = await runRefract({ backend: new FakeBackend(), ...base });
    const rn = r.axes.rniah!;
    expect([rn.score, rn.band, rn.confidence, rn.n_cells]).toEqual([null, 'n/a', 'low', 2]);
    expect(r.composite_detail.rniah_score).toBeNull();
    expect(rn.notes.at(-1)).toMatch(/^The reference never retrieved the needle \(0 hits in 2 cells\).*R-NIAH is n\/a/);
    expect(r.composite).toBe(without.composite);
    expect(r.composite).toBeLessThan(100);
    const json = JSON.parse(toJsonString(r));
    expect([json.axes.rniah.score, json.axes.rniah.band]).toEqual([null, 'n/a']);
    expect(json.composite_detail.rniah_score).toBeNull();
    const text = renderTextReport(r);
    expect(text).toContain(' Axis C R-NIAH    :    n/a  (no score: not in the composite)');
    expect(text).toContain('(harmonic mean of 2 axes;');
    for (const d of r.diagnosis) expect(d).not.toMatch(/retrieval[^.;]* (is|are) intact/);
    const html = await renderHtmlReport(r);
    expect(html).toContain('<td>C R-NIAH</td><td>n/a</td><td>n/a</td><td>no score: not in the composite</td>');
    expect(html).toContain('<div class="title">R-NIAH: n/a</div>');
    expect(html).toContain('<tr><th>score</th><td>n/a</td></tr>');
    expect(wellFormedProblem(html)).toBeNull();
  });
});

describe('compare and repeatability text', () => {
  it('compare table', () => {
    const t = renderCompareTable([
      { label: 'clean-mistral24b', report: example('example-report-clean-mistral24b.json') },
      { label: 'degraded-qwen7b', report: example('example-report-degraded-qwen7b.json') },
    ]);
    expect(t.split('\n').slice(1, 5)).toEqual([
      'Report                              Comp Band          Traj     KLD  R-NIAH    PLAD',
      '-'.repeat(80),
      'clean-mistral24b                   90.86 EXCELLENT    76.65   99.71  100.00   91.34',
      'degraded-qwen7b                    77.98 DEGRADED     55.13   98.75  100.00   76.73',
    ]);
  });
  it('repeatability summary and verdict', () => {
    const reps = [90, 92, 90, 92].map((composite) => ({ composite, axes: { gtm: { score: 90 }, kld: { score: 90 } } }));
    const t = renderRepeatability(reps);
    expect(t).toContain('REPEATABILITY (4 runs)');
    expect(t).toContain('composite  : min=90.00  med=91.00  max=92.00  stdev=1.15  range=2.00');
    expect(t).toContain('  rniah     : no data');
    expect(t).toContain('⚠ NOISY    composite stdev 1.15 (1.0-3.0)');
    expect(renderRepeatability([{ composite: 95, axes: {} },
      { composite: 95, axes: {} }])).toContain('✓ HEALTHY  composite stdev 0.00 ≤ 1.0');
    expect(renderRepeatability([{ composite: 80, axes: {} }, { composite: 95, axes: {} }])).toContain('✗ UNSTABLE');
  });
});
