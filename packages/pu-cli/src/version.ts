// Kept in step with package.json by hand: reading package.json would cost a file read on every run.
export const CLI_VERSION = "0.1.0";
