import type { Socket } from 'node:net';
import { json, raw, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ServiceError } from '#libs/contracts';
import type { AuthenticatedRequest } from './auth/api-key.middleware.js';
import type { OperatorRequest } from './codec/codec-access.js';
import type { JsonThread } from './json-off-thread.js';

/**
 * The largest body each kind of request may have, in bytes: the one place where body limits are
 * decided (DESIGN.md sections 7 and 10). The limit is chosen after authentication and before a
 * byte of the body is read, so no body over 64 KB is read for a caller nobody has identified.
 */
export const BODY_LIMITS = {
  /** A `/v1` request with a valid API key (contract: 10 MB, else 413 payload_too_large). */
  customer: 10 * 1024 * 1024,
  /** The codec endpoint with the operator token: a Temporal payload list (2 MB payloads, base64). */
  operator: 10 * 1024 * 1024,
  /** Everything nobody has authenticated: health, docs, OpenAPI, unknown routes, a codec call
   * without its token. None of these routes takes a body; 64 KB is the most read before 404/401. */
  anonymous: 64 * 1024,
} as const;

export type BodyLimitKind = keyof typeof BODY_LIMITS;

/** Which limit applies to `req`, from what the authentication steps before it established. */
export function bodyLimitKind(req: Request): BodyLimitKind {
  if ((req as AuthenticatedRequest).principal) return 'customer';
  if ((req as OperatorRequest).operator) return 'operator';
  return 'anonymous';
}

/** `10 MB`, `64 KB`: a limit as the error messages and the docs write it. */
export function formatBytes(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}

/** 413 payload_too_large for a body over `limit` bytes. */
export function payloadTooLarge(limit: number): ServiceError {
  return new ServiceError(
    'payload_too_large',
    `The request body is larger than ${formatBytes(limit)}, the limit for this request.`,
  );
}

/** A body longer than this (by its Content-Length) is parsed and hashed off the event loop
 * (JsonThread): the noisy-neighbour phase's PDFs (800 KB of base64) were parsed and hashed on it
 * under the 1 MB this was first; a thread's hop costs the request under a millisecond. */
export const PARSE_OFF_THREAD_BYTES = 256 * 1024;

/**
 * The JSON body parser, with the limit of the request's kind. Any content type is read as JSON: a
 * client that forgets the header still gets a contract error for a bad body, not a silent empty
 * one. A body whose Content-Length is over the limit is answered 413 payload_too_large at once,
 * unread (body-parser would wait for all of it to arrive before answering; Node discards the rest
 * as it does after a 401); a chunked one is refused once it passes the limit, nothing more of it
 * kept. An authenticated body over PARSE_OFF_THREAD_BYTES in UTF-8 is read as bytes and parsed on
 * `thread`, where its files' long contents stay until stored (HeldText): a tenant's 8 MB upload
 * then costs its own request the parse, not every other request on this api the wait (issue 28).
 * Errors are body-parser's either way (same `type`).
 */
export function bodyParser(thread: JsonThread): RequestHandler {
  const parser = (kind: BodyLimitKind) => json({ limit: BODY_LIMITS[kind], type: () => true, strict: false });
  const parsers: Record<BodyLimitKind, ReturnType<typeof json>> = {
    customer: parser('customer'),
    operator: parser('operator'),
    anonymous: parser('anonymous'),
  };
  const bytes = (kind: BodyLimitKind) => raw({ limit: BODY_LIMITS[kind], type: () => true });
  const readers: Record<Exclude<BodyLimitKind, 'anonymous'>, ReturnType<typeof raw>> = {
    customer: bytes('customer'),
    operator: bytes('operator'),
  };
  return (req: Request, res: Response, next: NextFunction) => {
    const kind = bodyLimitKind(req);
    const length = Number(req.headers['content-length']);
    if (length > BODY_LIMITS[kind]) return next(payloadTooLarge(BODY_LIMITS[kind]));
    if (kind === 'anonymous' || !(length > PARSE_OFF_THREAD_BYTES) || !isUtf8(req))
      return parsers[kind](req, res, next);
    // The Idempotency-Key's hash with the parse, when the request has one (bodyHash).
    const hash = req.headers['idempotency-key'] !== undefined;
    const parsed = (value: unknown) => {
      req.body = value;
      // What the thread holds of the body (its files' long contents) is let go of once the
      // request is answered, or its client has gone: stored by then, or never to be.
      if (thread.held(value).length > 0) {
        if (res.closed) thread.release(value);
        else res.once('close', () => thread.release(value));
      }
      next();
    };
    const failed = (e: Error) =>
      next(e instanceof SyntaxError ? Object.assign(e, { status: 400, type: 'entity.parse.failed' }) : e);
    // A compressed body is inflated by body-parser's reader first; any other goes to the thread
    // chunk by chunk as it arrives.
    if (!isIdentity(req)) {
      return readers[kind](req, res, (error?: unknown) => {
        if (error) return next(error);
        if (!Buffer.isBuffer(req.body)) return next();
        thread.parse(req.body, { hash }).then(parsed, failed);
      });
    }
    thread.read(req, { hash }).then(parsed, failed);
  };
}

/** Whether the body comes as it is (no Content-Encoding, or identity). */
function isIdentity(req: Request): boolean {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  return encoding === 'identity';
}

/** Whether the body is UTF-8 (no charset given, or utf-8): what JsonThread decodes. */
function isUtf8(req: Request): boolean {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1];
  return charset === undefined || /^utf-?8$/i.test(charset);
}

/** How long a connection refused before its body was read stays open after the answer, its body
 * unread: ample for the client to read the answer even on a loaded machine (2 s was not: with the
 * test run's two cores at a load of 14, some node:http clients were reset before they had read
 * it), short enough that a flood of refused uploads holds few sockets (one descriptor each, no
 * buffer beyond the kernel's). */
export const REFUSED_LINGER_MS = 10_000;

/**
 * For an answer sent before the request's body was read (a refusal: 401, 405, 413, 429 and the
 * like): the connection closes after it. Kept alive, Node would read the rest of the body and
 * throw it away, so an unauthenticated flood of large bodies would cost the api every byte of them
 * (issue 28). Call before the answer's headers go.
 *
 * Closed the way Node closes a `Connection: close` one (destroySoon: destroyed as soon as the answer
 * is written), the socket would be closed with the client's body still arriving, which makes the
 * kernel reset the connection: a client still writing its body then got EPIPE or ECONNRESET, not
 * the answer (issue 44). So the answer goes, then the api's half of the connection is closed (FIN),
 * nothing more of the body is read (the client's writes stall, they do not fail), and the socket
 * is destroyed REFUSED_LINGER_MS later, when the client has read the answer and stopped.
 */
export function closeIfBodyUnread(req: Request, res: Response): void {
  if (req.complete) return;
  res.setHeader('Connection', 'close');
  const socket = req.socket as Socket;
  // Once the answer is written, Node "dumps" a body nobody read: it resumes the request and reads
  // the rest off the wire to throw it away. That is the reading this function exists to avoid
  // (measured: ten refused 7 MB uploads read 39.5 MB and the drill's noisy 401 flood took a core
  // of the api, against 1.3 MB when the socket was destroyed at once).
  (req as unknown as { _dump: () => void })._dump = () => {};
  socket.destroySoon = () => {
    socket.pause();
    socket.end();
    setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
  };
}
