/**
 * The import rules of Herald's layers (CONTRIBUTING.md, "The layers"), checked by `npm test`
 * (step `architecture`): `npx depcruise src db workflows activities --config .dependency-cruiser.cjs`.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'An import cycle makes load order matter and couples parts that should not know each other; a cycle of type ' +
        'imports couples them as much. Contracts shared by layers live with their owner (a workflow file declares its input, ' +
        'id, signals and activities; activities/ and src/ import them), never in the implementation.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'modules-not-to-http',
      severity: 'error',
      comment:
        'Only the HTTP face of a module (*.routes.ts, *.schemas.ts, *.router.ts) uses src/http/. Services, repositories and ' +
        'pure functions raise AppError with data (src/errors.ts) and src/http/ turns it into a response.',
      from: { path: '^src/modules/', pathNot: '\\.(routes|schemas|router)\\.ts$' },
      to: { path: '^src/http/' },
    },
    {
      name: 'workflows-deterministic',
      severity: 'error',
      comment:
        'Workflow code runs in the deterministic sandbox and is bundled on its own: it imports other workflow files and ' +
        "Temporal's workflow packages only, types included: each workflow file declares the activities it calls.",
      from: { path: '^workflows/' },
      to: {
        pathNot: ['^workflows/', '@temporalio/(workflow|common)'],
      },
    },
    {
      name: 'db-not-to-src',
      severity: 'error',
      comment: 'db/ (entities, migrations, the ORM) sits under everything else.',
      from: { path: '^db/' },
      to: { path: '^(src|activities|workflows)/' },
    },
    {
      name: 'product-not-to-tests',
      severity: 'error',
      comment: 'Nothing that ships imports the tests or the benchmarks.',
      from: { path: '^(src|db|workflows|activities)/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'activities-only-from-the-worker',
      severity: 'error',
      comment: 'Activities are registered by the worker; the API and the modules call services, not activities.',
      from: { path: '^src/', pathNot: '^src/(worker|cli/main)\\.ts$' },
      to: { path: '^activities/', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(node_modules|db/migrations/\\.snapshot)' },
  },
};
