// HRM-Text's prompt: `<|im_start|>` + condition tokens + text + `<|im_end|>`. The model is a prefix-LM: the whole
// envelope is the bidirectional block and generation continues after `<|im_end|>`. The envelope is written as a
// Jinja chat template so that a checkpoint whose tokenizer_config.json ships a `chat_template` can replace it.
import { Template } from '@huggingface/jinja';
import { FormatError, InputError } from '../errors.ts';

/** The condition tags and the special token each one adds (seed: _CONDITION_TOKEN). */
export const CONDITION_TOKENS = {
  direct: '<|object_ref_start|>',
  cot: '<|object_ref_end|>',
  noisy: '<|quad_start|>',
  synth: '<|quad_end|>',
} as const;

export type Condition = keyof typeof CONDITION_TOKENS;

/** Reasoning prompts (the seed's default); use 'direct' with few-shot examples for short answers. */
export const DEFAULT_CONDITION = 'synth,cot';

/**
 * The default template. Variables: messages (an optional system message, then one user message),
 * condition_tokens (the tags' tokens, concatenated), conditions (the tag names), add_generation_prompt, bos_token,
 * eos_token. HRM has no roles and no assistant header: every message's content goes, in order and separated by a
 * blank line, into the one bidirectional block, and the answer follows `<|im_end|>` directly (so a system text,
 * e.g. R-NIAH's haystack, is part of what the model reads; add_generation_prompt adds nothing).
 */
export const HRM_PROMPT_TEMPLATE =
  "{{- '<|im_start|>' + condition_tokens -}}" +
  "{%- for message in messages -%}" +
  "{%- if not loop.first -%}{{- '\n\n' -}}{%- endif -%}" +
  "{{- message['content'] -}}" +
  '{%- endfor -%}' +
  "{{- '<|im_end|>' -}}";

/** "synth, cot" -> ['synth', 'cot']: comma-separated tags, whitespace around each ignored, order kept. */
export function parseConditions(spec: string): Condition[] {
  const accepted = Object.keys(CONDITION_TOKENS).join(', ');
  if (typeof spec !== 'string' || spec.trim() === '') {
    throw new InputError('parseConditions',
      `--condition is empty; give one or more of ${accepted}, comma-separated (e.g. "synth,cot")`);
  }
  return spec.split(',').map((part, i) => {
    const name = part.trim();
    if (!Object.hasOwn(CONDITION_TOKENS, name)) {
      const what = name === '' ? `empty condition at position ${i + 1}` : `unknown condition ${JSON.stringify(name)}`;
      throw new InputError('parseConditions', `${what} in --condition ${JSON.stringify(spec)}; accepted: ${accepted}`);
    }
    return name as Condition;
  });
}

/** Concatenated condition tokens, in order: ['synth', 'cot'] -> '<|quad_end|><|object_ref_end|>'. */
export function conditionTokens(conditions: readonly Condition[]): string {
  return conditions.map((c) => CONDITION_TOKENS[c]).join('');
}

export interface FormatPromptOptions {
  /** A checkpoint's chat_template (tokenizer_config.json); the HRM envelope when absent or null. */
  chatTemplate?: string | null;
  /** A system message before the user's (a checkpoint template gets it as role "system"). Empty = none. */
  system?: string | null;
  /** Passed to a custom template as bos_token / eos_token. */
  bosToken?: string;
  eosToken?: string;
}

const templates = new Map<string, Template>();

function compile(source: string): Template {
  let t = templates.get(source);
  if (!t) {
    try {
      t = new Template(source);
    } catch (e) {
      throw new FormatError('formatPrompt', `chat_template does not parse: ${(e as Error).message}`);
    }
    if (templates.size >= 16) templates.clear();
    templates.set(source, t);
  }
  return t;
}

/**
 * The prompt string for `text` under `condition` (a spec like "synth,cot" or parsed tags):
 * `<|im_start|>` + conditionTokens + text + `<|im_end|>` with the default template, and
 * `<|im_start|>` + conditionTokens + system + "\n\n" + text + `<|im_end|>` with a system message.
 */
export function formatPrompt(text: string, condition: string | readonly Condition[] = DEFAULT_CONDITION,
  opts: FormatPromptOptions = {}): string {
  if (typeof text !== 'string') throw new InputError('formatPrompt', `text must be a string, got ${typeof text}`);
  if (opts.system !== undefined && opts.system !== null && typeof opts.system !== 'string') {
    throw new InputError('formatPrompt', `system must be a string, got ${typeof opts.system}`);
  }
  const conditions = typeof condition === 'string' ? parseConditions(condition) : [...condition];
  for (const c of conditions) {
    if (!Object.hasOwn(CONDITION_TOKENS, c)) throw new InputError('formatPrompt',
      `unknown condition ${JSON.stringify(c)}; accepted: ${Object.keys(CONDITION_TOKENS).join(', ')}`);
  }
  const template = compile(opts.chatTemplate ?? HRM_PROMPT_TEMPLATE);
  try {
    return template.render({
      messages: [...(opts.system ? [{ role: 'system', content: opts.system }] : []), { role: 'user', content: text }],
      add_generation_prompt: true,
      condition_tokens: conditionTokens(conditions),
      conditions,
      bos_token: opts.bosToken ?? '<|im_start|>',
      eos_token: opts.eosToken ?? '<|box_end|>',
    });
  } catch (e) {
    // Includes the template's own raise_exception(...) (the Jinja runtime provides it).
    throw new FormatError('formatPrompt', `chat_template failed to render: ${(e as Error).message}`);
  }
}
