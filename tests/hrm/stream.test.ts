// Streaming detokenisation: TextStreamer's chunks against one decode of all ids, and the Rust library's prefix
// decodes.
import { describe, expect, it } from 'vitest';
import { TextStreamer } from '../../src/hrm/stream.ts';
import { rng } from '../../testkit/helpers/seeded.ts';
import { ref, tok } from '../helpers/brown-tokenizer.ts';

describe('TextStreamer', () => {
  const stripFffd = (s: string) => s.replace(/\ufffd+$/u, '');

  it('emits each prefix decode minus its held-back U+FFFD, and the whole string in the end', () => {
    const { ids, decodes } = ref.prefix_decodes;
    const s = new TextStreamer(tok);
    const chunks = ids.map((id) => s.push(id));
    chunks.push(s.flush());
    for (let i = 0; i < ids.length; i++) {
      expect(chunks[i], `after id ${i}`).toBe(stripFffd(decodes[i + 1]).slice(stripFffd(decodes[i]).length));
      expect(chunks[i]).not.toContain('\ufffd');
    }
    expect(chunks.join('')).toBe(decodes[ids.length]);
    expect(chunks.at(-1)).toBe('');
  });

  it('streams every reference text and prompt exactly, with no U+FFFD, keeping the decode window short', () => {
    let longest = 0;
    const spy = { decode: (ids: readonly number[],
      o?: { skipSpecialTokens?: boolean }) => ((longest = Math.max(longest, ids.length)), tok.decode(ids, o)) };
    const texts = [...ref.plain.map((e) => e.nfc), ...ref.formatted.map((e) => e.formatted)];
    const all = texts.join(' ');
    for (const t of [...texts, all]) {
      const s = new TextStreamer(spy, { skipSpecialTokens: false });
      const chunks = tok.encode(t).map((id) => s.push(id));
      chunks.push(s.flush());
      expect(chunks.join(''), JSON.stringify(t)).toBe(t);
      for (const c of chunks) expect(c).not.toContain('\ufffd');
    }
    expect(tok.encode(all).length).toBeGreaterThan(300);
    expect(longest).toBeLessThan(16); // a window between character boundaries, not the whole history
  });

  it('equals one decode of all ids for random ids (broken UTF-8 included), special tokens skipped or not', () => {
    const r = rng(5);
    for (const skipSpecialTokens of [true, false]) {
      for (let k = 0; k < 200; k++) {
        const ids = Array.from({ length: 1 + Math.floor(r() * 30) }, () => Math.floor(r() * tok.vocabSize));
        const s = new TextStreamer(tok, { skipSpecialTokens });
        const out = ids.map((id) => s.push(id)).join('') + s.flush();
        expect(out, JSON.stringify(ids)).toBe(tok.decode(ids, { skipSpecialTokens }));
      }
    }
  });

  it('skips special tokens by default, flushes an unfinished character as U+FFFD, and resets', () => {
    const s = new TextStreamer(tok);
    expect([6, 12].map((id) => s.push(id)).join('')).toBe('');
    const zhong = tok.encode('中'); // three byte tokens
    expect(zhong.length).toBe(3);
    expect(s.push(zhong[0])).toBe('');
    expect(s.flush()).toBe('\ufffd');
    expect(s.push(tok.idOf('<|im_end|>'))).toBe('');
    expect(tok.encode('ab').map((id) => s.push(id)).join('')).toBe('ab');
  });
});
