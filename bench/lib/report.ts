import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { costTable, costModel } from './cost-model.ts';
import { fmt, percent, spread } from './stats.ts';
import type { Figures, Stat, Summary } from './types.ts';

export interface BenchmarkResult {
  description: string;
  finishedAt: string;
  seconds: number;
  runs: Figures[];
  stats: Record<string, Stat>;
  summaries: Summary[];
  notes: { title: string; text: string }[];
  error?: string;
}

export interface ResultsFile {
  date: string;
  machine: { cpus: number; node: string; loadAverage: number[] };
  options: Record<string, unknown>;
  benchmarks: Record<string, BenchmarkResult>;
}

/** `bench <name>: <figure> (<ratio> of <baseline>)`, the line to compare over time. */
export function summaryLine(summary: Summary): string {
  const target = summary.target ? `; target ${summary.target.text}: ${summary.target.met ? 'met' : 'MISSED'}` : '';
  return `bench ${summary.name}: ${summary.figure} (${percent(summary.ratio)} of ${summary.baseline}${target})`;
}

/**
 * Writes `<dir>/<date>.json` and `<dir>/<date>.md`. Benchmarks run today before (another
 * `npm run bench -- <name>`) stay in the files unless this run measured them again; the
 * benchmarks are listed in `order`.
 */
export function writeResults(
  dir: string,
  current: ResultsFile,
  order: readonly string[],
): { json: string; markdown: string; merged: ResultsFile } {
  mkdirSync(dir, { recursive: true });
  const json = join(dir, `${current.date}.json`);
  const markdown = join(dir, `${current.date}.md`);
  const previous = existsSync(json) ? (JSON.parse(readFileSync(json, 'utf8')) as ResultsFile) : undefined;
  const all = { ...previous?.benchmarks, ...current.benchmarks };
  const rank = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
  const names = Object.keys(all).sort((a, b) => rank(a) - rank(b));
  const merged: ResultsFile = { ...current, benchmarks: Object.fromEntries(names.map((name) => [name, all[name]!])) };
  writeFileSync(json, `${JSON.stringify(merged, null, 2)}\n`);
  writeFileSync(markdown, renderMarkdown(merged));
  return { json, markdown, merged };
}

/** The results as Markdown: the summary lines' table, then every figure with its spread. */
export function renderMarkdown(results: ResultsFile): string {
  const lines: string[] = [
    `# Benchmarks ${results.date}`,
    '',
    `${results.machine.cpus} CPUs, Node ${results.machine.node}, load average at the end ${results.machine.loadAverage.map((n) => n.toFixed(2)).join(' ')}; ` +
      `${String(results.options.runs)} runs of ${String(results.options.durationSec)} s per figure after a warm-up. Ratios compare figures measured in the same run.`,
    '',
    '| benchmark | figure (median) | ratio | of baseline | target | met |',
    '|---|---|---|---|---|---|',
  ];
  for (const [name, result] of Object.entries(results.benchmarks)) {
    if (result.error) {
      lines.push(`| ${name} | failed: ${result.error.split('\n')[0]!.replaceAll('|', '\\|')} | | | | |`);
      continue;
    }
    for (const summary of result.summaries) {
      lines.push(
        `| ${summary.name} | ${summary.figure} | ${percent(summary.ratio)} | ${summary.baseline} | ${summary.target?.text ?? ''} | ${summary.target ? (summary.target.met ? 'yes' : '**no**') : ''} |`,
      );
    }
  }
  lines.push('', ...costTable(costModel(results.benchmarks)));
  lines.push('', '## Every figure: median (min–max) over the runs', '');
  for (const [name, result] of Object.entries(results.benchmarks)) {
    lines.push(`### ${name}`, '', result.description, '');
    if (result.error) {
      lines.push('```', result.error, '```', '');
      continue;
    }
    lines.push(`${result.runs.length} runs, ${fmt(result.seconds)} s in all.`, '', '| figure | median (min–max) |', '|---|---|');
    for (const [figure, stat] of Object.entries(result.stats)) lines.push(`| ${figure} | ${spread(stat)} |`);
    lines.push('');
    for (const note of result.notes) lines.push(`**${note.title}**`, '', '```', note.text.trimEnd(), '```', '');
  }
  return `${lines.join('\n')}\n`;
}
