// The demo as a new user meets it (issue 33), built, in headless Chromium on SwiftShader, one page for all of it:
// Stop in REFRACT frees the GPU for Generate within 2 s; the phone layout fits 390 px; messages name the page's
// fields and focus them, a new run clears old ones; estimates (and a warning) before a run; R-NIAH and PLAD at the
// model's context, n/a for axes that did not run; notes where a value is capped; Esc and Stop's focus; a model
// without tokenizer.json; a web page where the weights should be; download speed, persistence, Clear's confirm.
// Issue 42's checks run in the same session (page-checks.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODEL, closeBuiltDemo, openBuiltDemo, waitText, type BuiltDemo } from './built-demo.ts';
import { modelFolder, uxServers } from './flaky-server.ts';
import { pageOps } from './page-ops.ts';
import { kvRowIsTheLibrarys, messagesGoWhenFixed, otherSchemeNamed, phoneLayout, selectsWhole, stopTimes,
  warningLeavesResult, watchLoads } from './page-checks.ts';
import { parseConfig } from '../../src/advanced.ts';
import { press } from '../../testkit/helpers/browser.ts';

let work: string;
let demo: BuiltDemo;
const page = () => demo.page;
const { text, setValue, check, focused, disabled, state, waitState, waitShown, waitMatch } = pageOps(page);
const ready = () => waitState('model-status', ['ready', 'kept', 'error']);

