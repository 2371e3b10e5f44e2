import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const WORKFLOWS_DIR = fileURLToPath(new URL('../../workflows/', import.meta.url));

/** A hash of the workflow sources (self-contained: they import only each other and the SDK) and the SDK version they are bundled with. */
function workflowSourcesHash(): string {
  const hash = createHash('sha256');
  for (const name of readdirSync(WORKFLOWS_DIR).sort()) hash.update(name).update(readFileSync(join(WORKFLOWS_DIR, name)));
  hash.update(readFileSync(fileURLToPath(new URL('../../node_modules/@temporalio/workflow/package.json', import.meta.url))));
  return hash.digest('hex').slice(0, 16);
}

/**
 * The path of a workflow bundle of the current sources in `dir`, built there (webpack, in this
 * process) unless a bundle of the same sources is already there. A worker started on it
 * (HERALD_WORKFLOW_BUNDLE) skips webpack: faster to start and a smaller heap, as in production's
 * ahead-of-time bundle.
 */
export async function ensureWorkflowBundle(dir: string, onError: (message: string) => void): Promise<string> {
  const path = join(dir, `workflow-bundle-${workflowSourcesHash()}.js`);
  if (existsSync(path)) return path;
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { WORKFLOWS_PATH } = await import('../worker.ts');
  const quiet = () => {};
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: onError },
  });
  mkdirSync(dir, { recursive: true });
  // Written aside and renamed: a concurrent start never reads half a bundle.
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, code);
  renameSync(partial, path);
  return path;
}
