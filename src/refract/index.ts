// `hrm-webgpu/refract`: REFRACT in TypeScript, its axes, scores, reports, runner and sweep: everything except the
// model backend (`HrmBackend`, in the main entry; its options type is here) and the CLI. Re-exports only; its names are
// pinned in tests/package/api.test.ts.

/**
 * REFRACT's pieces: backends, corpora, prompts, the four axes, scores, reports and their renderers, the runner and
 * the sweep (`runRefract` and the report renderers are in the main entry too; `HrmBackend` is there only).
 * @module hrm-webgpu/refract
 */
export * from './backend.ts';
export * from '../hrm/kv-spec.ts';
export * from './prompts.ts';
export { BROWN_DOCUMENTS, DEFAULT_CORPUS_DOCUMENTS, DEFAULT_CORPUS_LABEL, brownCorpus, defaultCorpus, defaultHaystack,
  untagBrownDocument, untagSentence, type BrownOptions } from './corpus.ts';
export * from './score.ts';
export * from './diagnosis.ts';
export { PyRandom } from './pyrandom.ts';
export type { HrmBackendOptions } from './hrm-backend.ts';
export * from './axes/trajectory.ts';
export * from './axes/kld.ts';
export * from './axes/rniah.ts';
export * from './axes/plad.ts';
export * from './report/json.ts';
export { renderTextReport, type TextOptions } from './report/text.ts';
export { renderCompareTable, renderRepeatability, type CompareRow } from './report/compare.ts';
export { renderHtmlReport, esc, type HtmlOptions } from './report/html.ts';
export { runRefract, type RunRefractOptions, type ProgressFn, type Stage } from './runner.ts';
export { ResilientBackend, type ResilientOptions } from './resilient.ts';
export * from './sweep.ts';
export { renderSweepHtml } from './report/sweep-html.ts';
export { compareRows, fileStem, type CompareInput } from './report/compare.ts';
