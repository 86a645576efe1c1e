// HRM-Text's tokenizer: byte-level BPE from a checkpoint's tokenizer.json, run by @huggingface/tokenizers and
// corrected where that library and the Rust `tokenizers` crate (which trained and serves the model) disagree:
//   1. NFC. The crate normalises with unicode-normalization-alignments, whose tables are Unicode 9.0; JavaScript
//      engines use their own, newer Unicode (Node 20: 17.0). So the crate leaves the marks and precomposed letters
//      assigned since 9.0 alone, while String.prototype.normalize reorders and composes them. `nfcUnicode9` treats
//      those code points as inert starters, as the crate does (they are unassigned to it).
//   2. decode([]) throws in the library; it is '' here.
//   3. The library cleans up spaces before punctuation on decode unless tokenizer_config says otherwise; the crate
//      never does. We clean up only when tokenizer_config.json asks for it explicitly (as transformers would).
//   4. Unknown ids decode silently to '' in the library; here they are an InputError.
//   5. The library accepts any vocabulary (string or repeated ids, ids past the model's embedding table) and
//      fails, if at all, mid-generation; here the vocabulary is checked at construction.
// No file access: callers pass the JSON files' contents (strings or parsed objects).
import { Tokenizer, Normalizer, NFCNormalizer, SequenceNormalizer } from '@huggingface/tokenizers';
import { FormatError, InputError } from '../errors.ts';

/**
 * Code points that take part in canonical normalisation in Unicode 17 but were unassigned in Unicode 9.0: marks
 * and letters with a canonical decomposition or a nonzero combining class (Unicode 10..17), and the new letters
 * those decompositions are made of. Found by comparing the Rust crate (tokenizers 0.23) with
 * String.prototype.normalize over every code point, each alone, after a letter, and next to marks of combining
 * class 1, 220, 230 and 240.
 */
const NEWER_THAN_UNICODE_9: ReadonlyArray<readonly [number, number]> = [
  [0x7fd, 0x7fd], [0x897, 0x89f], [0x8ca, 0x8d3], [0x9fe, 0x9fe], [0xc3c, 0xc3c], [0xd3b, 0xd3c], [0xeba, 0xeba],
  [0x1715, 0x1715], [0x1abf, 0x1add], [0x1ae0, 0x1aeb], [0x1df6, 0x1dfa], [0xa82c, 0xa82c],
  [0x105c9, 0x105c9], [0x105d2, 0x105d2], [0x105da, 0x105da], [0x105e4, 0x105e4], [0x10d24, 0x10d27],
  [0x10d69, 0x10d6d], [0x10eab, 0x10eac], [0x10efa, 0x10efb], [0x10efd, 0x10eff], [0x10f46, 0x10f50],
  [0x10f82, 0x10f85], [0x11070, 0x11070], [0x1133b, 0x1133b], [0x11382, 0x11385], [0x1138b, 0x1138b],
  [0x1138e, 0x1138e], [0x11390, 0x11391], [0x113b8, 0x113b8], [0x113bb, 0x113bb], [0x113c2, 0x113c2],
  [0x113c5, 0x113c5], [0x113c7, 0x113c9], [0x113ce, 0x113d0], [0x1145e, 0x1145e], [0x11839, 0x1183a],
  [0x11930, 0x11930], [0x11935, 0x11935], [0x11938, 0x11938], [0x1193d, 0x1193e], [0x11943, 0x11943],
  [0x119e0, 0x119e0], [0x11a34, 0x11a34], [0x11a47, 0x11a47], [0x11a99, 0x11a99], [0x11d42, 0x11d42],
  [0x11d44, 0x11d45], [0x11d97, 0x11d97], [0x11f41, 0x11f42], [0x1611e, 0x16129], [0x1612f, 0x1612f],
  [0x16d63, 0x16d63], [0x16d67, 0x16d6a], [0x16ff0, 0x16ff1], [0x1e08f, 0x1e08f], [0x1e130, 0x1e136],
  [0x1e2ae, 0x1e2ae], [0x1e2ec, 0x1e2ef], [0x1e4ec, 0x1e4ef], [0x1e5ee, 0x1e5ef], [0x1e6e3, 0x1e6e3],
  [0x1e6e6, 0x1e6e6], [0x1e6ee, 0x1e6ef], [0x1e6f5, 0x1e6f5],
];

