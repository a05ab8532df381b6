import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/**
 * The largest configuration file read: far above any real one (a thousand deployments of ten
 * models each stay under a megabyte), far below what would stall start-up or exhaust memory.
 */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;

/**
 * Opens `path` for reading and returns its descriptor and size, or throws (the descriptor closed)
 * when it is not a regular file: `/dev/zero`, a FIFO, a socket or a directory is refused before a
 * byte of it is read. The open does not wait for a FIFO's writer (`O_NONBLOCK`), and the check is
 * made on the descriptor opened, so the file checked is the file read. The error's message
 * starts with why (the caller puts its own context in front).
 *
 * @example
 * ```ts
 * const { fd, size } = openRegularFile('traffic.jsonl');
 * ```
 */
export function openRegularFile(path: string): { fd: number; size: number } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) {
      throw new Error('not a regular file (a device, FIFO or directory is never read)');
    }
    return { fd, size: stat.size };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * The text of the regular file at `path`, refused before any byte of it is read when it is not a
 * regular file (see {@link openRegularFile}) or larger than `maxBytes`; the read itself stops at
 * `maxBytes + 1`, so a file that grows after the check is refused too. Throws an `Error` whose
 * message starts with why (the caller puts its own context in front).
 *
 * @example
 * ```ts
 * const text = readBoundedFile('switchboard.yaml', MAX_CONFIG_FILE_BYTES);
 * ```
 */
export function readBoundedFile(path: string, maxBytes: number): string {
  const { fd, size } = openRegularFile(path);
  try {
    if (size > maxBytes) throw tooLarge(size, maxBytes);
    const buffer = Buffer.allocUnsafe(Math.min(size, maxBytes) + 1);
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

/** How much of a file {@link forEachLine} holds at once, besides one line. */
const CHUNK_BYTES = 1024 * 1024;

/**
 * Calls `line(text, number)` for each line of the open file `fd` (1-based numbers, without the
 * line break; a last line without one included), reading it a chunk at a time: memory stays one
 * chunk and one line whatever the file's size. A line longer than `maxLineBytes` stops the
 * reading with `tooLong(number)`'s error, before more of it is held.
 *
 * @example
 * ```ts
 * forEachLine(fd, 16_384, (text, n) => rows.push(text), (n) => new Error(`line ${n} is too long`));
 * ```
 */
export function forEachLine(
  fd: number,
  maxLineBytes: number,
  line: (text: string, number: number) => void,
  tooLong: (number: number) => Error,
): void {
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  // The start of a line a chunk ended inside: at most maxLineBytes.
  let carry = Buffer.alloc(0);
  let number = 0;
  for (;;) {
    const n = readSync(fd, chunk, 0, CHUNK_BYTES, null);
    if (n === 0) break;
    let start = 0;
    for (
      let end = chunk.indexOf(0x0a, 0);
      end !== -1 && end < n;
      end = chunk.indexOf(0x0a, start)
    ) {
      number++;
      if (carry.length + end - start > maxLineBytes) throw tooLong(number);
      const text =
        carry.length === 0
          ? chunk.toString('utf8', start, end)
          : Buffer.concat([carry, chunk.subarray(start, end)]).toString('utf8');
      carry = Buffer.alloc(0);
      start = end + 1;
      line(text, number);
    }
    if (carry.length + n - start > maxLineBytes) throw tooLong(number + 1);
    carry = Buffer.concat([carry, chunk.subarray(start, n)]);
  }
  if (carry.length > 0) line(carry.toString('utf8'), number + 1);
}
