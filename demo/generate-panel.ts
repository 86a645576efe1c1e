// The generation panel: prompt, conditions, sampling settings, dtype and KV cache; streams text into a
// fixed-height output and reports prompt and decode speed. Stop aborts through generate's signal (generate
// returns at once, dropping the steps still queued on the GPU). Also: copy the output, list the prompt's tokens.
import { formatPrompt, generate, InputError, type ActDtype } from '../src/index.ts';
import { App, kvFromSelects } from './app.ts';
import { $, intInput, numInput } from './dom.ts';

/** The ticked conditions in page order, comma-joined (generate's `condition`). */
export function conditionString(): string {
  const ticked = [...document.querySelectorAll<HTMLInputElement>('input[name=cond]')].filter((c) => c.checked).map((c) => c.value);
  if (!ticked.length) throw new InputError('settings', 'tick at least one condition (synth, cot, direct or noisy)');
  return ticked.join(',');
}

const rate = (n: number, ms: number) => (n > 0 && ms > 0 ? `${(n / (ms / 1000)).toFixed(1)} tok/s` : '–');

async function runGeneration(app: App): Promise<void> {
  const output = $('output');
  const stats = $('gen-stats');
  await app.run('generate', async (signal) => {
    const opts = {
      condition: conditionString(),
      temperature: numInput('temperature', 0, 100),
      topP: numInput('top-p', 0.000001, 1),
      seed: intInput('seed', Number.MIN_SAFE_INTEGER),
      maxTokens: intInput('max-tokens', 1),
      kv: kvFromSelects('kv-k', 'kv-v').spec,
    };
    const { lm, model } = app.model($<HTMLSelectElement>('dtype').value as ActDtype);
    const prompt = $<HTMLTextAreaElement>('prompt').value;
    output.textContent = '';
    output.dataset.state = 'running';
    output.setAttribute('aria-busy', 'true');
    stats.textContent = 'Reading the prompt…';
    const t0 = performance.now();
    let pieces = 0;
    try {
      for await (const ev of generate({ ...lm, model }, prompt, { ...opts, signal })) {
        if (ev.type === 'text') {
          // Keep the view pinned to the end unless the reader scrolled up.
          const pinned = output.scrollTop + output.clientHeight >= output.scrollHeight - 4;
          output.append(ev.text);
          if (pinned) output.scrollTop = output.scrollHeight;
          pieces++;
          stats.textContent = `generating… ${pieces} piece${pieces > 1 ? 's' : ''} in ${((performance.now() - t0) / 1000).toFixed(1)} s`;
        } else {
          const s = ev.stats;
          stats.textContent = `prompt ${s.promptTokens} tok, ${rate(s.promptTokens, s.promptMs)} · decode ${s.decodeTokens} tok, ` +
            `${rate(s.decodeTokens, s.decodeMs)} · ${s.stopReason.replace('_', ' ')}`;
          output.dataset.stopReason = s.stopReason;
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
  // Stop's button is disabled now: keep the keyboard user on the panel.
  if (document.activeElement === document.body || document.activeElement?.id === 'gen-stop') $('generate').focus();
}

/** The prompt as the model reads it, one token per item: id and text (whitespace shown as is). */
function showTokens(app: App): void {
  const list = $('tokens');
  const summary = $('tokens-summary');
  try {
    const lm = app.lm;
    if (!lm?.tokenizer) throw new InputError('tokens', 'this model has no tokenizer.json');
    const formatted = formatPrompt($<HTMLTextAreaElement>('prompt').value, conditionString(), { chatTemplate: lm.chatTemplate });
    const ids = lm.tokenizer.encode(formatted);
    const shown = ids.slice(0, 2000);
    list.replaceChildren(...shown.map((id) => {
      const li = document.createElement('li');
      const n = document.createElement('span');
      n.className = 'id';
      n.textContent = String(id);
      li.append(n, lm.tokenizer!.decode([id]));
      return li;
    }));
    summary.textContent = `${ids.length} token${ids.length === 1 ? '' : 's'}${ids.length > shown.length ? ` (the first ${shown.length} shown)` : ''}.`;
    app.clearError('generate');
  } catch (e) {
    app.showError(e, 'generate');
  }
}

async function copyOutput(app: App): Promise<void> {
  try {
    await navigator.clipboard.writeText($('output').textContent ?? '');
    $('gen-stats').textContent = 'Output copied.';
  } catch (e) {
    app.showError(new InputError('copy', `the browser did not allow copying (${(e as Error).message}); select the output and copy it by hand`), 'generate');
  }
}

export function initGeneratePanel(app: App): void {
  $('gen-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void runGeneration(app);
  });
  // Ctrl/Cmd+Enter in the prompt generates.
  $('prompt').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); $<HTMLFormElement>('gen-form').requestSubmit(); }
  });
  $('gen-stop').addEventListener('click', () => {
    $('gen-stats').textContent = 'Stopping…';
    app.stop();
  });
  $('copy-output').addEventListener('click', () => void copyOutput(app));
  $('show-tokens').addEventListener('click', () => showTokens(app));
  app.onChange(() => {
    $<HTMLButtonElement>('generate').disabled = app.job !== null || app.lm === null;
    $<HTMLButtonElement>('gen-stop').disabled = app.job !== 'generate';
    $<HTMLButtonElement>('show-tokens').disabled = app.lm === null;
    $<HTMLButtonElement>('copy-output').disabled = app.job === 'generate' || !$('output').textContent;
  });
}
