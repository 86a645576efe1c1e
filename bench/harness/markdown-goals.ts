// The Markdown's table of issue 30's "Done when" (goals.ts): each goal's figure, its bound and whether the run meets
// it, and a line saying which required ones it does not. The run's Markdown and bench/runners/goals.ts print the
// same lines.
import { esc, f } from './format.ts';
import { unmet, type Goal } from './goals.ts';

const verdict = (g: Goal): string =>
  (g.passed === null ? `missing: ${esc(g.missing ?? '')}` : g.passed ? 'met' : g.required ? '**not met**' : 'not met');

/** The required goals' tally: how many are met, and the names of those that are not or lack figures. */
export function goalSummary(goals: readonly Goal[]): string {
  const required = goals.filter((g) => g.required);
  const open = unmet(goals);
  const names = (passed: boolean | null) => open.filter((g) => g.passed === passed).map((g) => g.name).join('; ');
  return `${required.length - open.length} of ${required.length} required goals met` +
    (open.some((g) => g.passed === false) ? `; not met: ${names(false)}` : '') +
    (open.some((g) => g.passed === null) ? `; figures missing: ${names(null)}` : '') + '.';
}

/** The section: a table of every goal, then the tally. */
export function goalLines(goals: readonly Goal[]): string[] {
  return ['## Issue 30 goals', '', '| goal | figure | bound | | result |', '|---|---|---|---|---|',
    ...goals.map((g) => `| ${esc(g.name)} | ${f(g.value)} | ${esc(g.bound)} | ` +
      `${g.required ? 'required' : 'target'} | ${verdict(g)} |`),
    '', goalSummary(goals), ''];
}
