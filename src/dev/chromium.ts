import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Where Debian's `chromium` package puts its launcher. */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';
const APT_GET = '/usr/bin/apt-get';

/** The browser's version line (`Chromium 1xx.… built on Debian …`), or undefined if it does not run. */
function version(binary: string): string | undefined {
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 20_000 });
  return probe.status === 0 && /chrom/i.test(probe.stdout) ? probe.stdout.trim() : undefined;
}

function apt(args: string[]): void {
  const result = spawnSync(APT_GET, args, {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) {
    throw new Error(`apt-get ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`}); see the output above`);
  }
}

/**
 * Finds the Chromium the browser tests drive (through playwright-core, which downloads no
 * browser): CHROMIUM_BIN, then Debian's /usr/bin/chromium; else, as root, installs Debian's
 * `chromium` package with apt-get (a minute or two, once per machine). Otherwise says what to install.
 */
export function resolveChromium(options: { explicit?: string | undefined; log: (line: string) => void }): string {
  if (options.explicit) {
    if (!existsSync(options.explicit)) throw new Error(`CHROMIUM_BIN=${options.explicit} does not exist`);
    return options.explicit;
  }
  if (existsSync(DEBIAN_CHROMIUM)) return DEBIAN_CHROMIUM;

  const install = 'apt-get update && apt-get install -y --no-install-recommends chromium';
  if (process.getuid?.() !== 0 || !existsSync(APT_GET)) {
    throw new Error(
      'Chromium was not found for the browser tests.\n' +
        `  On Debian or Ubuntu install it: sudo sh -c '${install}' (or run the tests as root, Herald installs it then),\n` +
        '  or set CHROMIUM_BIN to a Chromium or Chrome executable.',
    );
  }
  options.log("installing Debian's chromium package for the browser tests (first run on this machine, a minute or two)...");
  const started = Date.now();
  apt(['update']);
  apt(['install', '-y', '--no-install-recommends', 'chromium']);
  const installed = existsSync(DEBIAN_CHROMIUM) ? version(DEBIAN_CHROMIUM) : undefined;
  if (!installed) throw new Error(`apt-get installed chromium but ${DEBIAN_CHROMIUM} does not run; see the output above`);
  options.log(`installed ${installed} in ${Math.round((Date.now() - started) / 1000)} s: ${DEBIAN_CHROMIUM}`);
  return DEBIAN_CHROMIUM;
}
