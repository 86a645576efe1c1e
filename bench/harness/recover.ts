// A bench run that survives a lost GPU device (a driver reset, a sleeping laptop), as REFRACT's ResilientBackend
// (src/refract/resilient.ts) does for its backend calls: the run is a sequence of units (a kernel section, one
// KV-cache configuration of the model); when a unit fails and the device is gone, a new device is opened, the run
// says so, and the unit is redone on it from the start (units rebuild what they need, e.g. the random weights).
// A second loss in the same unit gives that unit up (the caller records the error) and the run goes on. The loop
// is src/gpu/redo.ts's, with one redo per unit.
import { Gpu } from '../../src/kernels/gpu.ts';
import { DeviceLostError } from '../../src/errors.ts';
import { firstLine, Redo } from '../../src/gpu/redo.ts';

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
  private readonly redo: Redo<Gpu>;

  private constructor(first: Gpu, o: DeviceKeeperOptions) {
    this.redo = new Redo(first, {
      policy: { per: 'unit', limit: 1 },
      lost: deviceLoss,
      // Drop the lost device (its pool) and open the next; a failure to open one is thrown (the unit's error).
      rebuild: (lost) => {
        lost.destroy();
        return openDevice(o);
      },
      attempt: (unit, n, gpu) => o.attempt?.(unit, n, gpu),
      onLoss: (l) => o.warn(`GPU device lost during ${l.unit} (${firstLine(l.error)}); opening a new device` +
        (l.giveUp ? ' for the rest of the run: lost twice, giving this unit up'
          : ', rebuilding what it needs and redoing it')),
      onRebuilt: (l) => this.recovered.push({ unit: l.unit, error: firstLine(l.error) }),
    });
  }

  static async open(o: DeviceKeeperOptions): Promise<DeviceKeeper> {
    return new DeviceKeeper(await openDevice(o), o);
  }

  /** The device in use now (a new one after each loss). */
  get gpu(): Gpu {
    return this.redo.resource;
  }

  /**
   * Run `f` on the current device. If the device is lost meanwhile, open a new one and run `f` once more on it;
   * a second loss is thrown as a DeviceLostError naming the unit (the next unit still gets a fresh device).
   * Other errors pass through untouched.
   */
  unit<T>(what: string, f: (gpu: Gpu) => Promise<T>): Promise<T> {
    return this.redo.unit(what, f);
  }
}
