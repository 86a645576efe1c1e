// generate's decode steps (generate.ts): replayed from a captured step (decode.ts) one attention reach at a time,
// or recorded one by one. Either may run the persistent MLP (DeviceOptions.kernels.decodeStep); a step whose
// barrier ran out is redone here on the per-op path, with every step after it.
import { BarrierRanOutError, InputError } from '../errors.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { HrmCache } from './cache.ts';
import type { HrmModel } from './model.ts';
import type { Sampler } from './sampling.ts';
import type { GenerateStats } from './generate.ts';
import { DecodeGraph, greedySteps } from './decode.ts';
import { mlpRuns, takeFlag } from '../kernels/persist/mlp.ts';
import { persistGrid, persistRanOut } from '../kernels/plan/persist.ts';

/** A tensor's values as f32, the tensor freed. */
export async function readAndDispose(t: Tensor): Promise<Float32Array> {
  try { return await t.readF32(); } finally { t.dispose(); }
}

/**
 * The next token of each decode step: replayed (greedy chained on the GPU, or sampled from logits) or recorded. A
 * graph replays within its attention's reach (decode.ts); when decoding leaves it, the next graph is built at the
 * position reached, after the old one's queued steps are read, and the greedy chain goes on from the last token.
 * Steps run persistent forwards (ForwardOptions.persistent) and read the barrier's flag with their output: where it
 * is set, the Gpu goes per-op for good (persistRanOut) and decoding goes on from the step that ran out, the cache
 * rewound to it, from the last token returned, so the tokens are the per-op path's.
 */
export class Stepper {
  private graph: DecodeGraph | null = null;
  private chain: AsyncGenerator<number> | null = null;
  /** Steps still to return (the cache's room or the caller's count). */
  private left: number;
  /** The first graph's dispatches, or why steps are recorded; after a step was redone per op, the redo's. */
  path: GenerateStats['decodePath'];
  /** Steps returned whose MLPs ran on the persistent kernel. */
  persistentSteps = 0;

  constructor(private readonly model: HrmModel, private readonly cache: HrmCache, private readonly sampler: Sampler,
    private readonly disabled: string | null, private last: number, steps: number) {
    this.left = Math.min(steps, cache.capacity - cache.offset);
    this.path = pathOf(this.disabled ?? (this.left < 1 ? 'no decode step' : this.build()));
  }

  /** The graph of the reach from the cache's offset (and its greedy chain over the steps it can take), or why not. */
  private build(): DecodeGraph | { reason: string } {
    const built = DecodeGraph.tryBuild(this.model, this.cache, this.sampler.greedy ? 'greedy' : 'logits');
    this.graph = built instanceof DecodeGraph ? built : null;
    if (this.graph?.mode === 'greedy') {
      this.chain = greedySteps(this.graph, this.last, Math.min(this.left, this.graph.end - this.cache.offset));
    }
    return built;
  }

  /** The step in flight, which close() waits for (a stopped caller stops waiting for it, close() does not). */
  private pending: Promise<number> | null = null;

  /** The token after the last one returned (or the prefill's). */
  next(): Promise<number> {
    this.pending = this.step();
    return this.pending;
  }

  private async step(): Promise<number> {
    if (this.left < 1) throw new InputError('generate', 'asked for more decode steps than the cache holds');
    this.last = await this.take();
    this.left--;
    return this.last;
  }

  private async take(): Promise<number> {
    try {
      return await this.takeOne();
    } catch (e) {
      if (!(e instanceof BarrierRanOutError)) throw e;
      await this.redoFrom(e.position);
      return this.take();
    }
  }

  private async takeOne(): Promise<number> {
    // Past the graph's reach (for a greedy chain: it has returned its last queued token): the next reach's graph,
    // or recorded steps where it cannot be built (the cache's last positions).
    if (this.graph && !this.chain && this.cache.offset >= this.graph.end) this.nextReach();
    if (this.chain) {
      let r = await this.chain.next();
      if (r.done) {
        this.nextReach();
        if (this.chain) r = await this.chain.next();
      }
      if (!r.done) return this.counted(r.value);
    }
    if (this.graph) {
      this.graph.feed(this.last);
      return this.counted(this.sampler.sample(await this.graph.nextLogits()));
    }
    const gpu = this.model.gpu;
    const runs = mlpRuns(gpu);
    const logits = await readAndDispose(this.model.forward([this.last], this.cache, { mask: 'causal',
      persistent: true }));
    if (mlpRuns(gpu) === runs) return this.sampler.sample(logits);
    // The step ran the persistent MLP: its flag, read after its logits (a sync of its own; the graph's steps read
    // it with their output).
    if (await takeFlag(gpu)) throw new BarrierRanOutError('decode step', this.cache.offset - 1);
    this.persistentSteps++;
    return this.sampler.sample(logits);
  }

  /** A token of the graph's step, counted where the step ran persistent. */
  private counted(token: number): number {
    if (this.graph?.persistent) this.persistentSteps++;
    return token;
  }

  /**
   * The step at `pos` ran out of spins at a grid barrier: every step queued after it has finished (the greedy chain
   * waits for its queue as it ends). The Gpu takes the per-op path from now on, the flag is cleared, the cache
   * rewound to `pos`, and the graph rebuilt there (per op; none where graphs are disabled) to go on from the last
   * token returned.
   */
  private async redoFrom(pos: number): Promise<void> {
    const gpu = this.model.gpu;
    // Once per Gpu: another generation on it may have met the same run-out first.
    if (persistGrid(gpu) > 0) persistRanOut(gpu, 'the persistent MLP');
    await takeFlag(gpu);
    this.chain = null;
    this.graph?.dispose();
    this.graph = null;
    this.cache.rewind(pos);
    this.path = pathOf(this.disabled ?? this.build());
  }

  /** Free the graph whose reach decoding has left (every step it queued has been read) and build the next one. */
  private nextReach(): void {
    this.chain = null;
    this.graph?.dispose();
    this.graph = null;
    this.build();
  }

  /** Wait for steps still queued, then free the graph. */
  async close(): Promise<void> {
    await this.pending?.catch(() => {});
    await this.chain?.return(undefined);
    this.graph?.dispose();
  }
}

/** decodePath of a graph, or of the reason steps are recorded. */
function pathOf(built: DecodeGraph | { reason: string } | string): GenerateStats['decodePath'] {
  return built instanceof DecodeGraph ? { replayed: built.size }
    : { recorded: typeof built === 'string' ? built : built.reason };
}
