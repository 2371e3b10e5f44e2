import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyInbound, type InboundReport } from '../../src/modules/inbound/report-classifier.ts';

/**
 * Agreement of the classifier with the reference verdicts over the whole fixture corpus, the
 * figure issue 36 measures: the kind of every message, and for every bounce with a reference
 * (sisimai's test tables, see test/fixtures/mail/CREDITS.md) the status of each recipient.
 * Prints the table on every run so a change shows its effect.
 */

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'mail');

interface Expected {
  kind: InboundReport['kind'];
  referenceStatus?: (string | null)[];
}

const expected = JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8')) as Record<string, Expected>;

/** Lowest agreement this corpus may fall to; the 2026-11-27 run measured the figures in docs/bounces.md. */
const MIN_KIND = 1;
const MIN_STATUS = 0.9;

function envelopeSender(raw: Buffer): string {
  const head = raw.toString('latin1').split(/\r?\n\r?\n/)[0] ?? '';
  const returnPath = /^Return-Path:[ \t]*<?([^>\r\n]*)>?/im.exec(head);
  return returnPath ? returnPath[1]!.trim() : 'sender@corpus.example';
}

/** `sisimai-amazonses-03-mailboxfull.eml` → `amazonses`; other sources by their prefix. */
function family(file: string): string {
  const name = file.split('/').at(-1)!;
  const sisimai = /^sisimai-((?:rhost-)?[a-z0-9]+)/.exec(name);
  return sisimai ? sisimai[1]! : name.split('-')[0]!;
}

interface Tally {
  kind: number;
  kindOk: number;
  status: number;
  statusOk: number;
}

async function measure(): Promise<{ total: Tally; families: Map<string, Tally>; misses: string[] }> {
  const total: Tally = { kind: 0, kindOk: 0, status: 0, statusOk: 0 };
  const families = new Map<string, Tally>();
  const misses: string[] = [];
  for (const [file, want] of Object.entries(expected).sort(([a], [b]) => a.localeCompare(b))) {
    const raw = readFileSync(join(FIXTURES, file));
    const got = await classifyInbound({
      raw,
      mailFrom: envelopeSender(raw),
      rcptTo: ['inbox@herald.test'],
      bounceDomain: 'bounces.herald.test',
    });
    const tally = families.get(family(file)) ?? { kind: 0, kindOk: 0, status: 0, statusOk: 0 };
    families.set(family(file), tally);
    const kindOk = got.kind === want.kind;
    for (const t of [total, tally]) {
      t.kind += 1;
      t.kindOk += kindOk ? 1 : 0;
    }
    if (!kindOk) misses.push(`${file}: kind ${got.kind}, reference ${want.kind}`);
    if (!want.referenceStatus || (want.kind !== 'bounce' && want.kind !== 'delay')) continue;
    const statuses = got.kind === 'bounce' || got.kind === 'delay' ? got.recipients.map((r) => r.status) : [];
    const statusOk = JSON.stringify(statuses) === JSON.stringify(want.referenceStatus);
    for (const t of [total, tally]) {
      t.status += 1;
      t.statusOk += statusOk ? 1 : 0;
    }
    if (!statusOk) misses.push(`${file}: status ${JSON.stringify(statuses)}, reference ${JSON.stringify(want.referenceStatus)}`);
  }
  return { total, families, misses };
}

const percent = (ok: number, n: number): string => (n === 0 ? '   -  ' : `${((100 * ok) / n).toFixed(1).padStart(5)}%`);

describe('classifier agreement over the fixture corpus', () => {
  it(`agrees on the kind of every message and on the status of at least ${MIN_STATUS * 100} % of the bounces`, async () => {
    const { total, families, misses } = await measure();
    const rows = [...families.entries()]
      .filter(([, t]) => t.status > 0)
      .map(
        ([name, t]) =>
          `  ${name.padEnd(18)} kind ${percent(t.kindOk, t.kind)} (${t.kindOk}/${t.kind})  status ${percent(t.statusOk, t.status)} (${t.statusOk}/${t.status})`,
      );
    console.log(
      [
        `corpus agreement: kind ${percent(total.kindOk, total.kind)} (${total.kindOk}/${total.kind}), status ${percent(total.statusOk, total.status)} (${total.statusOk}/${total.status} bounces with a reference)`,
        'per family (those with a reference status):',
        ...rows,
        'disagreements:',
        ...misses.map((m) => `  ${m}`),
      ].join('\n'),
    );
    expect(total.kindOk / total.kind, misses.join('\n')).toBeGreaterThanOrEqual(MIN_KIND);
    expect(total.statusOk / total.status, misses.join('\n')).toBeGreaterThanOrEqual(MIN_STATUS);
  });
});
