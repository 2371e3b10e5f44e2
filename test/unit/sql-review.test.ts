import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { tenantTableNames } from '../../db/orm.ts';

/**
 * Review of Herald's SQL (issue 18): MikroORM's tenant filter guards entity queries and
 * db/workspace-db.ts's `workspaceDb` guards Kysely queries (Kysely is opened nowhere else), but
 * SQL text is outside both, so every SQL text in src/, activities/ and db/ (migrations aside)
 * that touches a workspace's table must name `org_id`, or say in a SQL comment why it need not:
 * `/* workspace: <why> *\/` (the row was reached through a scoped read, e.g. by an id a
 * scoped statement returned) or `/* all workspaces: <why> *\/` (platform work: the outbox
 * relay, reconcilers, metrics). A statement composed from conditions built elsewhere carries
 * the marker where it is assembled. A marker holds no `?` and no `:name` (they would be taken
 * for parameters).
 */

const ROOTS = ['src', 'activities', 'db'];
const KYSELY_HOME = join('db', 'workspace-db.ts');
const STATEMENT = /\b(select\s[\s\S]*\bfrom|insert\s+into|update\s+"?\w+"?\s[\s\S]*\bset\b|delete\s+from)\b/i;
const TABLE_REFERENCE = /\b(?:from|join|into|update)\s+"?([a-z_]+)"?/gi;
const MARKER = /\/\*\s*(workspace|all workspaces):\s*\S[^*]*\*\//i;

interface SqlFinding {
  file: string;
  line: number;
  tables: string[];
  sql: string;
}

/** The SQL texts of one source file that touch `tenantTables` without org_id or a marker. */
function reviewSql(file: string, source: string, tenantTables: ReadonlySet<string>): SqlFinding[] {
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const findings: SqlFinding[] = [];
  const visit = (node: ts.Node): void => {
    // Kysely reaches tables only through db/workspace-db.ts (workspaceDb adds the workspace, allWorkspacesDb says why not).
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === 'getKysely' &&
      !file.endsWith(KYSELY_HOME)
    ) {
      findings.push({
        file,
        line: tree.getLineAndCharacterOfPosition(node.getStart(tree)).line + 1,
        tables: [],
        sql: node.getText(tree).replace(/\s+/g, ' ').slice(0, 120),
      });
    }
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      const text = node.getText(tree);
      if (STATEMENT.test(text)) {
        const tables = [...new Set([...text.matchAll(TABLE_REFERENCE)].map((m) => m[1]!.toLowerCase()).filter((t) => tenantTables.has(t)))];
        // A marker holding `?` or `:name` would be read as a parameter by MikroORM or db/prepared.ts.
        const marker = MARKER.exec(text)?.[0];
        const unsafeMarker = marker !== undefined && /\?|:\w/.test(marker);
        if (unsafeMarker || (tables.length > 0 && !/\borg_id\b/.test(text) && !marker)) {
          findings.push({
            file,
            line: tree.getLineAndCharacterOfPosition(node.getStart(tree)).line + 1,
            tables,
            sql: text.replace(/\s+/g, ' ').slice(0, 120),
          });
        }
        return;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(tree);
  return findings;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'migrations' ? [] : sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

describe('raw SQL review', () => {
  const tenantTables = new Set(tenantTableNames());

  it('knows the workspace tables from the entities', () => {
    expect(tenantTables.has('contacts')).toBe(true);
    expect(tenantTables.has('transactional_emails')).toBe(true);
    expect(tenantTables.has('organizations')).toBe(false);
  });

  it('fails a statement on a workspace table that names no workspace, or Kysely opened without the workspace helper, and passes the scoped and the explained ones', () => {
    const source = [
      "db.execute('select id, email from contacts where id = ?', [id]);",
      "db.execute('select id from contacts where org_id = ? and id = ?', [orgId, id]);",
      "db.execute('update segments /* workspace: the segment was locked by a scoped read */ set updated_at = now() where id = ?', [id]);",
      'db.execute(`select count(*) from webhook_deliveries /* all workspaces: queue depth for metrics */`);',
      "db.execute('select now()');",
      "db.execute('select id from contacts /* workspace: org_id = ? comes first */ where ' + where, params);",
      "em.getKysely().selectFrom('contacts').selectAll().execute();",
      "workspaceDb(em, orgId).selectFrom('contacts').selectAll().execute();",
    ].join('\n');
    expect(reviewSql('fixture.ts', source, tenantTables)).toEqual([
      { file: 'fixture.ts', line: 1, tables: ['contacts'], sql: "'select id, email from contacts where id = ?'" },
      {
        file: 'fixture.ts',
        line: 6,
        tables: ['contacts'],
        sql: "'select id from contacts /* workspace: org_id = ? comes first */ where '",
      },
      { file: 'fixture.ts', line: 7, tables: [], sql: 'em.getKysely()' },
    ]);
  });

  it('finds every raw statement of src/, activities/ and db/ scoped or explained, and Kysely opened only by db/workspace-db.ts', () => {
    const root = join(import.meta.dirname, '..', '..');
    const findings = ROOTS.flatMap((dir) => sourceFiles(join(root, dir))).flatMap((path) =>
      reviewSql(relative(root, path), readFileSync(path, 'utf8'), tenantTables),
    );
    expect(findings.map((f) => `${f.file}:${f.line} [${f.tables.join(', ')}] ${f.sql}`)).toEqual([]);
  });
});
