// The tokenizer against ids from the Rust `tokenizers` library; its special tokens, checks and errors; NFC as of
// Unicode 9. (The prompt format and streaming have their own files: prompt.test.ts, stream.test.ts.)
import { describe, expect, it } from 'vitest';
import { HrmTokenizer, nfcUnicode9 } from '../../src/hrm/tokenizer.ts';
import { formatPrompt } from '../../src/hrm/prompt.ts';
import { FormatError, InputError } from '../../src/errors.ts';
import { rng } from '../../testkit/helpers/seeded.ts';
import { readBrown, ref, tok } from '../helpers/brown-tokenizer.ts';

// More cases, with ids from HF tokenizers 0.23.2 (the Rust crate through its Node bindings), where
// @huggingface/tokenizers alone differs or could: marks and letters newer than Unicode 9 (the crate's NFC tables),
// combining marks after special tokens (normalised apart from them), spaces before punctuation (no clean-up), U+0085
// and U+FEFF.
const RUST_EXTRA: { text: string; ids: number[]; decoded?: string }[] = [
  { text: '\u1df6\u1dcf8', ids: [173, 131, 130, 173, 131, 253, 39] }, // class 232 then 220: not reordered
  { text: '\u{105d2}\u0307', ids: [188, 254, 261, 256, 152, 245] }, // Todhri letter + dot: not composed to U+105C9
  { text: '\u{11382}\u{113c9}', ids: [188, 255, 252, 240, 188, 255, 253, 247] }, // Tulu-Tigalari: not composed
  { text: '\u{16d67}\u{16d67}', ids: [188, 260, 129, 116, 188, 260, 129, 116] }, // Kirat Rai: not composed
  { text: 'a\u0301\u0316', ids: [143, 110, 152, 260], decoded: '\u00e1\u0316' }, // old marks: reordered, composed
  { text: '<|im_end|>\u0338', ids: [7, 152, 132] }, // not composed with the token's '>' into U+226F
  { text: 'x \u0338<|im_start|>', ids: [103, 236, 152, 132, 6] },
  { text: "Hi , there . ok ! it 's", ids: [55, 88, 236, 27, 541, 236, 29, 277, 90, 236, 16, 355, 1311, 98] },
  { text: 'a\u0085b\ufeffc', ids: [80, 142, 243, 81, 187, 135, 139, 82] },
];

const SPECIALS = ['<|PAD|>', '<|direct|>', '<|cot|>', '<|noisy|>', '<|synth|>', '<|endoftext|>', '<|im_start|>',
  '<|im_end|>',
  '<|object_ref_start|>', '<|object_ref_end|>', '<|box_start|>', '<|box_end|>', '<|quad_start|>', '<|quad_end|>'];

describe('HrmTokenizer against the Rust reference', () => {
  it.each(ref.plain.map((e, i) => [i, JSON.stringify(e.text).slice(0, 40),
    e] as const))('plain %i %s: ids, NFC, decode', (_i, _name, e) => {
    expect(nfcUnicode9(e.text)).toBe(e.nfc);
    expect(tok.encode(e.text)).toEqual(e.ids);
    expect(tok.decode(e.ids)).toBe(e.decoded);
  });

  it.each(ref.formatted.map((e) => [e.condition, e] as const))('formatted prompt (%s): template and ids', (_c, e) => {
    expect(formatPrompt(e.text, e.condition)).toBe(e.formatted);
    expect(tok.encode(formatPrompt(e.text, e.condition))).toEqual(e.ids);
    expect(tok.decode(e.ids)).toBe(e.formatted);
    expect(tok.decode(e.ids, { skipSpecialTokens: true })).toBe(e.text);
  });

  it('decodes every prefix of a multi-byte string as Rust does (U+FFFD for an incomplete sequence)', () => {
    const { ids, decodes } = ref.prefix_decodes;
    expect(decodes.length).toBe(ids.length + 1);
    for (let i = 0; i <= ids.length; i++) expect(tok.decode(ids.slice(0, i)), `prefix ${i}`).toBe(decodes[i]);
  });

  it.each(RUST_EXTRA.map((e) => [JSON.stringify(e.text), e] as const))('extra Rust case %s', (_n, e) => {
    expect(tok.encode(e.text)).toEqual(e.ids);
    expect(tok.decode(e.ids)).toBe(e.decoded ?? e.text);
  });
});

