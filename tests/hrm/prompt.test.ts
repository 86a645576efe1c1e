// The prompt format against the seed's format_prompt, condition lists, and a checkpoint's chat_template.
import { describe, expect, it } from 'vitest';
import { CONDITION_TOKENS, type Condition, formatPrompt, parseConditions } from '../../src/hrm/prompt.ts';
import { FormatError, InputError } from '../../src/errors.ts';

/** The seed's format_prompt, transcribed. */
function seedFormatPrompt(text: string, condition = 'synth,cot'): string {
  const prefix = condition.split(',').map((p) => CONDITION_TOKENS[p.trim() as Condition]).join('');
  return `<|im_start|>${prefix}${text}<|im_end|>`;
}

describe('prompt format', () => {
  const names = Object.keys(CONDITION_TOKENS) as Condition[];

  it('reproduces the seed format_prompt for every condition, pair and the default', () => {
    const specs = [...names, ...names.flatMap((a) => names.filter((b) => b !== a).map((b) => `${a},${b}`)),
      'synth,cot,noisy,direct'];
    for (const spec of specs) expect(formatPrompt('What is 2+2?', spec),
      spec).toBe(seedFormatPrompt('What is 2+2?', spec));
    expect(formatPrompt('x')).toBe('<|im_start|><|quad_end|><|object_ref_end|>x<|im_end|>');
    expect(formatPrompt('x', ['noisy', 'direct'])).toBe(seedFormatPrompt('x', 'noisy,direct'));
  });

  it('puts the text in verbatim: whitespace, markup and template syntax are not touched', () => {
    for (const t of ['  lead and trail  \n', '<b>&amp;</b>', "{{ messages }} {% if x %}'\"", '', '<|im_end|>'])
      expect(formatPrompt(t, 'direct')).toBe(seedFormatPrompt(t, 'direct'));
  });

  it('parses condition lists, tolerating whitespace, and names the accepted ones on error', () => {
    expect(parseConditions('synth,cot')).toEqual(['synth', 'cot']);
    expect(parseConditions('  noisy ,\tdirect ')).toEqual(['noisy', 'direct']);
    expect(formatPrompt('x', ' synth , cot ')).toBe(seedFormatPrompt('x', 'synth,cot'));
    expect(() => parseConditions('synth,reasoning')).toThrow(InputError);
    expect(() => parseConditions('synth,reasoning'))
      .toThrow(/^\[parseConditions\] unknown condition "reasoning".*accepted: direct, cot, noisy, synth/);
    expect(() => parseConditions('')).toThrow(/--condition is empty/);
    expect(() => parseConditions('  ')).toThrow(InputError);
    expect(() => parseConditions('synth,,cot')).toThrow(/empty condition at position 2/);
    expect(() => parseConditions('toString')).toThrow(/unknown condition/);
    expect(() => formatPrompt('x', ['bogus' as Condition])).toThrow(InputError);
  });

  it("renders a checkpoint's chat_template with the message, the generation prompt and the condition tokens", () => {
    const chatTemplate = '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ condition_tokens }}{{ m.content }}'
      + '<|im_end|>\n{% endfor %}'
      + '{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}{{ conditions | join("+") }}';
    expect(formatPrompt('hello', 'synth,cot', { chatTemplate }))
      .toBe('<|im_start|>user\n<|quad_end|><|object_ref_end|>hello<|im_end|>\n<|im_start|>assistant\nsynth+cot');
    expect(formatPrompt('hi', 'cot',
      { chatTemplate: '{{ bos_token }}{{ messages[0].content }}{{ eos_token }}',
      bosToken: '<s>' })).toBe('<s>hi<|box_end|>');
    expect(() => formatPrompt('x', 'cot',
      { chatTemplate: '{% for %}' })).toThrow(/^\[formatPrompt\] chat_template does not parse/);
    expect(() => formatPrompt('x', 'cot', { chatTemplate: "{{ raise_exception('no') }}" })).toThrow(FormatError);
  });
});
