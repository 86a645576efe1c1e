// The commit a run measures, for its JSON: the bundles get it from bench/pack.sh (the machine that runs them has no
// git checkout); runners in a checkout ask git, marking uncommitted changes to tracked files `+dirty`.
import { execFileSync } from 'node:child_process';

/** Set by bench/pack.sh and bench/chrome-build.sh when they bundle. */
declare const __BENCH_COMMIT__: string | undefined;

/** The short commit of the checkout at `cwd` (`+dirty` if changed), the bundle's commit, or null without git. */
export function commit(cwd?: string): string | null {
  if (typeof __BENCH_COMMIT__ === 'string') return __BENCH_COMMIT__;
  try {
    const git = (...a: string[]) =>
      execFileSync('git', a, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') ? '+dirty' : '');
  } catch {
    return null;
  }
}