const hex = (c: number) => `\\u{${c.toString(16)}}`;
const NEWER_CLASS = NEWER_THAN_UNICODE_9.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join('');
const NEWER_RE = new RegExp(`[${NEWER_CLASS}]`, 'u');
const NEWER_RE_G = new RegExp(`[${NEWER_CLASS}]`, 'gu');

/**
 * NFC as the Rust crate computes it: String.prototype.normalize('NFC') on the runs between code points newer than
 * Unicode 9, which stay as they are. An unassigned code point is a starter that composes with nothing, so it
 * blocks reordering and composition across it: NFC(a + x + b) = NFC(a) + x + NFC(b).
 */
export function nfcUnicode9(text: string): string {
  if (!NEWER_RE.test(text)) return text.normalize('NFC');
  let out = '';
  let last = 0;
  for (const m of text.matchAll(NEWER_RE_G)) {
    out += text.slice(last, m.index).normalize('NFC') + m[0];
    last = m.index + m[0].length;
  }
  return out + text.slice(last).normalize('NFC');
}

class Unicode9Nfc extends Normalizer {
  constructor() {
    super({ type: 'NFC' });
  }
  override normalize(text: string): string {
    return nfcUnicode9(text);
  }
}

/** The parts of tokenizer_config.json read here; the rest is passed to the library as is. */
export interface TokenizerConfigJson {
  bos_token?: string | { content: string } | null;
  eos_token?: string | { content: string } | null;
  pad_token?: string | { content: string } | null;
  chat_template?: string | Array<{ name: string; template: string }> | null;
  clean_up_tokenization_spaces?: boolean;
  [key: string]: unknown;
}

/**
 * The keys of config.json read here: special-token ids (they win over tokenizer_config.json's token strings) and
 * vocab_size.
 */
export interface SpecialTokenIds {
  /** The model's embedding rows: every id of the vocabulary must be below it. */
  vocab_size?: number;
  bos_token_id?: number | null;
  eos_token_id?: number | number[] | null;
  pad_token_id?: number | null;
}

export interface HrmTokenizerOptions {
  /** tokenizer_config.json, text or parsed (null/undefined: none). */
  config?: string | TokenizerConfigJson | Record<string, unknown> | null;
  /** config.json (only its *_token_id keys and vocab_size are read). */
  modelConfig?: SpecialTokenIds;
  /** The tokenizer.json path or URL, for messages (default 'tokenizer.json'). */
  where?: string;
}

