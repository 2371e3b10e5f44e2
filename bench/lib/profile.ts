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

function frameKey(frame: ProfileNode['callFrame']): string {
  const where = frame.url
    ? `${frame.url.replace(`file://${REPO_ROOT}/`, '').replace(/^.*node_modules\//, '')}:${frame.lineNumber + 1}`
    : '';
  return `${frame.functionName || '(anonymous)'} ${where}`.trim();
}

const IDLE = new Set(['(idle)', '(program)']);

/**
 * A V8 CPU profile as text: where the process spends its busy time (idle samples left out,
 * so phases without load do not dilute the shares): self time by owner (package, Herald
 * folder, Node core, GC), the top frames by self time, and Herald's own functions by
 * inclusive time (the function and everything it calls).
 */
export function summarizeCpuProfile(profile: CpuProfile, top = 20): { busyMicros: number; text: string } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<number, number>();
  for (const [i, id] of profile.samples.entries()) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));

  let idle = 0;
  let busy = 0;
  const frames = new Map<string, number>();
  const owners = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, micros] of self) {
    const frame = byId.get(id)!.callFrame;
    if (IDLE.has(frame.functionName) && !frame.url) {
      idle += micros;
      continue;
    }
    busy += micros;
    frames.set(frameKey(frame), (frames.get(frameKey(frame)) ?? 0) + micros);
    const who = owner(frame.url, frame.functionName);
    owners.set(who, (owners.get(who) ?? 0) + micros);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const callFrame = byId.get(at)!.callFrame;
      if (!callFrame.url.startsWith(`file://${REPO_ROOT}/`) || callFrame.url.includes('/node_modules/')) continue;
      const key = frameKey(callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + micros);
    }
  }
  const share = (micros: number) => `${((micros / (busy || 1)) * 100).toFixed(1).padStart(5)} %`;
  const sorted = (map: Map<string, number>, count: number) => [...map].sort((a, b) => b[1] - a[1]).slice(0, count);
  const lines = [
    `${(busy / 1e6).toFixed(1)} s busy, ${(idle / 1e6).toFixed(1)} s idle; shares are of the busy time`,
    '',
    'self time by owner:',
  ];
  for (const [who, micros] of sorted(owners, 15)) lines.push(`  ${share(micros)}  ${who}`);
  lines.push('', `top ${top} frames by self time:`);
  for (const [key, micros] of sorted(frames, top)) lines.push(`  ${share(micros)}  ${key}`);
  lines.push('', 'Herald functions by inclusive time:');
  for (const [key, micros] of sorted(inclusive, 15)) lines.push(`  ${share(micros)}  ${key}`);
  return { busyMicros: busy, text: lines.join('\n') };
}

/** Summaries of every `.cpuprofile` in `dir` (one per thread), the busiest first. */
export function summarizeProfiles(dir: string): { file: string; summary: string }[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((file) => file.endsWith('.cpuprofile'));
  } catch {
    return [];
  }
  return files
    .map((file) => ({ file: join(dir, file), ...summarizeCpuProfile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile) }))
    .sort((a, b) => b.busyMicros - a.busyMicros)
    .map(({ file, text }) => ({ file, summary: text }));
}
