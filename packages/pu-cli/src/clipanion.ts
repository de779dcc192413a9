// The one place the CLI imports clipanion. bin/pu runs the esbuild bundle (build.mjs), where
// this resolves to clipanion's ES modules and only the parts pu uses are kept.
export { Builtins, Cli, Command, Option } from "clipanion";
export type { CommandClass, Definition } from "clipanion";
