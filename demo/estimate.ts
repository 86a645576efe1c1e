// How long a REFRACT run will take here, from the pace measured on this device (engine.ts: milliseconds per
// position of a causal pass and per decoded token): the whole run before it starts, and its time left as it goes
// (each stage's share of the estimate, scaled by the pace the run itself shows).
import type { Stage } from '../src/refract/index.ts';
import type { Pace } from './engine.ts';

/** What a REFRACT run in the panel does. */
export interface RunPlan {
  chunks: number;
  ctx: number;
  /** Trajectory prompts and tokens each (0 prompts: axis off). */
  trajPrompts: number;
  tokens: number;
  /** R-NIAH context length (0: off) and its answer tokens. */
  rniahLength: number;
  rniahTokens: number;
  pladPrompts: number;
  floor: boolean;
}

/** Positions of a bundled prompt with its condition tags (they run 20-60 tokens with the small BPE). */
const PROMPT_POSITIONS = 48;
/** R-NIAH's needle positions (0.1, 0.5, 0.9) and PLAD's perturbations plus the unperturbed prompt. */
const RNIAH_CELLS = 3;
const PLAD_CELLS = 5;
/** Above this many seconds the panel asks before it starts. */
export const WARN_SECONDS = 180;

/** Seconds each stage of the plan should take at `pace` (stages that do not run are absent). */
export function stageSeconds(p: RunPlan, pace: Pace): Partial<Record<Stage, number>> {
  const gen = (positions: number, tokens: number) => positions * pace.positionMs + tokens * pace.decodeMs;
  const traj = p.trajPrompts ? 2 * p.trajPrompts * gen(PROMPT_POSITIONS, p.tokens) : 0;
  const kld = 2 * p.chunks * gen(p.ctx, 0);
  // In the runner's order (RunClock counts the stages before the current one as done).
  const ms: Array<[Stage, number]> = [
    ['floor-trajectory', p.floor ? traj : 0], ['floor-kld', p.floor ? kld : 0], ['trajectory', traj], ['kld', kld],
    ['rniah', p.rniahLength ? 2 * RNIAH_CELLS * gen(p.rniahLength, p.rniahTokens) : 0],
    ['plad', p.pladPrompts ? 2 * p.pladPrompts * PLAD_CELLS * gen(PROMPT_POSITIONS, p.tokens) : 0],
  ];
  return Object.fromEntries(ms.filter(([, v]) => v > 0).map(([k, v]) => [k, v / 1000]));
}

/** Seconds as "9 s", "4 min", "2.5 h". */
export function secs(s: number): string {
  if (s < 90) return `${Math.max(1, Math.round(s))} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/** Plan seconds of a run's start that count as already measured at the plan's pace (see RunClock.left). */
const PRIOR_SECONDS = 20;
/** How far each new reading moves the smoothed finish time (the rest stays with the readings before it). */
const SMOOTHING = 0.25;

/**
 * Time left of a whole run: the estimate's unfinished share, scaled by how the run's pace compares with it. The
 * pace is smoothed, so that one fast or slow part does not swing the estimate (about 5 min, 72 s, then 4 min):
 * the measured pace counts as much as the share of the run it was measured on, against PRIOR_SECONDS of the
 * plan's own pace, and the finish time moves a quarter of the way to each new reading.
 */
export class RunClock {
  private readonly t0 = performance.now();
  private readonly total: number;
  private readonly done = new Map<Stage, number>();
  /** The smoothed finish, seconds from the start (null before the first reading). */
  private finish: number | null = null;

  constructor(private readonly stages: Partial<Record<Stage, number>>) {
    this.total = Object.values(stages).reduce((a, b) => a + b, 0);
  }

  /** Seconds left after `stage` reached `d` of `t` (earlier stages count as done). */
  left(stage: Stage, d: number, t: number): number {
    this.done.set(stage, t > 0 ? d / t : 0);
    const order = Object.keys(this.stages) as Stage[];
    // Stages run in the runner's order; those before this one are over.
    const at = order.indexOf(stage);
    let doneSecs = 0;
    order.forEach((s, i) => { doneSecs += this.stages[s]! * (i < at ? 1 : i === at ? this.done.get(s)! : 0); });
    const elapsed = (performance.now() - this.t0) / 1000;
    const prior = Math.min(PRIOR_SECONDS, this.total);
    const speed = (elapsed + prior) / (doneSecs + prior);
    const reading = elapsed + Math.max(0, (this.total - doneSecs) * speed);
    this.finish = this.finish === null ? reading : this.finish + SMOOTHING * (reading - this.finish);
    return Math.max(0, this.finish - elapsed);
  }
}
