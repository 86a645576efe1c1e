// Data for train.py, made here where the tokenizer and REFRACT's prompt code live, so that train.py needs neither:
//   npx tsx tools/train-embedded/prepare.ts [--out .h200/train] [--seed 1234]
// Writes into --out:
//   brown.u16      every Brown document's token ids back to back (uint16 little-endian); vocab.json `documents`
//                  gives each one's name, offset, length and split (train / val: held out by document, seeded)
//   tasks.u16      the synthetic tasks' token pieces back to back, tasks.off.u32 their n + 1 offsets (uint32 LE);
//                  vocab.json `pools` says which pieces make an entry (needle: sentence, question, answer; kv: line,
//                  question, answer), for train and for eval (disjoint code words and descriptors)
//   vocab.json     special and condition ids, fixed strings' ids, the decode table (display, sentence ends),
//                  R-NIAH's default cells as REFRACT builds them (eval only), the forbidden needle's ids
// It checks that the pieces splice into the same ids the tokenizer gives the whole text (see checks.ts).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { HrmTokenizer } from '../../src/hrm/tokenizer.ts';
import { CONDITION_TOKENS, type Condition } from '../../src/hrm/prompt.ts';
import { BROWN_DOCUMENTS, brownCorpus } from '../../src/refract/corpus.ts';
import { DEFAULT_NEEDLE, DEFAULT_QUESTION, extractNeedleKeyword } from '../../src/refract/axes/rniah.ts';
import { Xoshiro128ss } from '../../src/hrm/sampling.ts';
import { FORBIDDEN_CODE, keyValues, needles, shuffle, splitVocabulary } from './pools.ts';
import { checkSplices, rniahCells } from './checks.ts';

const MODEL_DIR = new URL('../../models/hrm-text-brown-10m/', import.meta.url).pathname;
const { values: flags } = parseArgs({ options: { out: { type: 'string' }, seed: { type: 'string' } } });
const out = flags.out ?? '.h200/train';
const seed = Number(flags.seed ?? 1234);
if (!Number.isSafeInteger(seed)) throw new Error(`--seed must be an integer, got ${flags.seed}`);
const VAL_DOCUMENTS = 30;
const POOL = { needleTrain: 40000, needleEval: 1000, kvTrain: 40000, kvEval: 1000 };
const log = (msg: string) => console.log(`[prepare] ${msg}`);

const read = (name: string) => readFileSync(MODEL_DIR + name, 'utf8');
const modelConfig = JSON.parse(read('config.json'));
const tok = new HrmTokenizer(read('tokenizer.json'), {
  config: read('tokenizer_config.json'), modelConfig, where: MODEL_DIR + 'tokenizer.json',
});
const enc = (s: string) => tok.encode(s);

