// REFRACT in TypeScript: everything except the model backend (hrm-backend.ts) and the CLI.
export * from './backend.ts';
export * from '../hrm/kv-string.ts';
export * from './prompts.ts';
export { BROWN_DOCUMENTS, DEFAULT_CORPUS_DOCUMENTS, DEFAULT_CORPUS_LABEL, brownCorpus, defaultCorpus, defaultHaystack, untagBrownDocument, untagSentence, type BrownOptions } from './corpus.ts';
export * from './score.ts';
export * from './diagnosis.ts';
export { PyRandom } from './pyrandom.ts';
export * from './axes/trajectory.ts';
export * from './axes/kld.ts';
export * from './axes/rniah.ts';
export * from './axes/plad.ts';
export * from './report/json.ts';
export { renderTextReport, type TextOptions } from './report/text.ts';
export { renderCompareTable, renderRepeatability, type CompareRow } from './report/compare.ts';
export { renderHtmlReport, esc, type HtmlOptions } from './report/html.ts';
export { runRefract, type RunRefractOptions, type ProgressFn, type Stage } from './runner.ts';
