// An argv for a command that runs on a host through a transport whose far end is a shell
// (OpenSSH joins its arguments with spaces and hands them to the remote user's shell). pu quotes
// every argument itself, so no name, branch, prompt or environment value can become shell syntax.

/** One POSIX shell word with exactly this text: single quotes, and each ' as '\''. */
function shellWord(arg: string): string {
  if (arg.includes("\0")) throw new Error("an argument for a remote command cannot hold a NUL byte");
  return /^[A-Za-z0-9_./=:@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`;
}

/** The command line a remote POSIX shell reads back as exactly `argv`. */
export function remoteCommandLine(argv: readonly string[]): string {
  if (argv.length === 0) throw new Error("a remote command needs at least a program");
  return argv.map(shellWord).join(" ");
}