// Brown: one tokenization per document; train.py joins documents with `sep` ("\n\n", as brownCorpus does).
const t0 = Date.now();
const texts = await Promise.all(BROWN_DOCUMENTS.map((_, i) => brownCorpus({ start: i, documents: 1 })));
const docIds = texts.map(enc);
const valNames = new Set(shuffle([...BROWN_DOCUMENTS], new Xoshiro128ss(seed)).slice(0, VAL_DOCUMENTS));
let offset = 0;
const documents = BROWN_DOCUMENTS.map((name, i) => {
  const d = { name, offset, length: docIds[i].length, split: valNames.has(name) ? 'val' : 'train' };
  offset += docIds[i].length;
  return d;
});
const count = (split: string) => documents.filter((d) => d.split === split).reduce((s, d) => s + d.length, 0);
log(`Brown: ${documents.length} documents, ${offset} tokens (train ${count('train')}, val ${count('val')}) ` +
  `in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

// Synthetic task pools. Words come from the whole corpus; train and eval halves are disjoint.
const words = new Set(texts.flatMap((t) => t.toLowerCase().split(/[^a-z]+/)));
const vocab = splitVocabulary(words, seed + 1);
const pieces: number[][] = [];
const pools: Record<string, { fields: string[]; first: number; count: number; descriptor?: number[] }> = {};
function addPool(name: string, fields: string[], entries: string[][], descriptors?: string[]): void {
  pools[name] = { fields, first: pieces.length, count: entries.length };
  for (const e of entries) for (const s of e) pieces.push(enc(s));
  if (descriptors) {
    const index = new Map<string, number>();
    pools[name].descriptor = descriptors.map((d) => index.get(d) ?? (index.set(d, index.size), index.size - 1));
  }
}
const nTrain = needles(vocab.train, POOL.needleTrain, seed + 2);
const nEval = needles(vocab.eval, POOL.needleEval, seed + 3);
// Pieces carry the whitespace that precedes them in a prompt, so that they splice at token boundaries.
const needleFields = (n: (typeof nTrain)[number]) => [` ${n.sentence}`, `\n\n${n.question}`, ` ${n.answer}`];
addPool('needle_train', ['sentence', 'question', 'answer'], nTrain.map(needleFields), nTrain.map((n) => n.descriptor));
addPool('needle_eval', ['sentence', 'question', 'answer'], nEval.map(needleFields), nEval.map((n) => n.descriptor));
const kvFields = (k: ReturnType<typeof keyValues>[number]) => [`\n${k.line}`, `\n\n${k.question}`, ` ${k.answer}`];
addPool('kv_train', ['line', 'question', 'answer'], keyValues(vocab.train, POOL.kvTrain, seed + 4).map(kvFields));
addPool('kv_eval', ['line', 'question', 'answer'], keyValues(vocab.eval, POOL.kvEval, seed + 5).map(kvFields));
const forbidden = enc(` ${FORBIDDEN_CODE}`);
const poolTokens = pieces.reduce((n, p) => n + p.length, 0);
log(`pools: ${Object.entries(pools).map(([k, p]) => `${k} ${p.count}`).join(', ')}; ${poolTokens} tokens`);

const id = (t: string) => tok.idOf(t);
const single = (s: string) => {
  const ids = enc(s);
  if (ids.length !== 1) throw new Error(`${JSON.stringify(s)} is ${ids.length} tokens, expected one`);
  return ids[0];
};
const decode = Array.from({ length: modelConfig.vocab_size as number }, (_, i) => tok.decode([i]));
const spec = {
  special: {
    bos: tok.bosTokenId, eos: tok.eosTokenId, pad: tok.padTokenId,
    im_start: id('<|im_start|>'), im_end: id('<|im_end|>'), space: single(' '),
  },
  conditions: Object.fromEntries(
    (Object.keys(CONDITION_TOKENS) as Condition[]).map((c) => [c, [id(CONDITION_TOKENS[c])]]),
  ),
  sep: enc('\n\n'),
  strings: {
    kv_header: enc('Keys and values:'),
    copy_suffixes: ['Repeat the text above.', 'Copy the passage above exactly.', 'Write the text above again.']
      .map((s) => enc(`\n\n${s}`)),
  },
};
// 'synth,cot' (REFRACT's and the CLI's default) is two tags: its ids are the two tokens in order.
spec.conditions['synth,cot'] = [id(CONDITION_TOKENS.synth), id(CONDITION_TOKENS.cot)];

const trainStream = documents.flatMap((d, i) => (d.split === 'train' ? [...spec.sep, ...docIds[i]] : []))
  .slice(spec.sep.length);
const report = checkSplices(tok, trainStream, nTrain.slice(0, 300), pools, pieces, spec, decode);
log(`splice check: ${report.summary}`);
if (!report.ok) throw new Error(`splice check failed: ${report.summary}`);
const rniah = await rniahCells(tok, [1024, 2048, 4096]);
const cellList = rniah.map((c) => `${c.length}@${c.position}: ${c.ids.length} ids`).join(', ');
log(`R-NIAH default cells (eval only): ${cellList}`);
const leaks = pieces.filter((s) => s.some((_, i) => forbidden.every((f, j) => s[i + j] === f))).length;
if (leaks) throw new Error(`${leaks} training pieces contain the default needle's code ${FORBIDDEN_CODE}`);

mkdirSync(out, { recursive: true });
const u16 = (xs: number[]) => Buffer.from(Uint16Array.from(xs).buffer);
const brownBytes = u16(docIds.flat());
const offsets = new Uint32Array(pieces.length + 1);
pieces.forEach((p, i) => { offsets[i + 1] = offsets[i] + p.length; });
writeFileSync(`${out}/brown.u16`, brownBytes);
writeFileSync(`${out}/tasks.u16`, u16(pieces.flat()));
writeFileSync(`${out}/tasks.off.u32`, Buffer.from(offsets.buffer));
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
writeFileSync(`${out}/vocab.json`, JSON.stringify({
  format: 'hrm-webgpu train-embedded 1', seed, tokenizer_sha256: sha(read('tokenizer.json')),
  vocab_size: modelConfig.vocab_size,
  ...spec, documents, pools, decode,
  forbidden: { code: FORBIDDEN_CODE, code_ids: forbidden, needle_ids: enc(` ${DEFAULT_NEEDLE}`) },
  rniah: {
    needle: DEFAULT_NEEDLE, question: DEFAULT_QUESTION, keyword: extractNeedleKeyword(DEFAULT_NEEDLE),
    condition: 'synth,cot', cells: rniah,
  },
  splice_check: report,
}));
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
log(`wrote ${out}/: brown.u16 ${mb(brownBytes.length)}, tasks.u16 ${mb(offsets[pieces.length] * 2)}, vocab.json`);
