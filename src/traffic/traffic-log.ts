import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { SwitchboardLogger } from '../types';

/** Bytes held in memory at most while the disk is slower than the calls: beyond, lines drop. */
const TRAFFIC_BUFFER_BYTES = 4 * 1024 * 1024;
/** How often (ms) buffered lines are written, unless a write of {@link FLUSH_BYTES} comes first. */
const FLUSH_INTERVAL = 1_000;
const FLUSH_BYTES = 64 * 1024;

/**
 * An append-only JSONL file written off the call path: lines are buffered in memory and appended
 * in one write per second (or per 64 KiB), one write at a time. The buffer is bounded: while the
 * disk cannot keep up, further lines are dropped and one warning says so (and one more how many,
 * when writing catches up). Each write opens the file anew, so a log rotator may move it away at
 * any time; the next write starts a new file, readable by its owner only (0600). Anything but a
 * regular file (a FIFO, a device) is never written. A failed write is logged once and its lines lost;
 * the calls never see it.
 *
 * @example
 * ```ts
 * const log = new TrafficLog('traffic.jsonl', logger);
 * log.write('{"t":1767225600000,"model":"gpt-4o-mini",...}');
 * await log.close(); // everything buffered is on disk
 * ```
 */
export class TrafficLog {
  private lines: string[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private dropped = 0;
  private failed = false;
  private closed = false;

  constructor(
    readonly path: string,
    private readonly logger: SwitchboardLogger,
    private readonly maxBytes = TRAFFIC_BUFFER_BYTES,
  ) {}

  /** Buffers one line (without its newline); dropped when the buffer is full or the log closed. */
  write(line: string): void {
    if (this.closed) return;
    if (this.bytes + line.length + 1 > this.maxBytes) {
      if (this.dropped++ === 0) {
        this.logger.warn(
          `recordTraffic: ${this.path} cannot keep up with the calls; lines are dropped until it does`,
        );
      }
      return;
    }
    this.lines.push(line);
    this.bytes += line.length + 1;
    if (this.bytes >= FLUSH_BYTES) this.flush();
    else if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), FLUSH_INTERVAL);
      this.timer.unref();
    }
  }

  /** Writes what is buffered (after the write under way, if any). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.writing !== undefined || this.lines.length === 0) return this.writing ?? done;
    const text = this.lines.join('\n') + '\n';
    const bytes = this.bytes;
    this.lines = [];
    this.writing = appendTo(this.path, text).then(
      () => {
        this.failed = false;
        this.wrote(bytes);
      },
      (error: unknown) => {
        if (!this.failed) {
          this.failed = true;
          this.logger.error(
            `recordTraffic: cannot write ${this.path} (${error instanceof Error ? error.message : String(error)}); its lines are lost until a write succeeds`,
          );
        }
        this.wrote(bytes);
      },
    );
    return this.writing;
  }

  /** Writes everything buffered; later lines are ignored. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.writing !== undefined || this.lines.length > 0) await this.flush();
  }

  private wrote(bytes: number): void {
    this.bytes -= bytes;
    this.writing = undefined;
    if (this.dropped > 0 && this.bytes === 0) {
      this.logger.warn(`recordTraffic: ${this.dropped} lines were dropped from ${this.path}`);
      this.dropped = 0;
    }
    if (this.lines.length > 0 && (this.closed || this.bytes >= FLUSH_BYTES)) void this.flush();
    else if (this.lines.length > 0 && this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), FLUSH_INTERVAL);
      this.timer.unref();
    }
  }
}

const done: Promise<void> = Promise.resolve();

/**
 * Appends `text` to the regular file at `path`, created readable by its owner only (it names
 * tenants). Never waits on a FIFO (`O_NONBLOCK`: without a reader the open fails at once) and
 * writes into nothing but a regular file.
 */
async function appendTo(path: string, text: string): Promise<void> {
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK;
  const file = await open(path, flags, 0o600);
  try {
    if (!(await file.stat()).isFile()) {
      throw new Error('not a regular file (a device, FIFO or directory is never written)');
    }
    await file.writeFile(text, 'utf8');
  } finally {
    await file.close();
  }
}
