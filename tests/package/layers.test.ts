// The layers of src/ (.dependency-cruiser.cjs, issue 31): every import of src/, demo/, bench/ and testkit/ checked
// against the
// rules, so that a module reaching up a layer, an app reaching past the public entries, a run-time import cycle, or
// product code importing a CPU reference fails `npm test` with the offending import named.
import { describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { cruise, type IReporterOutput, type IViolation } from 'dependency-cruiser';

const require = createRequire(import.meta.url);
const config = require('../../.dependency-cruiser.cjs') as { forbidden: unknown[]; options: object };

describe('layering (dependency-cruiser)', () => {
  it('no import breaks a rule of .dependency-cruiser.cjs', async () => {
    const out: IReporterOutput = await cruise(['src', 'demo', 'bench', 'testkit'], {
      ...config.options, validate: true, ruleSet: { forbidden: config.forbidden },
    } as never);
    const result = out.output as { summary: { violations: IViolation[]; totalCruised: number } };
    const found = result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
    expect(result.summary.totalCruised).toBeGreaterThan(100);
    expect(found).toEqual([]);
  }, 120_000);

  it('the rules catch an import from a layer above', async () => {
    // gpu/'s rule applied to kernels/matmul/, which imports kernels/ and tensor/ (layers above gpu/): it must fire.
    const found = await probe('gpu-imports-only-below', 'src/kernels/matmul');
    expect(found.map((v) => v.to)).toContain('src/kernels/kernel.ts');
    expect(found.map((v) => v.to)).toContain('src/tensor/tensor.ts');
  }, 60_000);

  it('the cycle rule catches two modules that import each other at run time', async () => {
    const found = await probe('no-cycles', 'tests/fixtures/cycle');
    // One violation a cycle, named from its first module.
    expect(found.map((v) => `${v.from} -> ${v.to}`))
      .toEqual(['tests/fixtures/cycle/a.ts -> tests/fixtures/cycle/b.ts']);
  }, 60_000);
});

/** The violations of rule `name`, applied to the modules under `folder` (instead of the paths it names). */
async function probe(name: string, folder: string): Promise<IViolation[]> {
  const rule = (config.forbidden as Array<{ name: string }>).find((r) => r.name === name);
  const out = await cruise([folder], {
    ...config.options, validate: true, ruleSet: { forbidden: [{ ...rule, from: { path: `^${folder}/` } }] },
  } as never);
  return (out.output as { summary: { violations: IViolation[] } }).summary.violations;
}
