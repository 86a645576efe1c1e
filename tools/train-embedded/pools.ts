// The strings of the synthetic tasks train.py builds: needle sentences with their questions and answers, and
// key-value lines. Everything is generated here (seeded) and tokenized by prepare.ts, so train.py only splices
// token pieces. Train and eval pools draw their code words and descriptors from disjoint halves, and R-NIAH's
// default needle (its code APRICOT-7-BLUE, its descriptor "rare paint color") is never generated.
import { Xoshiro128ss } from '../../src/hrm/sampling.ts';
import { DEFAULT_NEEDLE, extractNeedleKeyword } from '../../src/refract/axes/rniah.ts';

/** The default needle's code word parts and descriptor: none of them is ever a training code or descriptor. */
export const FORBIDDEN_CODE = extractNeedleKeyword(DEFAULT_NEEDLE);
export const FORBIDDEN_WORDS = new Set(FORBIDDEN_CODE.split('-').filter((w) => /^[A-Z]+$/.test(w)));
export const FORBIDDEN_DESCRIPTOR = 'rare paint color';

const ADJECTIVES = [
  'rare', 'secret', 'hidden', 'special', 'official', 'chosen', 'favorite', 'main', 'original', 'final', 'private',
  'unusual', 'winning', 'current', 'first', 'new', 'old', 'lucky', 'unique', 'preferred', 'reserved', 'daily',
  'emergency', 'backup', 'annual', 'local', 'northern', 'western', 'quiet', 'bright',
];
const NOUNS = [
  'paint color', 'password', 'code word', 'project name', 'ship name', 'city', 'flower', 'secret ingredient',
  'meeting place', 'team name', 'access code', 'book title', 'river', 'mountain', 'street name', 'recipe',
  'song title', 'island', 'horse', 'star', 'gemstone', 'fabric', 'spice', 'bird', 'tree', 'stone', 'key phrase',
  'code name', 'village', 'lake', 'planet', 'instrument', 'dance', 'festival', 'harbor', 'engine', 'tool',
  'signal', 'product name', 'company name',
];

/** (sentence, question) templates; {c} is the code, {d} the descriptor. The first is R-NIAH's own form. */
const TEMPLATES: Array<[string, string]> = [
  ['Note: {c} is the {d} featured in this article.', 'Q: What is the {d} featured in this article?\nA:'],
  ['Remember that the {d} is {c}.', 'Q: What is the {d}?\nA:'],
  ['The {d} mentioned in this text is {c}.', 'Q: Which {d} is mentioned in this text?\nA:'],
  ['Important: the {d} for this document is {c}.', 'Q: What is the {d} for this document?\nA:'],
  ['{c} is the {d}.', 'Q: What is the {d}?\nA:'],
  ['The {d} of this story is {c}, as noted here.', 'Q: What is the {d} of this story?\nA:'],
];
/** The passkey template: the descriptor is always "pass key", the code a number. */
const PASSKEY: [string, string] = [
  'The pass key is {c}. Remember it. {c} is the pass key.', 'Q: What is the pass key?\nA:',
];

export interface NeedleText { sentence: string; question: string; answer: string; descriptor: string }
export interface KvText { line: string; question: string; answer: string }

export interface Vocabulary { codeWords: string[]; valueWords: string[]; descriptors: string[] }

/** Shuffle in place with the generator (Fisher-Yates). */
export function shuffle<T>(xs: T[], g: Xoshiro128ss): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(g.nextFloat() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

/** Train and eval vocabularies: Brown's alphabetic words (3-8 letters) and the descriptors, split in halves. */
export function splitVocabulary(words: Iterable<string>, seed: number): { train: Vocabulary; eval: Vocabulary } {
  const g = new Xoshiro128ss(seed);
  const lower = [...new Set([...words].filter((w) => /^[a-z]{3,8}$/.test(w)))].sort();
  const codes = shuffle(lower.map((w) => w.toUpperCase()).filter((w) => !FORBIDDEN_WORDS.has(w)), g);
  const values = shuffle([...lower], g);
  const all = ADJECTIVES.flatMap((a) => NOUNS.map((n) => `${a} ${n}`));
  const descriptors = shuffle(all.filter((d) => d !== FORBIDDEN_DESCRIPTOR), g);
  const half = <T>(xs: T[], k: 0 | 1) => (k === 0 ? xs.slice(0, xs.length >> 1) : xs.slice(xs.length >> 1));
  const part = (k: 0 | 1): Vocabulary => ({
    codeWords: half(codes, k), valueWords: half(values, k), descriptors: half(descriptors, k),
  });
  return { train: part(0), eval: part(1) };
}

const pick = <T>(xs: readonly T[], g: Xoshiro128ss): T => xs[Math.floor(g.nextFloat() * xs.length)];
const int = (lo: number, hi: number, g: Xoshiro128ss) => lo + Math.floor(g.nextFloat() * (hi - lo + 1));

/** A code like MAPLE-7-RIVER (most), MAPLE-RIVER, MAPLE-472 or 7-MAPLE-3. */
function code(v: Vocabulary, g: Xoshiro128ss): string {
  const u = g.nextFloat();
  const w = () => pick(v.codeWords, g);
  if (u < 0.7) return `${w()}-${int(1, 99, g)}-${w()}`;
  if (u < 0.8) return `${w()}-${w()}`;
  if (u < 0.9) return `${w()}-${int(100, 9999, g)}`;
  return `${int(1, 9, g)}-${w()}-${int(1, 9, g)}`;
}

/** n needles; one in six is a numeric passkey. Never the default needle's code or descriptor. */
export function needles(v: Vocabulary, n: number, seed: number): NeedleText[] {
  const g = new Xoshiro128ss(seed);
  const out: NeedleText[] = [];
  while (out.length < n) {
    const passkey = g.nextFloat() < 1 / 6;
    const [s, q] = passkey ? PASSKEY : pick(TEMPLATES, g);
    const c = passkey ? String(int(10000, 9999999, g)) : code(v, g);
    const d = passkey ? 'pass key' : pick(v.descriptors, g);
    if (c === FORBIDDEN_CODE || d === FORBIDDEN_DESCRIPTOR) continue;
    const fill = (t: string) => t.replaceAll('{c}', c).replaceAll('{d}', d);
    out.push({ sentence: fill(s), question: fill(q), answer: c, descriptor: d });
  }
  return out;
}

/** n key-value lines (`KEY-12: value`), a question about the key and the value as the answer. */
export function keyValues(v: Vocabulary, n: number, seed: number): KvText[] {
  const g = new Xoshiro128ss(seed);
  return Array.from({ length: n }, () => {
    // A word and a number: ~1M keys, so two lines of one sample rarely share a key.
    const key = `${pick(v.codeWords, g)}-${int(1, 99, g)}`;
    const value = g.nextFloat() < 0.8 ? pick(v.valueWords, g) : String(int(100, 99999, g));
    return { line: `${key}: ${value}`, question: `Q: What is the value of ${key}?\nA:`, answer: value };
  });
}
