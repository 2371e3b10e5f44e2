import * as v from 'valibot';
import { AppError } from './errors.ts';

export type InputLocation = 'body' | 'query' | 'path' | 'header';

export interface FieldProblem {
  /** Dot path of the field inside its location (`to.3`, `attachments.0.content`); '' for the whole. */
  path: string;
  location: InputLocation;
  /** valibot's issue type: `email`, `max_length`, `strict_object` (unknown field), … */
  type: string;
  message: string;
}

type AnySchema = v.GenericSchema | v.GenericSchemaAsync;

/** Every failing field of a valibot result, in a stable, client-facing shape. */
export function fieldProblems(issues: readonly v.BaseIssue<unknown>[], location: InputLocation): FieldProblem[] {
  return issues.map((issue) => {
    const path = v.getDotPath(issue) ?? '';
    const unknownField = issue.type === 'strict_object' && issue.expected === 'never';
    return {
      path,
      location,
      type: unknownField ? 'unknown_field' : issue.type,
      message: unknownField ? 'unknown field' : issue.message,
    };
  });
}

/**
 * Parses one part of a request with its schema, or throws 400 invalid_request with
 * `details.fields` listing every failing field (all issues, not only the first).
 */
export async function parseInput<TSchema extends AnySchema>(
  schema: TSchema,
  value: unknown,
  location: InputLocation,
  reasonOf?: (fields: FieldProblem[]) => string | undefined,
): Promise<v.InferOutput<TSchema>> {
  const result = await v.safeParseAsync(schema, value, { abortEarly: false, abortPipeEarly: false });
  if (result.success) return result.output;
  const fields = fieldProblems(result.issues, location);
  const first = fields[0];
  const where = first?.path ? `${first.location}.${first.path}` : (first?.location ?? location);
  const more = fields.length > 1 ? ` (and ${fields.length - 1} more)` : '';
  const reason = reasonOf?.(fields);
  throw new AppError(
    'invalid_request',
    `Invalid ${where}: ${first?.message ?? 'invalid'}${more}.`,
    reason ? { reason, fields } : { fields },
  );
}
