/** A mistake in how pu was invoked: reported on one line and exit code 2. */
export class CliUsageError extends Error {
  override name = "CliUsageError";
}
