import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/**
 * The largest configuration file read: far above any real one (a thousand deployments of ten
 * models each stay under a megabyte), far below what would stall start-up or exhaust memory.
 */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;

/**
 * The text of the regular file at `path`, refused before any byte of it is read when it is not a
 * regular file (`/dev/zero`, a FIFO, a directory) or larger than `maxBytes`; the read itself
 * stops at `maxBytes + 1`, so a file that grows after the check is refused too. Throws an `Error`
 * whose message starts with why (the caller puts its own context in front).
 *
 * @example
 * ```ts
 * const text = readBoundedFile('switchboard.yaml', MAX_CONFIG_FILE_BYTES);
 * ```
 */
export function readBoundedFile(path: string, maxBytes: number): string {
  const fd = openSync(path, 'r');
  try {
    // fstat on the descriptor opened: the file checked is the file read.
    const stat = fstatSync(fd);
    if (!stat.isFile()) {
      throw new Error('not a regular file (a device, FIFO or directory is never read)');
    }
    if (stat.size > maxBytes) throw tooLarge(stat.size, maxBytes);
    const buffer = Buffer.allocUnsafe(Math.min(stat.size, maxBytes) + 1);
    let length = 0;
    // One byte more than the file had: reading it means the file grew after the check.
    for (let n = 1; n > 0 && length < buffer.length; length += n) {
      n = readSync(fd, buffer, length, buffer.length - length, null);
    }
    if (length === buffer.length) {
      throw length > maxBytes
        ? tooLarge(length, maxBytes, 'grew to at least')
        : new Error('the file changed while it was read');
    }
    return buffer.toString('utf8', 0, length);
  } finally {
    closeSync(fd);
  }
}

function tooLarge(size: number, maxBytes: number, is = 'is'): Error {
  return new Error(`the file ${is} ${size} bytes, more than the ${maxBytes} read at most`);
}
