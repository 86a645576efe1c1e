// R-NIAH's haystack reaches the model: formatPrompt renders a system message with the user's (in the HRM envelope,
// or as role "system" for a checkpoint's chat template), and the HRM backend's prompt ids hold the needle (the
// embedded model's tokenizer; no GPU needed for the ids).
import { describe, expect, it } from 'vitest';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadConfig, loadTokenizer, type LoadedModel } from '../../src/hrm/load.ts';
import { formatPrompt } from '../../src/hrm/prompt.ts';
import { HrmBackend } from '../../src/refract/hrm-backend.ts';
import { buildRniahPrompt, DEFAULT_NEEDLE, DEFAULT_QUESTION, defaultHaystack } from '../../src/refract/index.ts';
import { InputError } from '../../src/errors.ts';
import { BROWN } from '../../testkit/helpers/fixtures.ts';

describe('formatPrompt with a system message', () => {
  it('HRM envelope: condition tokens, system, a blank line, the user text, one <|im_end|>', () => {
    expect(formatPrompt('Q?', 'noisy', { system: 'HAY' })).toBe('<|im_start|><|quad_start|>HAY\n\nQ?<|im_end|>');
    expect(formatPrompt('Q?', 'synth,cot',
      { system: 'HAY' })).toBe('<|im_start|><|quad_end|><|object_ref_end|>HAY\n\nQ?<|im_end|>');
    expect(formatPrompt('Q?', 'noisy', { system: '' })).toBe(formatPrompt('Q?', 'noisy'));
    expect(formatPrompt('Q?', 'noisy', { system: null })).toBe('<|im_start|><|quad_start|>Q?<|im_end|>');
  });
  it("a checkpoint's chat template gets the system message as role \"system\" before the user's", () => {
    const t = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}";
    expect(formatPrompt('Q?', 'noisy', { system: 'HAY', chatTemplate: t })).toBe('<system>HAY<user>Q?');
  });
  it('a non-string system is an InputError', () => {
    expect(() => formatPrompt('Q?', 'noisy', { system: 3 as unknown as string })).toThrow(InputError);
  });
});

describe("the HRM backend's R-NIAH prompt ids", () => {
  it('hold the haystack, the needle (its keyword tokens too) and the question, in one envelope', async () => {
    const files = dirFiles(BROWN);
    const config = await loadConfig(files);
    const { tokenizer, chatTemplate } = await loadTokenizer(files, config);
    // Only prompt rendering is exercised: no weights, no GPU.
    const backend = new HrmBackend({ name: 'brown', config, tokenizer, chatTemplate } as unknown as LoadedModel,
      { condition: 'noisy' });
    const hay = (await defaultHaystack()).slice(0, 400);
    const { system, user } = buildRniahPrompt(hay, DEFAULT_NEEDLE, DEFAULT_QUESTION, 0.5);
    const ids = backend.promptIds({ prompt: user, system });
    const text = tokenizer!.decode(ids);
    expect(text).toBe(`<|im_start|><|quad_start|>${system}\n\n${DEFAULT_QUESTION}<|im_end|>`);
    expect(text).toContain(DEFAULT_NEEDLE);
    const kw = tokenizer!.encode(' APRICOT-7-BLUE');
    expect(ids.some((_, i) => kw.every((t, j) => ids[i + j] === t))).toBe(true);
    // Without the template the system text is still there, before the prompt.
    expect(tokenizer!.decode(backend.promptIds({ prompt: user, system,
      applyChatTemplate: false }))).toBe(`${system}\n\n${user}`);
  });
});