/** Ids of the vocabulary and added tokens must be distinct non-negative integers below the model's vocab_size. */
function checkVocab(json: Record<string, unknown>, where: string, modelVocab: number | undefined): void {
  const model = json.model as { vocab?: unknown };
  // Built without push(...): spread arguments live on the stack, and a vocabulary of 65 536 tokens overflows a
  // browser worker's (Chrome's worker holds fewer than 65 536 arguments, its page about 120 000, below Qwen's 151 936).
  let entries: Array<[string, unknown]> = [];
  if (model.vocab !== undefined) {
    if (typeof model.vocab !== 'object' || model.vocab === null) throw new FormatError('HrmTokenizer',
      `${where}: model.vocab is not an object`);
    // Unigram vocabularies are [token, score] lists (the id is the position); BPE and WordPiece map token -> id.
    entries = Array.isArray(model.vocab)
      ? model.vocab.map((e, i): [string, unknown] => [String(Array.isArray(e) ? e[0] : e), i])
      : Object.entries(model.vocab);
  }
  for (const t of Array.isArray(json.added_tokens) ?
    json.added_tokens as Array<{ id?: unknown; content?: unknown }> : []) entries.push([String(t.content), t.id]);
  const byId = new Map<number, string>();
  for (const [token, id] of entries) {
    if (!Number.isInteger(id) || (id as number) < 0) throw new FormatError('HrmTokenizer',
      `${where}: token ${JSON.stringify(token)} has id ${JSON.stringify(id)}, not a non-negative integer`);
    const other = byId.get(id as number);
    if (other !== undefined && other !== token) throw new FormatError('HrmTokenizer',
      `${where}: tokens ${JSON.stringify(other)} and ${JSON.stringify(token)} share id ${id}`);
    byId.set(id as number, token);
    if (modelVocab !== undefined && (id as number) >= modelVocab) {
      throw new FormatError('HrmTokenizer',
        `${where}: token ${JSON.stringify(token)} has id ${id}, outside the model's vocab_size ${modelVocab} ` +
        '(config.json); the tokenizer does not belong to this model');
    }
  }
}

function parseJson<T>(what: string, src: string | T): T {
  if (typeof src !== 'string') return src;
  try {
    return JSON.parse(src) as T;
  } catch (e) {
    throw new FormatError('HrmTokenizer', `${what} is not valid JSON: ${(e as Error).message}`);
  }
}

const tokenContent = (t: TokenizerConfigJson['bos_token']) => (t == null ? undefined : typeof t === 'string' ?
  t : t.content);

export class HrmTokenizer {
  private readonly tok: Tokenizer;
  private readonly vocab: Map<string, number>;
  private readonly specialIds: ReadonlySet<number>;
  private readonly cleanUp: boolean;
  /** The tokenizer.json path or URL, for messages. */
  readonly where: string;
  /** Number of ids: largest id in the vocabulary (added tokens included) + 1. */
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  /** Generation stops at any of these (config.json may list several). */
  readonly eosTokenIds: readonly number[];
  readonly padTokenId: number | null;
  /** tokenizer_config.json's chat_template (the default one when it holds several), if any. */
  readonly chatTemplate: string | undefined;

