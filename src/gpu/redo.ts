// "Device lost: rebuild and redo" for long runs made of units (a REFRACT backend call, a bench section): when a unit
// fails and the device is gone, the resource it ran on (a backend with its model, a Gpu) is rebuilt and the unit
// runs again from its start; units carry or rebuild what they need. Kept apart from the runs, which differ only in
// what they rebuild, what they say and how many losses they take (RedoPolicy): refract/resilient.ts and bench's
// DeviceKeeper.
import { DeviceLostError, InputError } from '../errors.ts';

/**
 * How many device losses are recovered from. 'run': `limit` in all, and the next one is thrown as it came (the run
 * ends there). 'unit': `limit` redos of each unit, and the next loss gives the unit up with a DeviceLostError
 * naming it, the resource rebuilt first so that the units after it still run.
 */
export interface RedoPolicy {
  per: 'run' | 'unit';
  limit: number;
}

/** A device loss the policy handles. */
export interface Loss {
  unit: string;
  error: unknown;
  /** The attempt it cost (1 for the first run of the unit). */
  attempt: number;
  /** Losses recovered from so far in the run, this one included unless the unit is given up. */
  recoveries: number;
  /** The unit is given up after the rebuild (policy 'unit', its redos spent). */
  giveUp: boolean;
}

export interface RedoOptions<R> {
  policy: RedoPolicy;
  /** Whether `e`, thrown by a unit's work on `r`, means the device is gone (whatever the failing call reported). */
  lost(e: unknown, r: R): boolean;
  /** A fresh resource in place of the lost one; a failure is thrown as the unit's error. */
  rebuild(lost: R): Promise<R>;
  /** Before each attempt of a unit (1, then 2 after a loss, ...): fault injection, tests. */
  attempt?(unit: string, n: number, r: R): void;
  /** Each loss the policy handles, before the rebuild. */
  onLoss?(loss: Loss): void;
  /** After the rebuild, when the unit is about to be redone. */
  onRebuilt?(loss: Loss): void;
}

export class Redo<R> {
  /** Losses recovered from so far (units redone). */
  recoveries = 0;

  constructor(private current: R, private readonly o: RedoOptions<R>) {
    const { per, limit } = o.policy;
    if (per !== 'run' && per !== 'unit') {
      throw new InputError('redo', `policy.per must be 'run' or 'unit', got ${String(per)}`);
    }
    if (!(Number.isInteger(limit) && limit >= 0)) {
      throw new InputError('redo', `policy.limit must be an integer >= 0, got ${limit}`);
    }
  }

  /** The resource in use now (a rebuilt one after each loss). */
  get resource(): R {
    return this.current;
  }

  /** Runs `f` on the current resource, redone on a rebuilt one after a device loss as the policy allows. */
  async unit<T>(name: string, f: (r: R) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const r = this.current;
      this.o.attempt?.(name, attempt, r);
      try {
        return await f(r);
      } catch (e) {
        if (!this.o.lost(e, r)) throw e;
        const { per, limit } = this.o.policy;
        if (per === 'run' && this.recoveries >= limit) throw e;
        const giveUp = per === 'unit' && attempt > limit;
        if (!giveUp) this.recoveries++;
        const loss: Loss = { unit: name, error: e, attempt, recoveries: this.recoveries, giveUp };
        this.o.onLoss?.(loss);
        this.current = await this.o.rebuild(r);
        if (giveUp) {
          const why = `the GPU device was lost ${times(attempt)}; gave the unit up (${firstLine(e)})`;
          throw new DeviceLostError(name, why);
        }
        this.o.onRebuilt?.(loss);
      }
    }
  }
}

/** The first line of an error's message: what a one-line report shows of it. */
export function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0];
}

function times(n: number): string {
  return ['once', 'twice'][n - 1] ?? `${n} times`;
}
