import { AppError } from '../../errors.ts';
import { resolveSchedule } from './schedule.fns.ts';
import { listUnsubscribeProblems, parseFromAddress, reservedHeaderNames } from './sends.fns.ts';
import type { SendEmailInput } from './sends.schemas.ts';

function invalidField(path: string, type: string, message: string, reason?: string): AppError {
  return new AppError('invalid_request', `Invalid body.${path}: ${message}.`, {
    ...(reason ? { reason } : {}),
    fields: [{ path, location: 'body', type, message }],
  });
}

/**
 * The checks of a send that need nothing but the request and the clock: the from address,
 * the headers Herald sets itself, List-Unsubscribe, the schedule. Throws the first problem as
 * an invalid_request AppError; answers the parsed from, the headers and the schedule.
 */
export function checkSendRequest(input: SendEmailInput, at: Date) {
  const from = parseFromAddress(input.from);
  if (!from) throw invalidField('from', 'from_address', 'must be addr@host or "Display Name <addr@host>"', 'INVALID_FROM');
  const headers = input.headers ?? {};
  const reserved = reservedHeaderNames(headers);
  if (reserved.length > 0) {
    throw new AppError('invalid_request', `Header ${reserved[0]} is set by Herald and cannot be overridden.`, {
      fields: reserved.map((name) => ({
        path: `headers.${name}`,
        location: 'body',
        type: 'reserved_header',
        message: 'is set by Herald',
      })),
    });
  }
  const unsubscribe = listUnsubscribeProblems(headers);
  if (unsubscribe.length > 0) {
    throw new AppError('invalid_request', `Invalid body.headers.${unsubscribe[0]!.name}: ${unsubscribe[0]!.message}.`, {
      fields: unsubscribe.map((p) => ({ path: `headers.${p.name}`, location: 'body', type: 'list_unsubscribe', message: p.message })),
    });
  }
  const schedule = resolveSchedule(input.scheduled_at, at);
  if (!schedule.ok) throw invalidField('scheduled_at', schedule.problem, schedule.message);
  return { from, headers, schedule };
}