  constructor(tokenizerJson: string | object, opts: HrmTokenizerOptions = {}) {
    const where = (this.where = opts.where ?? 'tokenizer.json');
    const json = parseJson<Record<string, unknown>>(where, tokenizerJson as string | Record<string, unknown>);
    const config = parseJson<TokenizerConfigJson>('tokenizer_config.json',
      (opts.config ?? {}) as string | TokenizerConfigJson);
    if (typeof json !== 'object' || json === null || typeof json.model !== 'object' || json.model === null) {
      throw new FormatError('HrmTokenizer', `${where} has no "model" section`);
    }
    checkVocab(json, where, opts.modelConfig?.vocab_size);
    this.cleanUp = config.clean_up_tokenization_spaces === true;
    try {
      this.tok = new Tokenizer(json, { ...config, clean_up_tokenization_spaces: this.cleanUp });
    } catch (e) {
      throw new FormatError('HrmTokenizer', `${where}: ${(e as Error).message}`);
    }
    this.replaceNfc();
    this.vocab = this.tok.get_vocab(true);
    let maxId = -1;
    for (const id of this.vocab.values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;
    this.specialIds = new Set([...this.tok.get_added_tokens_decoder()].filter(([, t]) => t.special).map(([id]) => id));

    const fromConfig = (key: 'bos_token' | 'eos_token' | 'pad_token') => {
      const content = tokenContent(config[key]);
      if (content === undefined) return null;
      const id = this.vocab.get(content);
      if (id === undefined) throw new FormatError('HrmTokenizer',
        `tokenizer_config.json ${key} ${JSON.stringify(content)} is not in the vocabulary`);
      return id;
    };
    const mc = opts.modelConfig ?? {};
    const eos = mc.eos_token_id ?? fromConfig('eos_token');
    this.bosTokenId = mc.bos_token_id ?? fromConfig('bos_token');
    this.eosTokenIds = eos === null ? [] : Array.isArray(eos) ? [...eos] : [eos];
    this.padTokenId = mc.pad_token_id ?? fromConfig('pad_token');
    for (const [name, id] of [['bos', this.bosTokenId], ['pad', this.padTokenId],
      ...this.eosTokenIds.map((i) => ['eos', i] as const)] as const) {
      if (id !== null && !(Number.isInteger(id) && id >= 0 && id < this.vocabSize)) {
        throw new FormatError('HrmTokenizer',
          `${name}_token_id ${id} is outside the vocabulary [0, ${this.vocabSize})`);
      }
    }
    const ct = config.chat_template;
    this.chatTemplate = typeof ct === 'string' ? ct
      : Array.isArray(ct) ? ct.find((t) => t.name === 'default')?.template : undefined;
  }

  /** Convenience: `new HrmTokenizer(tokenizerJson, { config, modelConfig })`. */
  static fromJson(tokenizerJson: string | object, config?: HrmTokenizerOptions['config'],
    modelConfig?: SpecialTokenIds): HrmTokenizer {
    return new HrmTokenizer(tokenizerJson, { config, modelConfig });
  }

  /** The first eos id, or null. */
  get eosTokenId(): number | null {
    return this.eosTokenIds[0] ?? null;
  }

  /** text -> ids. Special tokens written literally in the text (`<|im_start|>`) become their ids. */
  encode(text: string, { addSpecialTokens = false }: { addSpecialTokens?: boolean } = {}): number[] {
    if (typeof text !== 'string') throw new InputError('encode', `text must be a string, got ${typeof text}`);
    if (text.length === 0) return [];
    return this.tok.encode(text, { add_special_tokens: addSpecialTokens }).ids;
  }

  /** ids -> text; an incomplete UTF-8 sequence decodes to U+FFFD (as Rust's from_utf8_lossy). */
  decode(ids: ArrayLike<number>, { skipSpecialTokens = false }: { skipSpecialTokens?: boolean } = {}): string {
    const list = Array.from(ids);
    for (let i = 0; i < list.length; i++) {
      const id = list[i];
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize || this.tok.id_to_token(id) === undefined) {
        const range = `[0, ${this.vocabSize})`;
        throw new InputError('decode', `id ${id} at index ${i} is not in the vocabulary ${range} of ${this.where}`);
      }
    }
    const kept = skipSpecialTokens ? list.filter((id) => !this.specialIds.has(id)) : list;
    if (kept.length === 0) return '';
    return this.tok.decode(kept, { skip_special_tokens: false, clean_up_tokenization_spaces: this.cleanUp });
  }

  /** Id of a token string (vocabulary entry or added token, e.g. `<|im_end|>`). */
  idOf(token: string): number {
    const id = this.vocab.get(token);
    if (id === undefined) throw new InputError('idOf', `${JSON.stringify(token)} is not a token of this tokenizer`);
    return id;
  }

  /** Token string of an id (byte-level form, e.g. 'Ġthe'). */
  tokenOf(id: number): string {
    const t = Number.isInteger(id) ? this.tok.id_to_token(id) : undefined;
    if (t === undefined) throw new InputError('tokenOf', `id ${id} is not in the vocabulary [0, ${this.vocabSize})`);
    return t;
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  /** Swap the library's NFC (the engine's Unicode) for the crate's (Unicode 9.0). */
  private replaceNfc(): void {
    const swap = (n: Normalizer | null) => (n instanceof NFCNormalizer ? new Unicode9Nfc() : n);
    this.tok.normalizer = swap(this.tok.normalizer);
    if (this.tok.normalizer instanceof SequenceNormalizer) {
      this.tok.normalizer.normalizers = this.tok.normalizer.normalizers.map(swap);
    }
  }
}
