import { defineEntity, p } from '@mikro-orm/core';

/**
 * Messages (recipients) one egress source address carried on one UTC day, against its warm-up
 * cap (src/modules/egress/address-warmup-plan.ts). Not a tenant row: addresses are the
 * operator's. The first day an address has a row is its warm-up day 1.
 */
export const EgressAddressDaySchema = defineEntity({
  name: 'EgressAddressDay',
  tableName: 'egress_address_days',
  properties: {
    address: p.string().length(45).primary(),
    day: p.string().length(10).primary(),
    sent: p.integer().default(0),
  },
});

export class EgressAddressDay extends EgressAddressDaySchema.class {}
EgressAddressDaySchema.setClass(EgressAddressDay);
