/** A request the CLI itself refuses (exit 1 with its message), before any service is loaded: a
 * secret's variable that is not set, a number that is not one, an unknown projection. The
 * services' own refusals are AccountsError. */
export class CliRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliRefusal';
  }
}
