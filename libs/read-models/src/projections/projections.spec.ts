import { PROJECTION_NAMES } from '#libs/contracts';
import { PROJECTIONS } from './index.js';

describe('PROJECTION_NAMES', () => {
  it('names every projection, in order', () => {
    expect(PROJECTIONS.map((p) => p.name)).toEqual([...PROJECTION_NAMES]);
  });
});
