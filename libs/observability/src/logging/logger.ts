import type { LoggerService, LogLevel as NestLogLevel } from '@nestjs/common';
import { isSpanContextValid, trace } from '@opentelemetry/api';
import type { LogLevel as TemporalLogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import { pino, type Level, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { currentLogContext } from './log-context.js';
import { redactSecret } from './redact.js';

/** Field paths whose values never reach a log line, whatever logs them (pino redaction). */
export const REDACTED_PATHS = [
  'apiKey',
  'api_key',
  'authorization',
  'password',
  'secret',
  'token',
  'masterKey',
  'key',
  '*.apiKey',
  '*.api_key',
  '*.authorization',
  '*.Authorization',
  '*.password',
  '*.secret',
  '*.token',
  '*.key',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.cookie',
];

export interface LoggerOptions {
  /** The app's name, on every line (`app`). */
  readonly app: string;
  /** `json` or `pretty`; undefined: pretty when stdout is a terminal, JSON otherwise. */
  readonly format?: 'json' | 'pretty';
  readonly level?: Level;
  /** Where lines go (tests); stdout by default. */
  readonly destination?: NodeJS.WritableStream;
}

/** The ids of the span this line is written in, when a tracer is installed (a no-op otherwise). */
function traceFields(): { trace_id?: string; span_id?: string } {
  const context = trace.getActiveSpan()?.spanContext();
  return context && isSpanContextValid(context) ? { trace_id: context.traceId, span_id: context.spanId } : {};
}

/**
 * The app's root logger: one line an event, JSON (or pino-pretty in a terminal), carrying the
 * current log context (`request_id`, `project_id`, `workflow_id`) and `trace_id`; secret-named
 * fields are redacted and strings are passed through redactSecret (keys shaped like `sk-…`).
 */
export function createLogger(options: LoggerOptions): Logger {
  const format = options.format ?? (process.stdout.isTTY ? 'pretty' : 'json');
  const destination =
    options.destination ??
    (format === 'pretty'
      ? pretty({
          colorize: true,
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname,app,context',
          singleLine: true,
          messageFormat: '{if context}[{context}] {end}{msg}',
          sync: true,
        })
      : pino.destination({ dest: 1, sync: true }));
  return pino(
    {
      level: options.level ?? 'info',
      base: { app: options.app, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => ({ ...currentLogContext(), ...traceFields() }),
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      hooks: {
        logMethod(args, method) {
          method.apply(
            this,
            args.map((a) => (typeof a === 'string' ? redactSecret(a, undefined) : a)) as Parameters<typeof method>,
          );
        },
      },
    },
    destination,
  );
}

const NEST_TO_PINO: Record<NestLogLevel, Level> = {
  verbose: 'trace',
  debug: 'debug',
  log: 'info',
  warn: 'warn',
  error: 'error',
  fatal: 'fatal',
};
const PINO_ORDER: Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/** Nest's LoggerService over pino (nestjs-pino does not support Nest 12): `new Logger('outbox')`
 * everywhere in the code writes through it once an app is created with it. */
export class NestPinoLogger implements LoggerService {
  constructor(readonly pino: Logger) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('trace', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    // Nest passes (message, stack?, context?); a Logger with a context passes stack undefined.
    const context =
      rest.length > 0 && typeof rest[rest.length - 1] === 'string' && !isStack(rest[rest.length - 1])
        ? (rest.pop() as string)
        : undefined;
    const stack = rest.find(isStack);
    this.emit('error', message, context, stack as string | undefined);
  }

  /** Nest's log levels (e.g. tests' ['warn', 'error', 'fatal']): the lowest one becomes pino's level. */
  setLogLevels(levels: NestLogLevel[]): void {
    const lowest = levels.map((l) => NEST_TO_PINO[l]).sort((a, b) => PINO_ORDER.indexOf(a) - PINO_ORDER.indexOf(b))[0];
    this.pino.level = lowest ?? 'silent';
  }

  private write(level: Level, message: unknown, rest: unknown[]): void {
    const context = typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
    this.emit(level, message, context);
  }

  private emit(level: Level, message: unknown, context: string | undefined, stack?: string): void {
    const fields: Record<string, unknown> = context ? { context } : {};
    if (message instanceof Error) this.pino[level]({ ...fields, err: message }, message.message);
    else if (typeof message === 'object' && message !== null) this.pino[level]({ ...fields, ...message });
    else this.pino[level]({ ...fields, ...(stack ? { stack } : {}) }, String(message));
  }
}

function isStack(value: unknown): boolean {
  return typeof value === 'string' && /\n\s+at /.test(value);
}

const TEMPORAL_TO_PINO: Record<TemporalLogLevel, Level> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** Temporal's runtime logger (the SDK's and core's messages, workflows' `log`, activities'
 * `log`) over pino, with the workflow id as `workflow_id`. */
export function temporalLogger(logger: Logger): TemporalLogger {
  const log = (level: TemporalLogLevel, message: string, meta?: LogMetadata): void => {
    const { workflowId, error, ...rest } = (meta ?? {}) as LogMetadata & { workflowId?: unknown; error?: unknown };
    // `err` is the key pino serialises an Error under (message, type, stack); `error` would print {}.
    const err = error === undefined ? {} : { err: error };
    logger[TEMPORAL_TO_PINO[level]](
      { context: 'temporal', ...(typeof workflowId === 'string' ? { workflow_id: workflowId } : {}), ...rest, ...err },
      message,
    );
  };
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}
