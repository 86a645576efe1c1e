// A Backend that survives a lost GPU device in a long REFRACT run. Every axis is a sequence of backend calls,
// each one a finished unit (a prompt's decode, an R-NIAH cell's generation, a tokenization); KLD@D is one call
// over many chunks, so it carries its progress (KldProgress) and the new backend continues from the last
// finished chunk. When a call fails and the device is gone, the backend is rebuilt by `create` (new device,
// model reloaded), the run says so through `log`, and the call is redone (gpu/redo.ts, losses counted per run).
import { DeviceLostError } from '../errors.ts';
import { Redo } from '../gpu/redo.ts';
import { newKldProgress } from './axes/kld-stats.ts';
import type {
  Backend, CompletionOptions, CompletionResult, DecodeTokensOptions,
  KLDResult, KldOptions, Metadata, ModelMetadataOptions, TokenizeOptions, TrajectoryOptions, TrajectoryResult,
} from './backend.ts';

export interface ResilientOptions {
  /** Where recovery is reported (the CLI: stderr). */
  log?: (line: string) => void;
  /** Device losses tolerated in one run before the error is passed on (default 3). */
  maxRecoveries?: number;
}

export class ResilientBackend implements Backend {
  readonly name: string;
  private readonly redo: Redo<Backend>;
  /** Present where the backend it wraps has it (Backend.promptTokens). */
  readonly promptTokens?: Backend['promptTokens'];

  /** `first` is the backend to start with; `create` builds a fresh one (new device, model reloaded). */
  constructor(first: Backend, create: () => Promise<Backend>, o: ResilientOptions = {}) {
    this.name = first.name;
    this.redo = new Redo(first, {
      policy: { per: 'run', limit: o.maxRecoveries ?? 3 },
      lost: (e, b) => e instanceof DeviceLostError || b.deviceLost?.() === true,
      rebuild: create,
      onLoss: (l) => o.log?.(`GPU device lost during ${l.unit} (${(l.error as Error).message}); recreating the ` +
        `device and reloading the model, then continuing from the last finished unit (recovery ${l.recoveries})`),
    });
    if (first.promptTokens) this.promptTokens = (p) => this.call('prompt tokenization', (b) => b.promptTokens!(p));
  }

  /** Device losses recovered from so far. */
  get recoveries(): number {
    return this.redo.recoveries;
  }

  private call<T>(what: string, f: (b: Backend) => Promise<T>): Promise<T> {
    return this.redo.unit(what, f);
  }

  runCompletion(o: CompletionOptions): Promise<CompletionResult> {
    return this.call('a completion', (b) => b.runCompletion(o));
  }

  runCompletionTrajectory(o: TrajectoryOptions): Promise<TrajectoryResult> {
    return this.call('a trajectory decode', (b) => b.runCompletionTrajectory(o));
  }

  /** Chunks finished before a loss are kept: the retry continues from `resume.done`. */
  runKld(o: KldOptions): Promise<KLDResult> {
    const resume = o.resume ?? newKldProgress();
    return this.call('KLD@D', (b) => b.runKld({ ...o, resume }));
  }

  tokenizeToIds(o: TokenizeOptions): Promise<number[]> {
    return this.call('tokenization', (b) => b.tokenizeToIds(o));
  }

  modelMetadata(o: ModelMetadataOptions): Promise<Metadata> {
    return this.call('model metadata', (b) => b.modelMetadata(o));
  }

  decodeTokens(o: DecodeTokensOptions): Promise<string[]> {
    return this.call('token decoding', async (b) => (b.decodeTokens ? b.decodeTokens(o) : o.ids.map(String)));
  }

  deviceLost(): boolean {
    return false;
  }
}
