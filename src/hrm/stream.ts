// Streaming detokenisation that never emits a broken character. A byte-level BPE token can end in the middle of a
// UTF-8 sequence (one CJK character or emoji spans several tokens), and decoding it alone gives U+FFFD; the seed
// decodes one token at a time and so prints replacement characters. Here each push decodes the ids since a recent
// character boundary, emits what follows the text already emitted, and holds back a trailing run of U+FFFD until
// the next tokens complete it (or flush() gives up on it at the end).

/** What the streamer needs of a tokenizer (HrmTokenizer has it). */
export interface Detokenizer {
  decode(ids: readonly number[], opts?: { skipSpecialTokens?: boolean }): string;
}

const REPLACEMENT = 0xfffd;

export class TextStreamer {
  private readonly tokenizer: Detokenizer;
  private readonly skipSpecialTokens: boolean;
  /** The window: ids since the character boundary before the latest one (older ids were emitted and dropped). */
  private ids: number[] = [];
  /** Index in `ids` of the latest character boundary. */
  private start = 0;
  /** Characters of decode(ids) emitted so far. */
  private emitted = 0;

  /** skipSpecialTokens defaults to true (the seed's generate does the same). */
  constructor(tokenizer: Detokenizer, { skipSpecialTokens = true }: { skipSpecialTokens?: boolean } = {}) {
    this.tokenizer = tokenizer;
    this.skipSpecialTokens = skipSpecialTokens;
  }

  /** Add one token; returns the text it completes ('' while a character is still incomplete). */
  push(id: number): string {
    this.ids.push(id);
    const text = this.decode();
    let end = text.length;
    while (end > this.emitted && text.charCodeAt(end - 1) === REPLACEMENT) end--;
    const out = end > this.emitted ? text.slice(this.emitted, end) : '';
    this.emitted = Math.max(this.emitted, end);
    if (end === text.length) {
      // The text ends in a whole character, so ids.length is a boundary: slide the window to keep decodes short.
      // Everything up to the new start has been emitted; the window text up to it is re-decoded (not derived)
      // so that a decoder which treats a window's first token specially is measured the way it will decode.
      this.ids = this.ids.slice(this.start);
      this.start = this.ids.length;
      this.emitted = this.decode().length;
    }
    return out;
  }

  /** End of the stream: whatever is still held back (an incomplete character decodes to U+FFFD). Resets. */
  flush(): string {
    const text = this.ids.length > 0 ? this.decode() : '';
    const out = text.slice(this.emitted);
    this.ids = [];
    this.start = this.emitted = 0;
    return out;
  }

  private decode(): string {
    return this.tokenizer.decode(this.ids, { skipSpecialTokens: this.skipSpecialTokens });
  }
}
