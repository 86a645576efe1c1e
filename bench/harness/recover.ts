// A bench run that survives a lost GPU device (a driver reset, a sleeping laptop), as REFRACT's ResilientBackend
// (src/refract/resilient.ts) does for its backend calls: the run is a sequence of units (a kernel section, one
// KV-cache configuration of the model); when a unit fails and the device is gone, a new device is opened, the run
// says so, and the unit is redone on it from the start (units rebuild what they need, e.g. the random weights).
// A second loss in the same unit gives that unit up (the caller records the error) and the run goes on.
import { Gpu } from '../../src/gpu/gpu.ts';
import { DeviceLostError } from '../../src/errors.ts';

/** A unit redone on a new device, and the loss that cost its first attempt. */
export interface Recovered { unit: string; error: string }

export interface DeviceKeeperOptions {
  /** Where recovery is reported (the CLI: stderr). */
  warn: (line: string) => void;
  /** Opens a device (default `Gpu.create()`). */
  create?: () => Promise<Gpu>;
  /** Called with every device the run opens (first and recreated): fault injection, tests. */
  opened?: (gpu: Gpu) => void;
  /** Called before each attempt of a unit (1, then 2 after a loss). */
  attempt?: (unit: string, attempt: number, gpu: Gpu) => void;
}

/** True when `e` (thrown by work on `gpu`) means the device is gone, whatever the failing call reported. */
export function deviceLoss(e: unknown, gpu: Gpu): boolean {
  return e instanceof DeviceLostError || gpu.watch.lost !== null;
}

async function openDevice(o: DeviceKeeperOptions): Promise<Gpu> {
  const gpu = await (o.create?.() ?? Gpu.create());
  o.opened?.(gpu);
  return gpu;
}

export class DeviceKeeper {
  /** Units redone after a device loss, in order. */
  readonly recovered: Recovered[] = [];

  private constructor(private current: Gpu, private readonly o: DeviceKeeperOptions) {}

  static async open(o: DeviceKeeperOptions): Promise<DeviceKeeper> {
    return new DeviceKeeper(await openDevice(o), o);
  }

  /** The device in use now (a new one after each loss). */
  get gpu(): Gpu {
    return this.current;
  }

  /**
   * Run `f` on the current device. If the device is lost meanwhile, open a new one and run `f` once more on it;
   * a second loss is thrown as a DeviceLostError naming the unit (the next unit still gets a fresh device).
   * Other errors pass through untouched.
   */
  async unit<T>(what: string, f: (gpu: Gpu) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const gpu = this.current;
      this.o.attempt?.(what, attempt, gpu);
      try {
        return await f(gpu);
      } catch (e) {
        if (!deviceLoss(e, gpu)) throw e;
        const error = (e instanceof Error ? e.message : String(e)).split('\n')[0];
        const again = attempt > 1;
        const then = again
          ? ' for the rest of the run: lost twice, giving this unit up'
          : ', rebuilding what it needs and redoing it';
        this.o.warn(`GPU device lost during ${what} (${error}); opening a new device${then}`);
        await this.replace(gpu);
        if (again) throw new DeviceLostError(what, `the GPU device was lost twice; gave the unit up (${error})`);
        this.recovered.push({ unit: what, error });
      }
    }
  }

  /** Drop the lost device (its pool) and open the next; a failure to open one is thrown (the unit's error). */
  private async replace(lost: Gpu): Promise<void> {
    lost.destroy();
    this.current = await openDevice(this.o);
  }
}
