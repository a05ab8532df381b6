#!/usr/bin/env node
/*
 * `npx nestjs-switchboard doctor <config.yaml|json> [--json] [--timeout <ms>]`: checks a
 * configuration against the real deployments before the first call. Exit 0 when every row
 * answered, 1 when any failed, 2 when the command or the configuration is wrong.
 *
 * `npx nestjs-switchboard plan <traffic.jsonl> --config <file> [--scale N] [--find-tpm] [--json]
 * [--html <file>]`: replays recorded traffic against a configuration in virtual time.
 *
 * `npx nestjs-switchboard simulate <config.yaml|json>`: simulated deployments for a configuration,
 * and the environment that points it at them.
 */
import { runPlanCli } from '../planning/run-plan';
import { STDIO } from '../runtime/cli-output';
import { runDoctorCli } from './run';
import { runSimulateCli } from '../simulate/run-simulate';

const args = process.argv.slice(2);
// Run as the package's `bin` (this module is imported by nothing else).
// Exits once the output is written: a socket an upstream holds open must not keep it running.
(args[0] === 'plan'
  ? runPlanCli(args, STDIO)
  : args[0] === 'simulate'
    ? runSimulateCli(args, STDIO)
    : runDoctorCli(args)
).then(
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
