/**
 * The doctor's token source cannot be set up (a `--token` module that does not load or exports no
 * function, `--entra` without `@azure/identity`): a problem the user fixes, said in one line.
 *
 * @example
 * ```ts
 * throw new CredentialSetupError('--entra needs @azure/identity: npm install @azure/identity');
 * ```
 */
export class CredentialSetupError extends Error {
  override readonly name = 'CredentialSetupError';
}