describe('demo, issue 33 (built, headless Chromium)', () => {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'hrm-demo-ux-'));
    demo = await openBuiltDemo(join(work, 'dist'), [uxServers]);
  }, 120_000);

  afterAll(() => closeBuiltDemo(demo ?? {}, work));

  it('Stop in REFRACT ends its GPU work: Generate is back within 2 s with the GPU idle, and generates', async () => {
    await setValue('#kld-chunks', '1'); await setValue('#kld-ctx', '128'); await check('#traj', false);
    await page().click('#refract-run');
    // The whole run's estimate comes before it starts.
    await page().waitForFunction(() => /^Starting: about \d+ (s|min) in all\.$|KLD chunk/
      .test(document.getElementById('refract-status')?.textContent ?? ''), { timeout: 60_000 });
    await new Promise((r) => setTimeout(r, 1500));
    expect(await state('refract-result')).toBe('running');
    const t = await stopTimes(page());
    console.log(`ux: Stop in REFRACT to Generate enabled ${t.enabled.toFixed(0)} ms (a part ${t.partMs.toFixed(0)} ms),`
      + ` queue idle after ${t.queue.toFixed(0)} ms`);
    expect(t.right).toBe('Stopping: finishing the part on the GPU…');
    expect(t.genOff).toBe(true); // Generate stays off while the GPU finishes
    // A stop waits for the KLD part in flight: 2 s, or 2 parts (8 positions on a CPU adapter) timed now if slower.
    expect(t.enabled).toBeLessThan(Math.max(2000, 2 * t.partMs));
    expect(t.queue).toBeLessThan(200);
    expect(await text('#refract-status')).toBe('Stopped.');
    await setValue('#max-tokens', '2');
    await page().click('#generate');
    expect(await state('output')).toMatch(/^(running|done)$/); // started, not refused
    await waitState('output', ['done', 'error']);
    expect(await text('#gen-stats')).toMatch(/^prompt \d+ tok, .* · decode \d+ tok/);
  }, 120_000);

  it('phone (390 x 844): nothing wider than the viewport, panels of one width, one stretched column', async () => {
    await page().setViewport({ width: 390, height: 844 });
    const m = await phoneLayout(page());
    expect(m.scroll).toBeLessThanOrEqual(m.W);
    expect(m.wide).toEqual([]);
    expect(new Set(m.panels).size).toBe(1);
    expect(m.panels[0]).toBeGreaterThan(m.W - 40);
    expect(m.align).not.toBe('start');
    expect(m.pladLines).toBeGreaterThan(1.5);
    expect(m.values).toBeGreaterThan(120); // the adapter's values: long labels squeezed them to a word a line
    await selectsWhole(page());
    // A laptop: the download progress bar is in view on load.
    expect(await page().$eval('#dl-progress', (el) => el.getBoundingClientRect().bottom)).toBeLessThan(768);
  }, 30_000);

  it('messages name the page\'s fields and focus them; a new run clears the old error and stats', async () => {
    await setValue('#kld-ctx', '100000');
    await page().click('#refract-run');
    await waitShown('refract-error');
    expect(await text('#refract-error')).toBe('Check the settings: Context (ctx) must be a whole number from 2 to 4096 '
      + '(the model\'s context is 4096 tokens); it is "100000"');
    expect(await focused()).toBe('kld-ctx');
    await setValue('#kld-ctx', '64');
    await page().click('input[name=corpus][value=pasted]');
    await setValue('#pasted', 'Too short a text.');
    await page().click('#refract-run');
    await waitMatch('refract-error', /Pasted text/);
    expect(await text('#refract-error')).toMatch(new RegExp('^Check the settings: the Pasted text is \\d+ tokens, '
      + 'fewer than Context \\(ctx\\) 64: paste more text, or lower Context \\(ctx\\)$'));
    expect(await text('#refract-error')).not.toMatch(/--|-c\b/);
    expect(await focused()).toBe('pasted');
    // A new generation: the REFRACT error and the last stats line go before its own check fails.
    expect(await text('#gen-stats')).not.toBe('');
    await setValue('#temperature', '-1');
    await page().click('#generate');
    await waitShown('generate-error');
    expect(await page().$eval('#refract-error', (el) => (el as HTMLElement).hidden)).toBe(true);
    expect(await text('#gen-stats')).toBe('');
    expect(await text('#generate-error'))
      .toBe('Check the settings: Temperature must be a number from 0 to 100; it is "-1"');
    expect(await focused()).toBe('temperature');
    await messagesGoWhenFixed(page());
  }, 30_000);

  it('estimates: a long run is not started without a warning naming its time', async () => {
    await page().click('input[name=corpus][value=brown]');
    await setValue('#kld-chunks', '500');
    await setValue('#kld-ctx', '512');
    await page().click('#refract-run');
    await waitState('refract-result', ['warned', 'error', 'running'], 30_000);
    // The later tests need the GPU.
    if ((await state('refract-result')) === 'running') await press(page(), '#refract-stop');
    expect(await state('refract-result')).toBe('warned');
    expect(await text('#refract-status'))
      .toMatch(/^This run would take about [\d.]+ (min|h) here .* Press Run REFRACT again to start it anyway/);
    expect(await disabled('#generate')).toBe(false); // nothing runs
    await setValue('#kld-chunks', '1');
    expect(await text('#refract-status')).toBe(''); // the warning was about other sizes (issue 42)
    expect(await state('refract-result')).not.toBe('warned');
  }, 60_000);

  it('R-NIAH and PLAD are offered at the model\'s context; axes that did not run show n/a', async () => {
    expect(await page().$eval('#rniah-length', (el) => [(el as HTMLInputElement).max,
      (el as HTMLInputElement).value])).toEqual(['4096', '4096']);
    await check('#rniah', true);
    await setValue('#rniah-length', '5000');
    await page().click('#refract-run');
    await waitMatch('refract-error', /R-NIAH length/);
    expect(await text('#refract-error')).toMatch(/R-NIAH length \(tokens\) must be a whole number from 128 to 4096/);
    expect(await focused()).toBe('rniah-length');
    await check('#rniah', false);
    // KLD alone (small): the other axes show n/a.
    await setValue('#kld-ctx', '32');
    await page().click('#refract-run');
    await waitState('refract-result', ['done', 'error'], 60_000);
    expect(await text('#refract-error')).toBe('');
    expect(Number(await text('#kld-score'))).toBeGreaterThan(0);
    for (const axis of ['gtm', 'rniah', 'plad']) expect(await text(`#${axis}-score`), axis).toBe('n/a (not run)');
    await warningLeavesResult(page());
    // PLAD runs from the page (1 prompt, 1 token each: up to 5 cells, each with both caches); stopped once under way.
    await check('#plad', true);
    await setValue('#traj-prompts', '1'); await setValue('#traj-tokens', '1');
    await page().click('#refract-run');
    // Its estimate (minutes, from the pace of the KLD run on this software GPU) may ask for a second press first.
    await waitState('refract-result', ['warned', 'running'], 30_000);
    if ((await state('refract-result')) === 'warned') await page().click('#refract-run');
    await waitText(page(), '#refract-status', /^PLAD generation [1-9]\d*\/\d+, about/, 60_000);
    await press(page(), '#refract-stop');
    await waitState('refract-result', ['stopped'], 30_000);
    await check('#plad', false);
  }, 240_000);

  it('Esc stops a generation; Stop has the focus while it runs', async () => {
    await setValue('#max-tokens', '200');
    await page().focus('#prompt');
    await page().keyboard.down('Control');
    await page().keyboard.press('Enter');
    await page().keyboard.up('Control');
    await waitMatch('output', /./s, 60_000);
    expect(await focused()).toBe('gen-stop');
    await page().keyboard.press('Escape');
    await waitState('output', ['done', 'error'], 10_000);
    expect(await page().$eval('#output', (el) => (el as HTMLElement).dataset.stopReason)).toBe('aborted');
    await page().waitForFunction(() => !(document.getElementById('generate') as HTMLButtonElement).disabled,
      { timeout: 10_000 });
  }, 90_000);

  it('notes: max tokens capped by a small context (stop reason "context"), an empty prompt, a memory context outside '
    + 'the model\'s', async () => {
    const config = JSON.parse(readFileSync(join(MODEL, 'config.json'), 'utf8'));
    const dir = modelFolder(work, 'ctx-11',
      { 'config.json': JSON.stringify({ ...config, max_position_embeddings: 11 }) });
    await (await page().$('input#folder-input'))!.uploadFile(dir);
    await page().waitForFunction(() => document.getElementById('model-status')?.textContent === 'Ready: ctx-11',
      { timeout: 60_000 });
    await setValue('#prompt', 'The jury said');
    await setValue('#max-tokens', '100000');
    await page().click('#generate');
    await waitState('output', ['done', 'error'], 60_000);
    const note = /^Max tokens 100000 is capped to (\d+): the prompt takes (\d+) of the model's 11-token context\.$/
      .exec(await text('#gen-note'));
    expect(note, await text('#gen-note')).not.toBeNull();
    expect(Number(note![1]) + Number(note![2])).toBe(11);
    const reason = await page().$eval('#output', (el) => (el as HTMLElement).dataset.stopReason);
    expect(['context', 'eos']).toContain(reason);
    // The first token comes from the prompt's pass, the others from decode steps.
    if (reason === 'context') {
      expect(await text('#gen-stats')).toMatch(new RegExp(`decode ${Number(note![1]) - 1} tok, .* · context full$`));
    }
    await setValue('#prompt', ''); await setValue('#max-tokens', '1');
    await page().click('#generate');
    await waitState('output', ['done', 'error'], 60_000);
    expect(await text('#gen-note')).toBe('The Prompt is empty: the model continues from its condition tags alone.');
    for (const v of ['-1', '1e8']) {
      await setValue('#mem-ctx', v);
      expect(await text('#mem-note')).toBe(`"${v}" is not a context this model has: enter a whole number of tokens `
        + 'from 1 to 11. Shown for the whole context, 11 tokens.');
      expect(await text('#memory')).toMatch(/KV cache \(11 tokens/);
    }
    await setValue('#mem-ctx', '11');
    expect(await text('#mem-note')).toBe('');
    await kvRowIsTheLibrarys(page(), parseConfig({ ...config, max_position_embeddings: 11 }, 'config.json'));
    await setValue('#prompt', 'The jury said');
  }, 120_000);

  it('a server\'s web page where the weights should be is named as such, with no status or stack', async () => {
    await otherSchemeNamed(page());
    await setValue('#model-url', new URL('webpage', page().url()).href);
    await page().click('#load-url');
    await waitShown('load-error', 30_000);
    const e = await text('#load-error');
    expect(e).toMatch(/model\.safetensors.*the server sent a web page \(HTML\) where the model's weights should be/);
    expect(e).not.toMatch(/HTTP 404|\n\s+at /);
    await ready();
    // The failed load keeps the current model's rows, the checkpoint's included.
    expect(await text('#model-info')).toMatch(/checkpointmodel\.safetensors/);
  }, 60_000);

  it('a model without tokenizer.json says so at load and turns Generate off; old output goes', async () => {
    expect(await text('#output')).not.toBe('');
    const dir = modelFolder(work, 'no-tokenizer', { 'tokenizer.json': null, 'tokenizer_config.json': null });
    await (await page().$('input#folder-input'))!.uploadFile(dir);
    // Its own outcome, not the last test's "Could not load webpage" still on show while the upload starts.
    const outcome = /^(Ready without a tokenizer: no-tokenizer|Could not load no-tokenizer)/;
    await waitMatch('model-status', outcome, 60_000);
    expect(await text('#model-status')).toMatch(
      /^Ready without a tokenizer: no-tokenizer has no tokenizer\.json\. Generate and REFRACT read text.*logits/);
    expect(await disabled('#generate')).toBe(true);
    expect(await text('#gen-blocked')).toBe('Generate is off: no-tokenizer has no tokenizer.json, so the page cannot '
      + 'turn a prompt into tokens.');
    expect(await text('#output')).toBe('');
  }, 60_000);

  it('download speed and time left; storage persistence asked once; the cache\'s size before Clear', async () => {
    await page().evaluate(() => {
      const w = window as unknown as { persistCalls: number };
      w.persistCalls = 0;
      const orig = StorageManager.prototype.persist;
      StorageManager.prototype.persist = function (this: StorageManager) { w.persistCalls++; return orig.call(this); };
    });
    const base = new URL('slow', page().url()).href;
    // A laptop (1366 x 768) with the URL field in view: the download's bar, speed and time left are in view too.
    await page().setViewport({ width: 1366, height: 768 });
    await page().focus('#model-url');
    const { lines: speeds, views } = await watchLoads(page(), base, 2);
    const speed = /MiB \/ 18\.9 MiB · [\d.]+ (KiB|MiB)\/s, about \d+ s left$/;
    expect(speeds.some((s) => speed.test(s)), speeds.join('\n')).toBe(true);
    expect(views.length).toBeGreaterThan(0);
    expect(views.every(Boolean)).toBe(true);
    expect(await page().evaluate(() => (window as unknown as { persistCalls: number }).persistCalls)).toBe(1);
    demo.answer.accept = false;
    const asked = demo.dialogs.length;
    await page().click('#clear-cache');
    for (let i = 0; i < 100 && demo.dialogs.length === asked; i++) await new Promise((r) => setTimeout(r, 100));
    expect(demo.dialogs.at(-1)).toMatch(/^Delete \d+ cached files? \((18\.9|19\.0) MiB\)\?/);
    await new Promise((r) => setTimeout(r, 500)); // the page's answer to "no" (nothing) has run
    expect(await text('#cache-usage')).toMatch(/^[1-9]\d* files? cached/);
    demo.answer.accept = true;
    await page().click('#clear-cache');
    await waitMatch('cache-usage', /^0 files cached/);
  }, 90_000);
});
