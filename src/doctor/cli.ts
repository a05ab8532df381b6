#!/usr/bin/env node
/*
 * `npx nestjs-switchboard doctor <config.yaml|json> [--json] [--timeout <ms>]`: checks a
 * configuration against the real deployments before the first call. Exit 0 when every row
 * answered, 1 when any failed, 2 when the command or the configuration is wrong.
 */
import { runDoctorCli } from './run';

// Run as the package's `bin` (this module is imported by nothing else).
// Exits once the output is written: a socket an upstream holds open must not keep it running.
runDoctorCli(process.argv.slice(2)).then(
  (status) => {
    process.stdout.write('', () => process.exit(status));
  },
  (error: unknown) => {
    process.stderr.write(
      `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 2;
  },
);
