// The generation panel: prompt, conditions, sampling settings, dtype and KV cache; streams text into a
// fixed-height output and reports prompt and decode speed. Stop aborts through generate's signal.
import { generate } from '../src/hrm/generate.ts';
import type { ActDtype } from '../src/hrm/cache.ts';
import { InputError } from '../src/tensor/errors.ts';
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
      for await (const ev of generate(model, lm.tokenizer, prompt, { ...opts, chatTemplate: lm.chatTemplate, signal })) {
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
    } catch (e) {
      output.dataset.state = 'error';
      stats.textContent = '';
      throw e;
    } finally {
      output.setAttribute('aria-busy', 'false');
    }
  });
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
  $('gen-stop').addEventListener('click', () => app.stop());
  app.onChange(() => {
    $<HTMLButtonElement>('generate').disabled = app.job !== null || app.lm === null;
    $<HTMLButtonElement>('gen-stop').disabled = app.job !== 'generate';
  });
}
