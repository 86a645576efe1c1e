// The generation panel: prompt, conditions, sampling settings, dtype and KV cache; streams text into a
// fixed-height output and reports prompt and decode speed. Stop aborts through generate's signal (generate
// returns at once, dropping the steps still queued on the GPU). Also: copy the output, list the prompt's tokens.
import { InputError, type ActDtype } from '../src/index.ts';
import { App, kvFromSelects } from './app.ts';
import { $, FieldError, intInput, numInput } from './dom.ts';

/** The ticked conditions in page order, comma-joined (generate's `condition`). */
export function conditionString(): string {
  const boxes = [...document.querySelectorAll<HTMLInputElement>('input[name=cond]')];
  const ticked = boxes.filter((c) => c.checked).map((c) => c.value);
  if (!ticked.length) {
    boxes[0]?.focus();
    throw new FieldError(boxes, 'tick at least one Condition (synth, cot, direct or noisy)',
      () => boxes.some((c) => c.checked));
  }
  return ticked.join(',');
}

const rate = (n: number, ms: number) => (n > 0 && ms > 0 ? `${(n / (ms / 1000)).toFixed(1)} tok/s` : '–');

/** Why Generate cannot run with the loaded model (null when it can). */
export function generateBlocked(app: App): string | null {
  if (!app.lm) return null;
  return app.lm.tokenizer ? null : `${app.lm.name} has no tokenizer.json, so the page cannot turn a prompt into tokens`;
}

/** The generation's fields, each checked against its field (the field at fault gets the focus). */
function fields() {
  return {
    condition: conditionString(), temperature: numInput('temperature', 0, 100), topP: numInput('top-p', 0.01, 1),
    seed: intInput('seed', Number.MIN_SAFE_INTEGER), asked: intInput('max-tokens', 1),
    kv: kvFromSelects('kv-k', 'kv-v').spec, prompt: $<HTMLTextAreaElement>('prompt').value,
  };
}

/**
 * The generation's settings, and what the page notes about them: max tokens capped by the room the model's context
 * leaves after the prompt (its tokens counted in the model's worker), an empty prompt.
 */
async function settings(app: App, f: ReturnType<typeof fields>) {
  const { condition, temperature, topP, seed, asked, kv, prompt } = f;
  const ctx = app.lm!.config.max_position_embeddings;
  const promptTokens = (await app.engine.promptTokens(prompt, condition)) ?? 0;
  const room = ctx - promptTokens;
  if (room < 1) {
    $('prompt').focus();
    throw new InputError('settings',
      `the Prompt is ${promptTokens} tokens with its condition tags, which fills the model's ${ctx}-token context; ` +
      'shorten it');
  }
  const notes: string[] = [];
  if (!prompt.trim()) notes.push('The Prompt is empty: the model continues from its condition tags alone.');
  const maxTokens = Math.min(asked, room);
  if (maxTokens < asked) {
    notes.push(`Max tokens ${asked} is capped to ${maxTokens}: the prompt takes ${promptTokens} of the model's ` +
      `${ctx}-token context.`);
  }
  return { prompt, notes, capped: maxTokens < asked,
    opts: { condition, maxTokens, sampler: { temperature, topP, seed }, cache: { kv } } };
}

