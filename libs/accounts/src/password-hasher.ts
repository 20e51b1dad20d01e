/** Hashes and checks console passwords; the one implementation is argon2id (Argon2idHasher). */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hash: string, password: string): Promise<boolean>;
}

/** The part of @node-rs/argon2 this uses. */
interface Argon2Binding {
  hash(
    password: string,
    options: { algorithm: number; memoryCost: number; timeCost: number; parallelism: number },
  ): Promise<string>;
  verify(hashed: string, password: string): Promise<boolean>;
}

/** @node-rs/argon2's `Algorithm.Argon2id` (a const enum in its types). */
const ARGON2ID = 2;

/** OWASP's password storage cheat sheet: argon2id, 19 MiB, 2 iterations, 1 lane. */
export const ARGON2ID_PARAMETERS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

// The specifier as a value, so the type check does not need the package's own declarations.
const ARGON2_PACKAGE = '@node-rs/argon2';
let binding: Promise<Argon2Binding> | undefined;

function argon2(): Promise<Argon2Binding> {
  binding ??= (import(ARGON2_PACKAGE) as Promise<Partial<Argon2Binding> & { default?: Argon2Binding }>).then(
    (m) => (typeof m.hash === 'function' ? (m as Argon2Binding) : m.default!),
    (e: unknown) => {
      binding = undefined;
      throw new Error(
        `${ARGON2_PACKAGE} is not installed (npm install): the console hashes passwords with argon2id (${e instanceof Error ? e.message : String(e)})`,
      );
    },
  );
  return binding;
}

/** argon2id through @node-rs/argon2 (prebuilt native binaries, maintained by the napi-rs project). */
export class Argon2idHasher implements PasswordHasher {
  async hash(password: string): Promise<string> {
    const hashed = await (await argon2()).hash(password, { algorithm: ARGON2ID, ...ARGON2ID_PARAMETERS });
    if (!hashed.startsWith('$argon2id$')) throw new Error('the password hash is not argon2id');
    return hashed;
  }

  async verify(hash: string, password: string): Promise<boolean> {
    if (!hash.startsWith('$argon2id$')) return false;
    return (await argon2()).verify(hash, password);
  }
}
