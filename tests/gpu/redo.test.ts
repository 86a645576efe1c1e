// The "device lost: rebuild and redo" loop (src/gpu/redo.ts) on a fake resource whose losses the test decides:
// both policies, what each hook sees and when, and that other errors pass through untouched. The real users are
// tested with real devices: tests/bench/recover.test.ts (DeviceKeeper), tests/refract/runner.test.ts and
// hrm-backend.test.ts (ResilientBackend).
import { describe, expect, it } from 'vitest';
import { Redo, type RedoPolicy } from '../../src/gpu/redo.ts';
import { DeviceLostError, InputError } from '../../src/errors.ts';

/** A resource numbered by its build; `dead` once the test loses it. */
interface Res { id: number; dead: boolean }

function harness(policy: RedoPolicy) {
  const events: string[] = [];
  let built = 0;
  const redo = new Redo<Res>({ id: built++, dead: false }, {
    policy,
    lost: (e, r) => e instanceof DeviceLostError || r.dead,
    rebuild: async (lost) => {
      events.push(`rebuild after #${lost.id}`);
      return { id: built++, dead: false };
    },
    attempt: (unit, n, r) => events.push(`${unit} attempt ${n} on #${r.id}`),
    onLoss: (l) => events.push(`loss in ${l.unit} (${(l.error as Error).message}) attempt ${l.attempt}` +
      ` recoveries ${l.recoveries}${l.giveUp ? ' give up' : ''}`),
    onRebuilt: (l) => events.push(`redo ${l.unit}`),
  });
  return { redo, events };
}

/** Work that loses its resource on the attempts listed (counted per unit), and returns the resource's id. */
function work(loseOn: number[]) {
  let n = 0;
  return async (r: Res) => {
    if (loseOn.includes(++n)) {
      r.dead = true;
      throw new Error('lost\nmore');
    }
    return r.id;
  };
}

describe('Redo', () => {
  it("per 'run': recovers from `limit` losses in all, then passes the next one on as it came, unrebuilt", async () => {
    const { redo, events } = harness({ per: 'run', limit: 2 });
    expect(await redo.unit('a', work([1]))).toBe(1);
    expect(await redo.unit('b', work([1]))).toBe(2);
    // A lost DeviceLostError counts even when the resource does not say it is dead.
    await expect(redo.unit('c', async () => { throw new DeviceLostError('x', 'gone'); })).rejects.toThrow('[x] gone');
    expect(redo.recoveries).toBe(2);
    expect(redo.resource.id).toBe(2);
    expect(events).toEqual([
      'a attempt 1 on #0', 'loss in a (lost\nmore) attempt 1 recoveries 1', 'rebuild after #0', 'redo a',
      'a attempt 2 on #1',
      'b attempt 1 on #1', 'loss in b (lost\nmore) attempt 1 recoveries 2', 'rebuild after #1', 'redo b',
      'b attempt 2 on #2',
      'c attempt 1 on #2',
    ]);
  });

  it("per 'unit': redoes a unit `limit` times, then gives it up naming it; the next unit runs rebuilt", async () => {
    const { redo, events } = harness({ per: 'unit', limit: 1 });
    expect(await redo.unit('a', work([1]))).toBe(1);
    const e = await redo.unit('b', work([1, 2])).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DeviceLostError);
    expect((e as Error).message).toBe('[b] the GPU device was lost twice; gave the unit up (lost)');
    expect(await redo.unit('c', work([1]))).toBe(4);
    expect(redo.recoveries).toBe(3);
    expect(events.filter((x) => !x.includes('attempt 1 on'))).toEqual([
      'loss in a (lost\nmore) attempt 1 recoveries 1', 'rebuild after #0', 'redo a', 'a attempt 2 on #1',
      'loss in b (lost\nmore) attempt 1 recoveries 2', 'rebuild after #1', 'redo b', 'b attempt 2 on #2',
      'loss in b (lost\nmore) attempt 2 recoveries 2 give up', 'rebuild after #2',
      'loss in c (lost\nmore) attempt 1 recoveries 3', 'rebuild after #3', 'redo c', 'c attempt 2 on #4',
    ]);
  });

  it('passes other errors through without a rebuild, and a failed rebuild as the unit error', async () => {
    const { redo, events } = harness({ per: 'unit', limit: 3 });
    await expect(redo.unit('a', async () => { throw new InputError('a', 'bad'); })).rejects.toThrow(InputError);
    expect(events).toEqual(['a attempt 1 on #0']);
    const broken = new Redo<Res>({ id: 0, dead: false }, {
      policy: { per: 'run', limit: 1 }, lost: () => true, rebuild: async () => { throw new Error('no adapter'); },
    });
    await expect(broken.unit('a', work([1]))).rejects.toThrow('no adapter');
  });

  it('refuses a policy it cannot follow, naming the field', () => {
    const res = { id: 0, dead: false };
    const o = { lost: () => true, rebuild: async () => res };
    expect(() => new Redo(res, { ...o, policy: { per: 'step' as 'run', limit: 1 } })).toThrow(/policy.per must be/);
    expect(() => new Redo(res, { ...o, policy: { per: 'run', limit: -1 } })).toThrow(/policy.limit must be an integer/);
  });
});
