import { isDatabaseUnavailable } from './dependency-unavailable.js';

const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['a refused connection', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['a reset connection', withCode('read ECONNRESET', 'ECONNRESET')],
    ['an immediate shutdown (57P01)', withCode('terminating connection due to administrator command', '57P01')],
    ['a server starting up (57P03)', withCode('the database system is starting up', '57P03')],
    ['a connection exception (08006)', withCode('connection failure', '08006')],
    ['a dropped connection', new Error('Connection terminated unexpectedly')],
    ['a pool that could not connect in time', new Error('timeout exceeded when trying to connect')],
    [
      'TypeORM wrapping the driver error',
      Object.assign(new Error('query failed'), { driverError: withCode('x', '57P01') }),
    ],
    ['a cause chain', new Error('outer', { cause: withCode('inner', 'ECONNREFUSED') })],
    [
      'a dual-stack connect',
      new AggregateError([withCode('a', 'ECONNREFUSED'), withCode('b', 'ECONNREFUSED')], 'connect failed'),
    ],
  ])('is true for %s', (_, e) => {
    expect(isDatabaseUnavailable(e)).toBe(true);
  });

  it.each([
    ['a unique violation', withCode('duplicate key value', '23505')],
    ['a syntax error', withCode('syntax error at or near', '42601')],
    ['a serialisation failure', withCode('could not serialize access', '40001')],
    ['a plain bug', new TypeError('x is undefined')],
    ['a non-error', 'boom'],
  ])('is false for %s', (_, e) => {
    expect(isDatabaseUnavailable(e)).toBe(false);
  });
});
