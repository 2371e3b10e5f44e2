// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Node built-ins and libraries that must never reach deterministic workflow code. */
const WORKFLOW_FENCE = {
  patterns: [
    {
      regex: '^(?!@temporalio/workflow$|\\.{1,2}/).*',
      message:
        'workflows/ may import only @temporalio/workflow, its own files and (type-only) activities/.',
    },
    {
      group: ['../src/*', '../db/*', '../../*'],
      message: 'workflows/ may not import src/ or db/: pass ids and call activities instead.',
    },
  ],
};

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', '.build/', 'coverage/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-import-type-side-effects': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' },
      ],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', WORKFLOW_FENCE],
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../activities/*'],
              allowTypeImports: true,
              message: 'workflows/ may import only types from activities/.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['db/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../src/*', '../../src/*', '../workflows/*', '../activities/*', '../../workflows/*', '../../activities/*'], message: 'db/ is a leaf: it imports nothing from src/, workflows/ or activities/.' }] },
      ],
    },
  },
  {
    // Asymmetric matchers (expect.any, expect.stringMatching) are typed `any` by vitest.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  {
    // Config files and the global setup are loaded by tools that expect a default export.
    files: ['vitest.config.ts', 'eslint.config.js', 'test/global-setup.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false },
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
);
