import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Code shape (issue 31): factories wire dependencies and stay under FACTORY_MAX_LINES, files stay
 * under FILE_MAX_LINES, unless docs/decisions.md says why in the entry the allow-lists below
 * point at. A factory is a top-level `function create…(`; its length runs from that line to the
 * first `}` at column 0. An entry whose factory or file has since shrunk (or gone) fails too, so
 * the lists only ever hold what still needs its sentence.
 */

const ROOT = join(import.meta.dirname, '../..');
const ROOTS = ['src', 'db', 'workflows', 'activities'];
const FACTORY_MAX_LINES = 80;
const FILE_MAX_LINES = 300;
const DECISIONS = 'docs/decisions.md';

const SHAPE_ENTRY = '2026-11-27: factories over 80 lines and files over 300 lines that stay (issue 31)';

/** Factories over the limit, each with the heading of the decisions.md entry that names it. */
const FACTORY_ALLOW: Record<string, string> = {
  createDomainQueue: SHAPE_ENTRY,
  createInboxRoutes: SHAPE_ENTRY,
  createWebhooksRoutes: SHAPE_ENTRY,
  createContactsService: SHAPE_ENTRY,
  createDomainsService: SHAPE_ENTRY,
  createEndpointQueue: SHAPE_ENTRY,
  createAttachmentsService: SHAPE_ENTRY,
  createSubmissionServer: SHAPE_ENTRY,
  createBroadcastsRoutes: SHAPE_ENTRY,
  createAutomationsRoutes: SHAPE_ENTRY,
  createContactsRoutes: SHAPE_ENTRY,
  createInboxService: SHAPE_ENTRY,
  createOrgsService: SHAPE_ENTRY,
  createInboundServer: SHAPE_ENTRY,
  createDeliveriesService: SHAPE_ENTRY,
  createDmarcRoutes: SHAPE_ENTRY,
  createContactImportsRoutes: SHAPE_ENTRY,
  createSegmentsRoutes: SHAPE_ENTRY,
  createWarmupService: SHAPE_ENTRY,
  createSegmentsService: SHAPE_ENTRY,
  createTemplatesRoutes: SHAPE_ENTRY,
  createStreamsRoutes: SHAPE_ENTRY,
  createEgress: SHAPE_ENTRY,
  createInboundQueue: SHAPE_ENTRY,
  createAutomationsService: SHAPE_ENTRY,
};

/** Files over the limit (migrations aside), each with the heading of the decisions.md entry that names it. */
const FILE_ALLOW: Record<string, string> = {
  'src/modules/automations/automation-engine.ts': SHAPE_ENTRY,
  'src/dev/dev.ts': SHAPE_ENTRY,
  'src/modules/outbound/domain-queue.repo.ts': SHAPE_ENTRY,
  'src/modules/automations/automation-queue.repo.ts': SHAPE_ENTRY,
  'src/config.ts': SHAPE_ENTRY,
  'src/modules/automations/automation-drain.ts': SHAPE_ENTRY,
  'src/modules/events/events.schemas.ts': SHAPE_ENTRY,
  'src/modules/automations/automation-definition.ts': SHAPE_ENTRY,
  'src/modules/sends/sends.schemas.ts': SHAPE_ENTRY,
  'src/worker.ts': SHAPE_ENTRY,
  'db/orm.ts': SHAPE_ENTRY,
};

function sourceFiles(dir: string, found: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'node_modules' && name !== 'migrations') sourceFiles(path, found);
    } else if (/\.(ts|mjs)$/.test(name)) {
      found.push(path);
    }
  }
  return found;
}

interface Measured {
  factories: Map<string, { lines: number; at: string }>;
  files: Map<string, number>;
}

function measure(): Measured {
  const factories = new Map<string, { lines: number; at: string }>();
  const files = new Map<string, number>();
  for (const path of ROOTS.flatMap((root) => sourceFiles(join(ROOT, root)))) {
    const file = relative(ROOT, path);
    const lines = readFileSync(path, 'utf8').split('\n');
    files.set(file, lines.at(-1) === '' ? lines.length - 1 : lines.length);
    lines.forEach((line, index) => {
      const factory = /^(?:export\s+)?(?:async\s+)?function\s+(create\w*)\s*[<(]/.exec(line);
      if (!factory) return;
      let end = index + 1;
      while (end < lines.length && lines[end] !== '}') end += 1;
      factories.set(factory[1]!, { lines: end - index + 1, at: `${file}:${index + 1}` });
    });
  }
  return { factories, files };
}

/** The text of the decisions.md entry under `## heading`, up to the next `## `; null when there is none. */
function entry(decisions: string, heading: string): string | null {
  const start = decisions.indexOf(`\n## ${heading}\n`);
  if (start < 0) return null;
  const next = decisions.indexOf('\n## ', start + 1);
  return decisions.slice(start, next < 0 ? undefined : next);
}

describe('code shape (issue 31)', () => {
  const measured = measure();
  const decisions = readFileSync(join(ROOT, DECISIONS), 'utf8');

  it(`has no factory over ${FACTORY_MAX_LINES} lines that docs/decisions.md does not account for`, () => {
    const over = [...measured.factories].filter(([, { lines }]) => lines > FACTORY_MAX_LINES);
    const unlisted = over.filter(([name]) => !(name in FACTORY_ALLOW)).map(([name, { lines, at }]) => `${name} (${lines} lines, ${at})`);
    expect(unlisted, 'split these factories, or say why not in docs/decisions.md and list them in FACTORY_ALLOW').toEqual([]);
  });

  it(`has no file over ${FILE_MAX_LINES} lines that docs/decisions.md does not account for`, () => {
    const unlisted = [...measured.files]
      .filter(([file, lines]) => lines > FILE_MAX_LINES && !(file in FILE_ALLOW))
      .map(([file, lines]) => `${file} (${lines} lines)`);
    expect(unlisted, 'split these files, or say why not in docs/decisions.md and list them in FILE_ALLOW').toEqual([]);
  });

  it('lists only factories and files still over their limit', () => {
    const stale = [
      ...Object.keys(FACTORY_ALLOW).filter((name) => (measured.factories.get(name)?.lines ?? 0) <= FACTORY_MAX_LINES),
      ...Object.keys(FILE_ALLOW).filter((file) => (measured.files.get(file) ?? 0) <= FILE_MAX_LINES),
    ];
    expect(stale, 'these are under their limit now (or gone): drop them from the allow-lists').toEqual([]);
  });

  it('points every allowed factory and file at a decisions.md entry that names it', () => {
    const unexplained = [...Object.entries(FACTORY_ALLOW), ...Object.entries(FILE_ALLOW)]
      .filter(([key, heading]) => !entry(decisions, heading)?.includes(`\`${key}\``))
      .map(([key, heading]) => `${key} → "${heading}"`);
    expect(unexplained, `each needs its sentence, naming it in backquotes, in that entry of ${DECISIONS}`).toEqual([]);
  });
});
