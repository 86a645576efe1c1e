// `hrm-webgpu/refract`: what an app that scores KV configurations with REFRACT may rely on: the runner and the
// sweep, the Backend interface (for an engine of its own; `HrmBackend` is in the main entry, its options type is
// here), the four axes with their options and results, scores and bands, reports (JSON, text, HTML, compare,
// repeatability), the prompts and the corpus. The axes' inner steps (perturbations, needle placement, KLD
// accumulators, percentiles) and the CLI's helpers are not here: they change with the implementation.
// Re-exports only; the names and the reason for each are pinned in tests/package/api.test.ts.

/**
 * REFRACT's pieces: the runner and the sweep, backends, the four axes, scores, reports and their renderers, the
 * prompts and the corpus (`runRefract` and the report renderers are in the main entry too; `HrmBackend` is there
 * only).
 * @module hrm-webgpu/refract
 */
export { runRefract, type ProgressFn, type RunRefractOptions, type Stage } from './runner.ts';
export { ResilientBackend, type ResilientOptions } from './resilient.ts';
export type { HrmBackendOptions } from './hrm-backend.ts';
export {
  BackendCapabilityError, DEFAULTS, RefractError, type Backend, type CompletionOptions, type CompletionResult,
  type DecodeTokensOptions, type KLDResult, type KldOptions, type Metadata, type ModelMetadataOptions,
  type TokenizeOptions, type TrajectoryOptions, type TrajectoryResult,
} from './backend.ts';
export {
  DELTA_P_PERCENTILES, KLD_PERCENTILES, type KldProgress, type KldStatistics,
} from './axes/kld-stats.ts';
export {
  DEFAULT_REFERENCE_KV, KV_TYPES, parseKvConfig, type KvConfig, type KvSide,
} from '../hrm/kv-spec.ts';

// The axes.
export { runKld, kldToScore, type KldAxisOptions, type KldAxisResult, type NullableStats } from './axes/kld.ts';
export {
  runTrajectory, type TrajectoryAxisOptions, type TrajectoryAxisResult, type TrajectoryPromptRecord,
} from './axes/trajectory.ts';
export {
  buildRniahPrompt, DEFAULT_NEEDLE, DEFAULT_QUESTION, runRniah, type RniahAxisResult, type RniahCell,
  type RniahOptions,
} from './axes/rniah.ts';
export {
  DEFAULT_PERTURBATIONS, runPlad, type Perturbation, type PladAxisResult, type PladOptions, type PladRecord,
} from './axes/plad.ts';

// Scores and reports.
export {
  band, compositeScore, MIN_FLOOR, repeatabilityStats, type AxisScores, type Band, type CompositeScore,
  type RepeatabilityBand, type RepeatabilityStats, type ReportScores, type SpreadStats,
} from './score.ts';
export {
  parseReport, REFRACT_VERSION, REPORT_SCHEMA, toJsonString, type GtmBlock, type KldBlock, type PladBlock,
  type RefractReport, type RniahBlock,
} from './report/json.ts';
export { renderTextReport, type TextOptions } from './report/text.ts';
export { renderHtmlReport, type HtmlOptions } from './report/html.ts';
export {
  compareRows, renderCompareTable, renderRepeatability, type CompareInput, type CompareRow,
} from './report/compare.ts';

// Sweeps over KV configurations.
export {
  gridCandidates, kvBytesPerToken, renderSweepTable, runSweep, type SweepOptions, type SweepResult, type SweepRow,
  type SweepStore,
} from './sweep.ts';
export { renderSweepHtml } from './report/sweep-html.ts';

// What the axes read: the prompt set and the corpus.
export { parsePromptsJsonl, PROMPTS_V01, type Prompt } from './prompts.ts';
export {
  BROWN_DOCUMENTS, brownCorpus, DEFAULT_CORPUS_DOCUMENTS, DEFAULT_CORPUS_LABEL, defaultCorpus, defaultHaystack,
  type BrownOptions,
} from './corpus.ts';
