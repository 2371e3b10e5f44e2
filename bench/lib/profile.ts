import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/dev/paths.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: a package name, `herald:<path>`, `node:<module>`, or a VM state. */
function owner(url: string, functionName: string): string {
  if (!url) return `(${functionName || 'native'})`;
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  if (url.startsWith('node:')) return 'node (core)';
  return `herald:${url.replace(`file://${REPO_ROOT}/`, '').split('/').slice(0, 2).join('/')}`;
}

/**
 * The top frames of a V8 CPU profile by self time, and self time by owner (package, Herald
 * folder, Node core, GC/idle), as text: where the api spends its CPU under load.
 */
export function summarizeCpuProfile(profile: CpuProfile, top = 20): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  for (const [i, id] of profile.samples.entries()) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const total = [...self.values()].reduce((a, b) => a + b, 0) || 1;
  const frames = new Map<string, number>();
  const owners = new Map<string, number>();
  for (const [id, micros] of self) {
    const frame = byId.get(id)!.callFrame;
    const where = frame.url ? `${frame.url.replace(`file://${REPO_ROOT}/`, '').replace(/^.*node_modules\//, '')}:${frame.lineNumber + 1}` : '';
    const key = `${frame.functionName || '(anonymous)'} ${where}`.trim();
    frames.set(key, (frames.get(key) ?? 0) + micros);
    const who = owner(frame.url, frame.functionName);
    owners.set(who, (owners.get(who) ?? 0) + micros);
  }
  const share = (micros: number) => `${((micros / total) * 100).toFixed(1).padStart(5)} %`;
  const lines = [`${(total / 1e6).toFixed(1)} s of samples`, '', 'self time by owner:'];
  for (const [who, micros] of [...owners].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`  ${share(micros)}  ${who}`);
  lines.push('', `top ${top} frames by self time:`);
  for (const [key, micros] of [...frames].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${share(micros)}  ${key}`);
  return lines.join('\n');
}

/** Summaries of every `.cpuprofile` in `dir`. */
export function summarizeProfiles(dir: string): { file: string; summary: string }[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((file) => file.endsWith('.cpuprofile'));
  } catch {
    return [];
  }
  return files.map((file) => ({
    file: join(dir, file),
    summary: summarizeCpuProfile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile),
  }));
}
