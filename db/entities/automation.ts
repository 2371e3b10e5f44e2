import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

export const AUTOMATION_STATUSES = ['draft', 'active', 'paused', 'archived'] as const;
export type AutomationStatus = (typeof AUTOMATION_STATUSES)[number];

export interface AutomationStats {
  totalRuns: number;
  activeRuns: number;
  completedRuns: number;
  failedRuns: number;
  emailsSent: number;
  creditsUsed: number;
}

export const EMPTY_AUTOMATION_STATS: AutomationStats = {
  totalRuns: 0,
  activeRuns: 0,
  completedRuns: 0,
  failedRuns: 0,
  emailsSent: 0,
  creditsUsed: 0,
};

/** An automation; created by operators, renamed and moved between states over the API. */
export const AutomationSchema = defineEntity({
  name: 'Automation',
  tableName: 'automations',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    name: p.string().length(120),
    description: p.string().length(2000).default(''),
    status: p.enum(AUTOMATION_STATUSES).default('draft'),
    triggerType: p.string().length(100),
    stats: p.json<AutomationStats>().defaultRaw(`'${JSON.stringify(EMPTY_AUTOMATION_STATS)}'`),
    /** Increases on every change. */
    version: p.integer().default(1),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export class Automation extends AutomationSchema.class {}
AutomationSchema.setClass(Automation);