describe('HrmTokenizer', () => {
  it('has the special tokens in HRM-Text order from id 0, and bos/eos/pad from config.json', () => {
    SPECIALS.forEach((t, id) => {
      expect(tok.idOf(t)).toBe(id);
      expect(tok.tokenOf(id)).toBe(t);
      expect(tok.isSpecial(id)).toBe(true);
    });
    expect(tok.isSpecial(495)).toBe(false);
    expect(tok.vocabSize).toBe(2048);
    expect([tok.bosTokenId, tok.eosTokenId, tok.padTokenId]).toEqual([6, 11, 5]);
    expect(tok.eosTokenIds).toEqual([11]);
    expect(tok.chatTemplate).toBeUndefined();
  });

  it('takes bos/eos/pad from tokenizer_config.json when config.json has none, and config.json first', () => {
    const t = new HrmTokenizer(JSON.parse(readBrown('tokenizer.json')),
      { config: JSON.parse(readBrown('tokenizer_config.json')) });
    expect([t.bosTokenId, t.eosTokenId, t.padTokenId]).toEqual([6, 11, 5]);
    const u = HrmTokenizer.fromJson(readBrown('tokenizer.json'), { eos_token: { content: '<|im_end|>' } },
      { eos_token_id: [11, 7] });
    expect(u.eosTokenIds).toEqual([11, 7]);
    expect(u.bosTokenId).toBeNull();
    const v = HrmTokenizer.fromJson(readBrown('tokenizer.json'), { chat_template: '{{ messages[0].content }}' });
    expect(v.chatTemplate).toBe('{{ messages[0].content }}');
  });

  it('maps literal special tokens in text to their ids, anywhere, but not look-alikes', () => {
    expect(tok.encode('<|im_start|><|im_end|>')).toEqual([6, 7]);
    expect(tok.encode('a<|box_end|>b')).toEqual([...tok.encode('a'), 11, ...tok.encode('b')]);
    expect(tok.encode(' <|im_end|> ')).toEqual([236, 7, 236]);
    expect(tok.encode('<|IM_END|>')).not.toContain(7);
    expect(tok.encode('<|im_end|')).not.toContain(7);
    expect(tok.encode('hi', { addSpecialTokens: true })).toEqual(tok.encode('hi')); // no post-processor
  });

  it('skips special tokens on request only', () => {
    const ids = [6, 12, ...tok.encode('The jury said'), 7, 11];
    expect(tok.decode(ids)).toBe('<|im_start|><|quad_start|>The jury said<|im_end|><|box_end|>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('The jury said');
    expect(tok.decode([6, 7], { skipSpecialTokens: true })).toBe('');
  });

  it('round-trips text: decode(encode(t)) = NFC(t)', () => {
    const r = rng(11);
    const pool = [...'abcXYZ 019\'.,;!?-\n\r\t  éèüñßøå中文字日本語한국어ïΩЖ'].concat(['👍🏽', '🎉', '👩‍👩‍👧', 'e\u0301', '\r\n',
      '<|im_end|>', '<|quad_end|>']);
    const texts = ref.plain.map((e) => e.text);
    for (let k = 0; k < 300; k++) {
      let s = '';
      for (let n = 1 + Math.floor(r() * 40); n > 0; n--) s += pool[Math.floor(r() * pool.length)];
      texts.push(s);
    }
    for (const t of texts) expect(tok.decode(tok.encode(t)), JSON.stringify(t)).toBe(nfcUnicode9(t));
  });

  it('handles empty input and never cleans up spaces before punctuation', () => {
    expect(tok.encode('')).toEqual([]);
    expect(tok.decode([])).toBe('');
    expect(tok.decode(tok.encode('a , b . c'))).toBe('a , b . c');
  });

  it('rejects unknown ids and tokens, and malformed files, with clear errors', () => {
    expect(() => tok.decode([1, 2048])).toThrow(InputError);
    expect(() => tok.decode([1, 2048])).toThrow(/^\[decode\] id 2048 at index 1 is not in the vocabulary \[0, 2048\)/);
    expect(() => tok.decode([-1])).toThrow(InputError);
    expect(() => tok.decode([1.5])).toThrow(InputError);
    expect(() => tok.idOf('<|nope|>')).toThrow(/^\[idOf\] "<\|nope\|>" is not a token/);
    expect(() => tok.tokenOf(99999)).toThrow(InputError);
    expect(() => new HrmTokenizer('{not json')).toThrow(FormatError);
    expect(() => new HrmTokenizer('{}')).toThrow(/no "model" section/);
    expect(() => HrmTokenizer.fromJson(readBrown('tokenizer.json'),
      { eos_token: '<|missing|>' })).toThrow(/eos_token "<\|missing\|>" is not in the vocabulary/);
    expect(() => HrmTokenizer.fromJson(readBrown('tokenizer.json'), {},
      { eos_token_id: 5000 })).toThrow(/eos_token_id 5000 is outside the vocabulary/);
  });

  it('checks the vocabulary at load against the model, naming tokenizer.json', () => {
    const json = () => JSON.parse(readBrown('tokenizer.json'));
    const where = 'm/tokenizer.json';
    const load = (j: object, vocab = 2048) => () => new HrmTokenizer(j, { modelConfig: { vocab_size: vocab }, where });
    expect(load(json(), 1024)).toThrow(new RegExp('^\\[HrmTokenizer\\] m/tokenizer\\.json: token "[^"]+" has id '
      + '(1\\d{3}|20[0-4]\\d), outside the model\'s vocab_size 1024 \\(config\\.json\\); the tokenizer does not '
      + 'belong to this model$'));
    const str = json(); str.model.vocab['Ġthe'] = '7';
    expect(load(str)).toThrow(/m\/tokenizer\.json: token "Ġthe" has id "7", not a non-negative integer/);
    const neg = json(); neg.model.vocab['Ġthe'] = -3;
    expect(load(neg)).toThrow(/token "Ġthe" has id -3/);
    const dup = json(); dup.model.vocab['Ġthe'] = dup.model.vocab['Ġof'];
    expect(load(dup)).toThrow(/m\/tokenizer\.json: tokens "(Ġthe|Ġof)" and "(Ġthe|Ġof)" share id \d+/);
    const added = json(); added.added_tokens.push({ id: 2048, content: '<x>', special: true, single_word: false,
      lstrip: false, rstrip: false, normalized: false });
    expect(load(added)).toThrow(/token "<x>" has id 2048, outside the model's vocab_size 2048/);
    expect(load(json())()).toBeInstanceOf(HrmTokenizer);
  });

  it('loads and checks a vocabulary of 151 936 tokens (Qwen\'s; the 1B\'s 65 536 overflowed a browser worker)', () => {
    // The Brown vocabulary padded with tokens no text contains, as bench/chrome/ckpt.ts pads it to the 1B's size.
    const n = 151_936;
    const j = JSON.parse(readBrown('tokenizer.json'));
    for (let id = Object.keys(j.model.vocab).length; id < n; id++) j.model.vocab[`<r${id}>`] = id;
    const big = new HrmTokenizer(j, { modelConfig: { vocab_size: n } });
    const text = ref.plain[0].text;
    expect(big.encode(text)).toEqual(tok.encode(text));
    expect(big.decode([n - 1])).toBe(`<r${n - 1}>`);
    expect(() => new HrmTokenizer(j, { modelConfig: { vocab_size: n - 1 } }))
      .toThrow(`token "<r${n - 1}>" has id ${n - 1}, outside the model's vocab_size ${n - 1}`);
  });
});

describe('nfcUnicode9', () => {
  it('is NFC for text of Unicode 9 and older', () => {
    for (const s of ['e\u0301', 'a\u0316\u0301', '\u1100\u1161\u11a8', 'A\u030a\u0301', 'Å', 'ﬁ',
      '']) expect(nfcUnicode9(s)).toBe(s.normalize('NFC'));
  });
  it('leaves code points newer than Unicode 9 alone and normalises around them', () => {
    expect(nfcUnicode9('\u1df6\u1dcf')).toBe('\u1df6\u1dcf');
    expect('\u1df6\u1dcf'.normalize('NFC')).toBe('\u1dcf\u1df6'); // what the engine alone does
    expect(nfcUnicode9('e\u0301\u{105d2}\u0307e\u0301')).toBe('\u00e9\u{105d2}\u0307\u00e9');
    expect(nfcUnicode9('\u{105c9}')).toBe('\u{105c9}');
  });
});