async function runGeneration(app: App): Promise<void> {
  const output = $('output');
  const stats = $('gen-stats');
  const note = $('gen-note');
  // The last run's numbers and notes go at once, whatever this one does.
  stats.textContent = '';
  note.textContent = '';
  await app.run('generate', async (signal) => {
    const f = fields();
    // The run is on from here (the last one's output goes at once), while the worker counts the prompt's tokens.
    output.textContent = '';
    output.dataset.state = 'running';
    delete output.dataset.stopReason;
    output.setAttribute('aria-busy', 'true');
    const s = await settings(app, f);
    note.textContent = s.notes.join(' ');
    stats.textContent = 'Reading the prompt…';
    // Stop is one key away: Esc anywhere, or Enter / Space where the focus now is.
    if (document.activeElement?.id === 'generate' || document.activeElement?.id === 'prompt') $('gen-stop').focus();
    const t0 = performance.now();
    let pieces = 0;
    try {
      const dtype = $<HTMLSelectElement>('dtype').value as ActDtype;
      for await (const ev of app.engine.generate(s.prompt, dtype, { ...s.opts, signal })) {
        if (ev.type === 'text') {
          // Keep the view pinned to the end unless the reader scrolled up.
          const pinned = output.scrollTop + output.clientHeight >= output.scrollHeight - 4;
          output.append(ev.text);
          if (pinned) output.scrollTop = output.scrollHeight;
          pieces++;
          const seconds = ((performance.now() - t0) / 1000).toFixed(1);
          stats.textContent = `generating… ${pieces} piece${pieces > 1 ? 's' : ''} in ${seconds} s`;
        } else {
          const st = ev.stats;
          // A run cut by the room the context left stopped for the context, not for the field's value.
          const reason = s.capped && st.stopReason === 'max_tokens' ? 'context' : st.stopReason;
          const why = reason === 'context' ? 'context full' : reason.replace('_', ' ');
          stats.textContent = `prompt ${st.promptTokens} tok, ${rate(st.promptTokens, st.promptMs)} · ` +
            `decode ${st.decodeTokens} tok, ${rate(st.decodeTokens, st.decodeMs)} · ${why}`;
          output.dataset.stopReason = reason;
        }
      }
      output.dataset.state = 'done';
      if (signal.aborted) stats.textContent = stats.textContent.replace(/aborted$/, 'stopped');
    } catch (e) {
      output.dataset.state = 'error';
      stats.textContent = '';
      throw e;
    } finally {
      output.setAttribute('aria-busy', 'false');
    }
  });
  if (output.dataset.state === 'running') {
    output.dataset.state = 'error';
    output.setAttribute('aria-busy', 'false');
  }
  // Stop's button is disabled now: keep the keyboard user on the panel.
  if (document.activeElement === document.body || document.activeElement?.id === 'gen-stop') $('generate').focus();
}

/** A new model: the last one's output, numbers and tokens go. */
function clearOutput(): void {
  $('output').textContent = '';
  delete $('output').dataset.state;
  $('gen-stats').textContent = '';
  $('gen-note').textContent = '';
  $('tokens').replaceChildren();
  $('tokens-summary').textContent = '';
}

/** The prompt as the model reads it, one token per item: id and text (whitespace shown as is). */
async function showTokens(app: App): Promise<void> {
  const list = $('tokens');
  const summary = $('tokens-summary');
  try {
    const tokens = await app.engine.tokens($<HTMLTextAreaElement>('prompt').value, conditionString());
    const shown = tokens.slice(0, 2000);
    list.replaceChildren(...shown.map(([id, text]) => {
      const li = document.createElement('li');
      const num = document.createElement('span');
      num.className = 'id';
      num.textContent = String(id);
      li.append(num, text);
      return li;
    }));
    const n = tokens.length;
    const cut = n > shown.length ? ` (the first ${shown.length} shown)` : '';
    summary.textContent = `${n} token${n === 1 ? '' : 's'}${cut}.`;
    app.clearError('generate');
  } catch (e) {
    app.showError(e, 'generate');
  }
}

async function copyOutput(app: App): Promise<void> {
  try {
    await navigator.clipboard.writeText($('output').textContent ?? '');
    // A note of its own: the stats line keeps the run's numbers.
    $('copy-note').textContent = 'Output copied.';
    setTimeout(() => { $('copy-note').textContent = ''; }, 4000);
  } catch (e) {
    app.showError(new InputError('copy',
      `the browser did not allow copying (${(e as Error).message}); select the output and copy it by hand`),
      'generate');
  }
}

export function initGeneratePanel(app: App): void {
  $('gen-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void runGeneration(app);
  });
  // Ctrl/Cmd+Enter in the prompt generates.
  $('prompt').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' &&
      (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); $<HTMLFormElement>('gen-form').requestSubmit(); }
  });
  $('gen-stop').addEventListener('click', () => app.stop());
  $('copy-output').addEventListener('click', () => void copyOutput(app));
  $('show-tokens').addEventListener('click', () => void showTokens(app));
  let shown: unknown = null;
  app.onChange(() => {
    if (app.lm !== shown) { shown = app.lm; clearOutput(); }
    const blocked = generateBlocked(app);
    const gen = $<HTMLButtonElement>('generate');
    gen.disabled = app.job !== null || app.lm === null || blocked !== null;
    $('gen-blocked').textContent = blocked ? `Generate is off: ${blocked}.` : '';
    if (app.job === 'generate' && app.finishing) $('gen-stats').textContent = 'Stopping…';
    $<HTMLButtonElement>('gen-stop').disabled = app.job !== 'generate' || app.finishing;
    $<HTMLButtonElement>('show-tokens').disabled = app.lm === null || blocked !== null;
    $<HTMLButtonElement>('copy-output').disabled = app.job === 'generate' || !$('output').textContent;
  });
}
